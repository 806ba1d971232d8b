"""The consensus engine as the box pipeline's quality backend: the question is a consensus Question about the
box, the drawer can never vote on it (also when it waited for a calibration table), and the decision moves the
box job on. Coverage stays with annotation's fixed rule."""

from __future__ import annotations

import numpy as np
import pytest

from annotation import boxes, questions
from annotation.models import Box, BoxJob, BoxState, Task, TaskExclusion
from consensus import box_questions
from consensus.calibration import build_table
from consensus.models import CalibrationTable, Question, QuestionKind, QuestionRole
from tests import factories
from tests.annotation.boxhelpers import answer, image, lease, workers

pytestmark = pytest.mark.django_db


@pytest.fixture
def connected():
    box_questions.connect()
    yield
    box_questions.disconnect()


@pytest.fixture
def concept():
    return factories.ConceptFactory(wnid="n02084071", name="dog")


def with_table(concept):
    rng = np.random.default_rng(0)
    sequences = [list(rng.random(8) < (0.92 if i % 2 else 0.08)) for i in range(60)]
    table = build_table(sequences)
    CalibrationTable.objects.create(
        kind=QuestionKind.BOX_QUALITY,
        concept=concept,
        table=table.to_dict(),
        n_images=table.n_images,
        n_votes=table.n_votes,
        method=table.method,
        last_vote_id=0,
    )


def test_quality_goes_to_consensus_and_its_decision_accepts_the_box(connected, dataset, concept):
    with_table(concept)
    job, _ = boxes.box_job_start(image=image(dataset), concept=concept)
    drawer, *voters = workers(12)
    task = answer(drawer, boxes.DRAW_KIND, {"box": [10, 10, 110, 90]})
    box = Box.objects.get(pk=task.result["box_id"])
    question = Question.objects.get(box=box)
    assert question.kind == QuestionKind.BOX_QUALITY and question.role == QuestionRole.PRODUCTION
    assert not Task.objects.filter(kind=questions.QUALITY).exists()
    assert lease(drawer, "question") is None  # a worker never verifies their own box
    for voter in voters:
        if answer(voter, "question", {"answer": True}).state == "done":
            break
    box.refresh_from_db()
    assert box.state == BoxState.ACCEPTED
    assert BoxJob.objects.get(pk=job.pk).status == "awaiting_coverage"
    assert Task.objects.filter(kind=questions.COVERAGE).count() == 1  # coverage stays on the fixed rule


def test_a_calibration_question_also_excludes_the_drawer(connected, dataset, concept):
    boxes.box_job_start(image=image(dataset), concept=concept)
    (drawer,) = workers(1)
    answer(drawer, boxes.DRAW_KIND, {"box": [10, 10, 110, 90]})
    question = Question.objects.get()
    assert question.role == QuestionRole.CALIBRATION and question.task_id is not None
    assert list(TaskExclusion.objects.filter(task=question.task).values_list("worker_id", flat=True)) == [
        drawer.pk
    ]


def test_without_connect_the_fixed_rule_answers(dataset, concept):
    assert questions.backend_for(questions.QUALITY).name == "fixed-majority"
