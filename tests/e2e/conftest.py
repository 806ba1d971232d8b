"""Fixtures of the browser tests: datasets with real images and tasks on them."""

from __future__ import annotations

import pytest

from annotation.ingest import IngestItem, images_ingest
from boxes import services as boxes
from boxes.models import BoxSettings, DrawMode
from consensus.binary_vote import vote_tasks_create
from tests import factories
from tests.conftest import png_bytes


@pytest.fixture
def two_vote_tasks(live_server):
    organizer = factories.user_with_roles("organizer", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer])
    report = images_ingest(
        dataset=dataset,
        items=[
            IngestItem("first.png", png_bytes(size=(320, 240), seed=1)),
            IngestItem("second.png", png_bytes(size=(240, 320), seed=2)),
        ],
    )
    assert not report.rejected and len(report.stored) == 2
    concept = factories.ConceptFactory(wnid="n02084071", name="dog", gloss="a domesticated canid")
    tasks = vote_tasks_create(dataset=dataset, concept=concept, answers_wanted=1)
    assert len(tasks) == 2
    return tasks


WIDTH, HEIGHT = 1200, 800  # the draw_job image: wider than the page shows it


@pytest.fixture
def draw_job(live_server):
    """A box job (its first DRAW task) on one 1200x800 image, for the draw page at a reduced scale."""
    organizer = factories.user_with_roles("organizer", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer])
    report = images_ingest(
        dataset=dataset, items=[IngestItem("wide.png", png_bytes(size=(WIDTH, HEIGHT), seed=4))]
    )
    concept = factories.ConceptFactory(wnid="n02084071", name="dog", gloss="a domesticated canid")
    job, _ = boxes.box_job_start(image=dataset.images.get(pk=report.stored[0].id), concept=concept)
    return job


@pytest.fixture
def extreme_job(live_server):
    """A box job on one 1200x800 image of a dataset that draws by extreme clicking: its first DRAW task asks
    for the four extreme points."""
    organizer = factories.user_with_roles("organizer", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer])
    BoxSettings.objects.create(dataset=dataset, draw_mode=DrawMode.EXTREME)
    report = images_ingest(
        dataset=dataset, items=[IngestItem("wide.png", png_bytes(size=(WIDTH, HEIGHT), seed=4))]
    )
    concept = factories.ConceptFactory(wnid="n02084071", name="dog", gloss="a domesticated canid")
    job, _ = boxes.box_job_start(image=dataset.images.get(pk=report.stored[0].id), concept=concept)
    return job
