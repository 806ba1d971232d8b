"""A small labelled dataset in the database: concepts under a parent, images (some near-duplicates), accepted,
removed and rejected boxes, and finished yes/no votes; the overlap scan has passed the boxes and the final labels
are built from these facts (exports read only final labels)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Box, BoxState, TaskState
from hierarchy.models import Concept, ConceptEdge
from tests import factories


@pytest.fixture
def labelled(dataset):
    animal = Concept.objects.create(wnid="n00015388", name="animal")
    dog = Concept.objects.create(wnid="n02084071", name="dog")
    cat = Concept.objects.create(wnid="n02121808", name="domestic cat")
    ConceptEdge.objects.create(parent=animal, child=dog)
    ConceptEdge.objects.create(parent=animal, child=cat)
    images = [
        factories.ImageFactory(
            dataset=dataset, width=200 + k, height=100 + k, source="web" if k % 4 else "flickr"
        )
        for k in range(36)
    ]
    # Near-duplicate chains: 1 -> 0, 2 -> 1; 5 -> 4.
    for child, parent in ((1, 0), (2, 1), (5, 4)):
        images[child].near_duplicate_of = images[parent]
        images[child].save(update_fields=["near_duplicate_of"])
    for k, image in enumerate(images):
        concept = dog if k % 2 else cat
        # Distinctive coordinates, so a leak of a test box into an export can be found by text search.
        Box.objects.create(
            image=image,
            concept=concept,
            x1=10.25 + k,
            y1=5.5,
            x2=60.75 + k,
            y2=70.125,
            state=BoxState.ACCEPTED,
        )
        if k % 5 == 0:
            Box.objects.create(
                image=image, concept=dog, x1=1.0, y1=1.0, x2=3.0, y2=3.0, state=BoxState.REMOVED
            )
            Box.objects.create(
                image=image, concept=cat, x1=2.0, y1=2.0, x2=4.0, y2=4.0, state=BoxState.REJECTED
            )
    # Votes: image 3 also shows a cat (yes), image 6 shows no dog (no), image 7's cat vote was cancelled (no
    # label; an open vote would keep the image out of exports: tests/benchmark/test_export_completeness.py).
    factories.TaskFactory(
        image=images[3],
        dataset=dataset,
        concept=cat,
        state=TaskState.DONE,
        result={"answer": True, "yes": 2, "no": 1},
    )
    factories.TaskFactory(
        image=images[6],
        dataset=dataset,
        concept=dog,
        state=TaskState.DONE,
        result={"answer": False, "yes": 0, "no": 3},
    )
    factories.TaskFactory(image=images[7], dataset=dataset, concept=cat, state=TaskState.CANCELLED)
    finalize(dataset)
    return {"dataset": dataset, "images": images, "dog": dog, "cat": cat, "animal": animal}


def finalize(dataset) -> None:
    """What the platform does before an export: the overlap scan lets the settled boxes through the review gate
    (here an hour later, so every box has settled) and the final labels hold every decision."""
    from benchmark.final_labels import final_labels_rebuild
    from review.scan import overlaps_scan

    overlaps_scan(dataset, now=timezone.now() + timedelta(hours=1))
    final_labels_rebuild(dataset)
