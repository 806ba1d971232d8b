"""A dataset with two images and two classes, and predictions files about them."""

from __future__ import annotations

import json

import pytest

from tests import factories


@pytest.fixture
def scene(dataset):
    dog = factories.ConceptFactory(wnid="n02084071", name="dog")
    cat = factories.ConceptFactory(wnid="n02121808", name="domestic cat")
    dataset.concepts.add(dog, cat)
    first = factories.ImageFactory(dataset=dataset, original_name="first.jpg", width=640, height=480)
    second = factories.ImageFactory(dataset=dataset, original_name="second.jpg", width=320, height=240)
    return {"dataset": dataset, "dog": dog, "cat": cat, "first": first, "second": second}


def coco(scene, **row):
    return {
        "image_id": scene["first"].pk,
        "category_id": scene["dog"].pk,
        "bbox": [10, 20, 100, 50],
        "score": 0.8,
    } | row


def as_bytes(document) -> bytes:
    return json.dumps(document).encode()
