"""Box jobs started from a model's prediction set, under the calibrated consensus rule (the default): the
proposals scoring at or above the threshold become QUALITY questions, accepted ones become `model+verified`
boxes, rejected ones are dropped and never exported, and COVERAGE then DRAW box what the model missed."""

from __future__ import annotations

import json

import pytest

from annotation.models import Box, BoxJob, BoxProvenance, BoxState, Task
from benchmark.exporters import ExportOptions, export
from benchmark.selectors import DatasetSource
from boxes import proposals
from boxes import services as boxes
from consensus.models import Question, QuestionKind
from predictions.models import BoxPrediction, PredictionSet
from review import scan
from tests import factories
from tests.annotation.boxhelpers import answer, box_rule_use, image, vote, workers

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def calibrated(settings):
    box_rule_use(settings, "consensus")  # the default, made explicit


@pytest.fixture
def dog():
    return factories.ConceptFactory(wnid="n02084071", name="dog")


def prediction_set(dataset, rows, name="detector"):
    """rows: (image, concept, (x1, y1, x2, y2), score)."""
    made = PredictionSet.objects.create(dataset=dataset, name=name, source="upload", sha256=name * 4)
    for img, concept, (x1, y1, x2, y2), score in rows:
        BoxPrediction.objects.create(
            prediction_set=made, image=img, concept=concept, x1=x1, y1=y1, x2=x2, y2=y2, score=score
        )
    return made


def start(prediction_set_, concept, threshold, images):
    return proposals.box_jobs_start_from_predictions(
        prediction_set=prediction_set_, classes=[proposals.ClassRequest(concept, threshold)], images=images
    )


def quality_question(box):
    return Question.objects.get(kind=QuestionKind.BOX_QUALITY, box=box)


def test_proposals_above_the_threshold_become_quality_questions_of_the_same_consensus(dataset, dog):
    img = image(dataset)
    preds = prediction_set(
        dataset,
        [
            (img, dog, (10, 10, 110, 90), 0.9),
            (img, dog, (200, 50, 300, 150), 0.6),
            (img, dog, (400, 300, 500, 400), 0.2),
        ],
    )
    (report,) = start(preds, dog, 0.5, [img])
    assert (report.created, report.proposals_queued, report.proposals_below_threshold) == (1, 2, 1)
    stored = list(Box.objects.order_by("id"))
    assert [(b.x1, b.score, b.provenance, b.state) for b in stored] == [
        (10, 0.9, BoxProvenance.MODEL, BoxState.PENDING),
        (200, 0.6, BoxProvenance.MODEL, BoxState.PENDING),
    ]
    # The highest score is asked first, as a calibrated consensus question (served as a `question` task).
    question = quality_question(stored[0])
    assert question.rule in ("", None, {}) and question.task_id is not None
    assert not Task.objects.filter(kind=boxes.DRAW_KIND).exists(), "no DRAW before the proposals are decided"
    assert BoxJob.objects.get().status == "awaiting_quality"


def test_accepted_proposals_become_model_verified_boxes_rejected_are_never_exported_and_coverage_draws_the_rest(
    dataset, dog, tmp_path
):
    dataset.concepts.add(dog)
    img = image(dataset)
    preds = prediction_set(dataset, [(img, dog, (10, 10, 110, 90), 0.9), (img, dog, (15, 12, 112, 95), 0.7)])
    start(preds, dog, 0.5, [img])
    first, second = Box.objects.order_by("id")
    voters = workers(8)

    vote(voters, "question", True)  # the first proposal: tight
    first.refresh_from_db()
    assert (first.state, first.provenance) == (BoxState.ACCEPTED, BoxProvenance.MODEL_VERIFIED)
    assert quality_question(second).task_id is not None
    vote(voters, "question", False)  # the second: a duplicate of the first
    second.refresh_from_db()
    assert (second.state, second.provenance) == (BoxState.REJECTED, BoxProvenance.MODEL)

    job = BoxJob.objects.get()
    assert job.status == "awaiting_coverage"
    vote(voters, "question", False)  # an instance is missing: the existing loop draws it
    drawer = factories.user_with_roles("drawer", ("workers",)).worker
    drawn_task = answer(drawer, boxes.DRAW_KIND, {"box": [300, 200, 400, 300]})
    drawn = Box.objects.get(pk=drawn_task.result["box_id"])
    assert drawn.provenance == BoxProvenance.WORKER and drawn.score is None
    vote(voters, "question", True)  # the drawn box is tight
    vote(voters, "question", True)  # every instance is boxed
    job.refresh_from_db()
    assert job.status == "done"
    assert set(Box.objects.filter(state=BoxState.ACCEPTED).values_list("pk", flat=True)) == {
        first.pk,
        drawn.pk,
    }

    scan.overlaps_scan(dataset)
    manifest = export(
        DatasetSource(dataset, None), "coco", tmp_path / "out", ExportOptions(include_images=False)
    )
    assert manifest["boxes_by_provenance"] == {"model+verified": 1, "worker": 1}
    written = json.loads((tmp_path / "out" / "annotations" / "instances_all.json").read_text())
    exported = sorted(round(a["bbox"][0]) for a in written["annotations"])
    assert exported == [10, 300], "the rejected proposal (x 15) is not exported"


