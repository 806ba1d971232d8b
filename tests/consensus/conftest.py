"""Fixtures for the consensus integration tests: a concept, candidate images and a pool of workers."""

from __future__ import annotations

import hashlib

import pytest

from annotation.models import Image
from consensus.models import ConsensusSettings
from tests import factories


@pytest.fixture
def concept(db):
    return factories.ConceptFactory(wnid="n02123045", name="tabby cat", gloss="a cat with a striped coat")


def make_images(dataset, n: int) -> list[Image]:
    return Image.objects.bulk_create(
        Image(
            dataset=dataset,
            file=f"x/{dataset.pk}/{i}.png",
            width=64,
            height=48,
            sha256=hashlib.sha256(f"{dataset.pk}-{i}".encode()).hexdigest(),
            phash="0" * 16,
        )
        for i in range(n)
    )


def make_workers(n: int, prefix: str = "w"):
    return [factories.user_with_roles(f"{prefix}{i}", ("workers",)).worker for i in range(n)]


def small_settings(dataset, calibration_votes: int = 5, **kw) -> ConsensusSettings:
    """Consensus settings small enough for a test crowd: batches of 4 calibration questions, cap 8, dynamic,
    and the vote cap the last (no second cap: a test crowd has no most reliable half to ask on)."""
    defaults = dict(
        calibration_min=4,
        calibration_max=4,
        calibration_votes=calibration_votes,
        vote_cap=8,
        extension_cap=0,
        estimator="dynamic",
    )
    defaults.update(kw)
    return ConsensusSettings.objects.create(dataset=dataset, **defaults)
