"""Fixtures for gold tests: a concept with a ready calibration table, production questions, gold items."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from annotation.models import Image
from consensus import creation
from consensus.calibration import build_table
from consensus.models import CalibrationTable, ConsensusSettings, QuestionKind
from gold.items import GoldSpec, gold_items_create
from gold.models import GoldSettings
from tests import factories


@pytest.fixture
def concept(db):
    return factories.ConceptFactory(wnid="n02123045", name="tabby cat", gloss="a cat with a striped coat")


def make_images(dataset, n: int, start: int = 0) -> list[Image]:
    return Image.objects.bulk_create(
        Image(
            dataset=dataset,
            file=f"x/{dataset.pk}/{i}.png",
            width=64,
            height=48,
            sha256=hashlib.sha256(f"{dataset.pk}-{i}".encode()).hexdigest(),
            phash="0" * 16,
        )
        for i in range(start, start + n)
    )


def make_workers(n: int, prefix: str = "w"):
    return [factories.user_with_roles(f"{prefix}{i}", ("workers",)).worker for i in range(n)]


def install_table(concept, accuracy: float = 0.85, seed: int = 0) -> CalibrationTable:
    """A calibration table for (image_verify, concept) built from simulated votes of workers this accurate."""
    rng = np.random.default_rng(seed)
    sequences = []
    for i in range(200):
        truth = i % 2 == 0
        sequences.append([bool(truth == (rng.random() < accuracy)) for _ in range(10)])
    table = build_table(sequences, cap=15)
    return CalibrationTable.objects.create(
        kind=QuestionKind.IMAGE_VERIFY,
        concept=concept,
        table=table.to_dict(),
        n_images=table.n_images,
        n_votes=table.n_votes,
        method=table.method,
        last_vote_id=0,
    )


def production_questions(dataset, concept, images, vote_cap: int = 8, target_precision: float = 0.99):
    ConsensusSettings.objects.update_or_create(
        dataset=dataset,
        defaults={
            "vote_cap": vote_cap,
            "calibration_votes": 5,
            "target_precision": target_precision,
            "estimator": "dynamic",  # the installed table decides
        },
    )
    install_table(concept)
    return creation.questions_create(
        dataset=dataset,
        kind=QuestionKind.IMAGE_VERIFY,
        concept=concept,
        targets=[creation.Target(image=i) for i in images],
        calibration=[False] * len(images),
    )


def gold_for(dataset, concept, images, answers=None):
    answers = answers if answers is not None else [i % 2 == 0 for i in range(len(images))]
    return gold_items_create(
        dataset=dataset,
        specs=[
            GoldSpec(
                kind=QuestionKind.IMAGE_VERIFY,
                concept=concept,
                image=img,
                answer=a,
                explanation="look closer",
            )
            for img, a in zip(images, answers, strict=True)
        ],
    )


def small_qualification(dataset, **settings) -> GoldSettings:
    """A qualification set the ten-item pools of these tests can gate with: 8 items, all right to pass (a
    coin-flipper passes 0.4% of the time; the defaults need 14 items)."""
    values = {"qualification_size": 8, "qualification_pass": 8, **settings}
    row, _ = GoldSettings.objects.update_or_create(dataset=dataset, defaults=values)
    return row