def test_starting_again_changes_nothing(dataset, dog):
    img = image(dataset)
    preds = prediction_set(dataset, [(img, dog, (10, 10, 110, 90), 0.9)])
    start(preds, dog, 0.5, [img])
    questions = Question.objects.count()
    (again,) = start(preds, dog, 0.1, [img])
    assert (again.created, again.existing, again.proposals_queued) == (0, 1, 0)
    assert Box.objects.count() == 1 and Question.objects.count() == questions


def test_an_image_without_proposals_above_the_threshold_starts_with_a_draw(dataset, dog):
    img = image(dataset)
    preds = prediction_set(dataset, [(img, dog, (10, 10, 110, 90), 0.3)])
    (report,) = start(preds, dog, 0.5, [img])
    assert report.jobs_without_proposals == 1 and not Box.objects.exists()
    assert Task.objects.filter(kind=boxes.DRAW_KIND).count() == 1


def test_at_most_max_boxes_proposals_per_job_the_highest_scores(dataset, dog):
    img = image(dataset)
    rows = [(img, dog, (10 + 40 * i, 10, 40 + 40 * i, 60), 0.5 + i / 100) for i in range(5)]
    preds = prediction_set(dataset, rows)
    (report,) = proposals.box_jobs_start_from_predictions(
        prediction_set=preds, classes=[proposals.ClassRequest(dog, 0.5)], images=[img], max_boxes=3
    )
    assert (report.proposals_queued, report.proposals_over_cap) == (3, 2)
    assert sorted(Box.objects.values_list("score", flat=True)) == [0.52, 0.53, 0.54]


def test_the_suggestion_says_when_there_is_no_calibration_data(dataset, dog):
    img = image(dataset)
    preds = prediction_set(dataset, [(img, dog, (10, 10, 110, 90), 0.9)])
    (report,) = start(preds, dog, 0.5, [img])
    assert report.suggestion.threshold is None and report.suggestion.checked == 0
    assert "no calibration data" in report.suggestion.note


def test_the_suggestion_reads_proposals_on_images_whose_boxes_are_verified(dataset, dog):
    from predictions.calibration import calibration_data, threshold_suggestion

    rows = []
    for _ in range(24):
        img = image(dataset)
        job, _ = boxes.box_job_start(image=img, concept=dog)
        Box.objects.create(image=img, concept=dog, x1=10, y1=10, x2=110, y2=90, state=BoxState.ACCEPTED)
        BoxJob.objects.filter(pk=job.pk).update(status="done")
        # High scores overlap the verified box; low scores lie elsewhere.
        rows.append((img, dog, (11, 10, 111, 90), 0.95))
        rows.append((img, dog, (300, 300, 400, 400), 0.15))
    preds = prediction_set(dataset, rows)
    scores, correct = calibration_data(preds, dog.pk)
    assert len(scores) == 48 and correct.sum() == 24
    assert all(correct[scores > 0.9]) and not any(correct[scores < 0.2])
    suggestion = threshold_suggestion(preds, dog.pk)
    assert suggestion.threshold == 0.9 and suggestion.accept_rate == 1.0
