"""Review leaves no dead end (issue 13, causes 3 and 4): a question at its vote cap (any kind) and a box job in
review become review items with their image and what the reviewer must see; the reviewer's decision goes back
through the consensus engine or the box state machine; accepted boxes request an overlap scan, which also runs
on a schedule; a sweep queues whatever sits in review without an item."""

from __future__ import annotations

import io
from datetime import timedelta

import numpy as np
import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.final_evidence import MULTILABEL
from annotation.final_labels import LabelVerdict, final_labels_record
from annotation.models import Box, BoxJob, BoxState, FinalBox, FinalLabel, Task, TaskState
from benchmark.final_labels import final_labels_rebuild
from boxes import services as boxes
from consensus import binary_vote, engine, voiding
from consensus import events as consensus_events
from consensus.calibration import build_table
from consensus.creation import Target, questions_create
from consensus.engine import vote_record
from consensus.models import (
    CalibrationTable,
    ConsensusSettings,
    Question,
    QuestionDecision,
    QuestionKind,
    QuestionState,
    Vote,
)
from consensus.stopping import Decision as Decision_
from review import decisions, errors, leasing, scan, stuck, tasks
from review.models import Decision, ItemState, OverlapCheck, ReviewItem, ReviewKind, ScanState
from review.serializers import ReviewDecisionSerializer
from tests import factories
from tests.annotation.boxhelpers import answer, box_rule_use, image, workers
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def concept():
    return factories.ConceptFactory(wnid="n02084071", name="dog")


@pytest.fixture
def capped(dataset):
    """A vote cap of 2: one yes and one no leave any question undecided at its cap."""
    return ConsensusSettings.objects.create(dataset=dataset, vote_cap=2, calibration_votes=2, extension_cap=0)


@pytest.fixture
def consensus_boxes(settings):
    box_rule_use(settings, "consensus")  # the default, made explicit


def with_table(concept, kind):
    rng = np.random.default_rng(0)
    table = build_table([list(rng.random(8) < (0.92 if i % 2 else 0.08)) for i in range(60)])
    CalibrationTable.objects.create(
        kind=kind,
        concept=concept,
        table=table.to_dict(),
        n_images=table.n_images,
        n_votes=table.n_votes,
        method=table.method,
        last_vote_id=0,
    )


def verify_question_at_cap(dataset, concept) -> Question:
    with_table(concept, QuestionKind.IMAGE_VERIFY)
    (question,) = questions_create(
        dataset=dataset,
        kind=QuestionKind.IMAGE_VERIFY,
        concept=concept,
        targets=[Target(image=image(dataset))],
        calibration=[False],
    )
    yes, no = workers(2, prefix="v")
    vote_record(question=question, worker=yes, answer=True)
    vote_record(question=Question.objects.get(pk=question.pk), worker=no, answer=False)
    question.refresh_from_db()
    assert question.state == QuestionState.REVIEW
    return question


def lease_and_decide(reviewer, decision, dataset=None) -> ReviewItem:
    item = leasing.review_lease_next(reviewer=reviewer, dataset_id=dataset.pk if dataset else None)
    assert item is not None, "nothing to review"
    decisions.review_decide(item=item, reviewer=reviewer, decision=decision)
    return ReviewItem.objects.get(pk=item.pk)


# --- questions at their vote cap -----------------------------------------------------------------------------


def test_a_question_at_its_vote_cap_becomes_a_review_item_with_its_image_and_votes(
    capped, dataset, concept, reviewer, api_client
):
    question = verify_question_at_cap(dataset, concept)
    item = ReviewItem.objects.get()
    assert (item.kind, item.subject) == (
        ReviewKind.AMBIGUOUS,
        {"type": "consensus.question", "id": question.pk},
    )
    assert item.image_id == question.image_id and item.state == ItemState.OPEN

    client = api_client(reviewer)
    shown = client.get("/api/v1/review/next").json()
    assert shown["image"]["id"] == question.image_id
    assert shown["context"]["question"] == question.task.payload["question"]
    assert shown["context"]["votes"]["yes"] == 1 and shown["context"]["votes"]["no"] == 1
    assert shown["context"]["concept"]["wnid"] == concept.wnid
    assert [d["value"] for d in shown["decisions"]] == ["accept", "reject"]
    summary = client.get("/api/v1/review/summary").json()["counts"]
    assert summary["ambiguous"]["leased"] == 1


def test_the_reviewers_verdict_decides_the_question_through_the_engine_for_every_subscriber(
    capped, dataset, concept, reviewer, organizer
):
    question = verify_question_at_cap(dataset, concept)
    heard = []

    def listener(event):
        heard.append((event.question.pk, event.decision.decision, event.decision.reviewer_id))

    consensus_events.subscribe(QuestionKind.IMAGE_VERIFY, listener)
    try:
        lease_and_decide(reviewer, Decision.REJECT)
    finally:
        consensus_events.unsubscribe(QuestionKind.IMAGE_VERIFY, listener)
    question.refresh_from_db()
    assert question.state == QuestionState.REJECTED
    assert heard == [(question.pk, "reject", reviewer.pk)]
    latest = QuestionDecision.objects.filter(question=question).order_by("-id").first()
    assert (latest.decision, latest.reviewer_id) == ("reject", reviewer.pk)
    assert Task.objects.get(pk=question.task_id).result["answer"] is False

    decision = ReviewItem.objects.get().decisions.get()
    with pytest.raises(errors.ReviewError, match="cannot be undone"):
        decisions.review_undo(decision=decision, organizer=organizer)
    assert Question.objects.get(pk=question.pk).state == QuestionState.REJECTED
    # The pages are told so, and offer no undo for it (the reviewer's and the organizer's).
    shown = client_for(organizer).get(f"/api/v1/datasets/{dataset.pk}/review/decisions").json()["results"]
    assert [r["id"] for r in shown] == [decision.pk]
    assert "acted on it" in shown[0]["undo_refused"]
    assert "acted on it" in ReviewDecisionSerializer(decision).data["undo_refused"]


def test_an_undecidable_box_quality_question_is_one_item_and_its_verdict_resumes_the_job(
    consensus_boxes, capped, dataset, concept, reviewer, api_client
):
    job, _ = boxes.box_job_start(image=image(dataset), concept=concept)
    drawer, yes, no = workers(3)
    answer(drawer, boxes.DRAW_KIND, {"box": [10, 10, 110, 90]})
    answer(yes, "question", {"answer": True})
    answer(no, "question", {"answer": False})
    box = Box.objects.get()
    assert BoxJob.objects.get(pk=job.pk).status == "review"
    item = ReviewItem.objects.get()  # the question's item: no second item for the job
    assert item.subject["type"] == "consensus.question" and item.box_a_id == box.pk
    assert item.image_id == job.image_id

    client = api_client(reviewer)
    shown = client.get("/api/v1/review/next").json()
    assert shown["box_a"]["id"] == box.pk and shown["image"]["id"] == job.image_id
    assert client.post(f"/api/v1/review/items/{item.pk}/decide", {"decision": "accept"}).status_code == 201

    box.refresh_from_db()
    assert box.state == BoxState.ACCEPTED
    assert BoxJob.objects.get(pk=job.pk).status == "awaiting_coverage"
    assert Question.objects.filter(kind=QuestionKind.BOX_COVERAGE, state=QuestionState.OPEN).exists()


def test_an_undecidable_coverage_question_rejected_by_the_reviewer_sends_the_job_back_to_drawing(
    consensus_boxes, dataset, concept, reviewer
):
    with_table(concept, QuestionKind.BOX_QUALITY)
    job, _ = boxes.box_job_start(image=image(dataset), concept=concept)
    drawer, *voters = workers(6)
    answer(drawer, boxes.DRAW_KIND, {"box": [10, 10, 110, 90]})
    for voter in voters:
        if answer(voter, "question", {"answer": True}).state == TaskState.DONE:
            break
    ConsensusSettings.objects.create(dataset=dataset, vote_cap=2, calibration_votes=2, extension_cap=0)
    coverage = Question.objects.get(kind=QuestionKind.BOX_COVERAGE)
    vote_record(question=coverage, worker=voters[0], answer=True)
    vote_record(question=Question.objects.get(pk=coverage.pk), worker=voters[1], answer=False)
    assert BoxJob.objects.get(pk=job.pk).status == "review"
    assert ReviewItem.objects.get().subject == {"type": "consensus.question", "id": coverage.pk}

    lease_and_decide(reviewer, Decision.REJECT)
    assert BoxJob.objects.get(pk=job.pk).status == "needs_draw"
    assert Task.objects.filter(kind=boxes.DRAW_KIND, state=TaskState.OPEN).count() == 1


# --- box jobs in review --------------------------------------------------------------------------------------


def job_at_round_cap(dataset, concept) -> BoxJob:
    """A job (fixed rule: `fixed_box_rule`) whose only draw round ended with its box rejected: the round cap of
    1."""
    job, _ = boxes.box_job_start(image=image(dataset), concept=concept, max_rounds=1)
    drawer, *voters = workers(4, prefix="d")
    answer(drawer, boxes.DRAW_KIND, {"box": [10, 10, 110, 90]})
    for voter in voters:
        if answer(voter, "box_quality", {"answer": False}).state == TaskState.DONE:
            break
    job.refresh_from_db()
    assert job.status == "review" and job.review_reason == "round_cap"
    return job


@pytest.fixture
def fixed_box_rule(settings):
    """The box questions of the test are asked under the fixed first-to-k rule."""
    box_rule_use(settings, "fixed")


def test_a_box_job_item_shows_its_image_and_boxes_even_without_a_pending_box(
    fixed_box_rule, dataset, concept, reviewer, api_client
):
    job = job_at_round_cap(dataset, concept)
    item = ReviewItem.objects.get()
    assert item.box_a_id is None and item.image_id == job.image_id
    client = api_client(reviewer)
    shown = client.get("/api/v1/review/next").json()
    assert shown["image"]["id"] == job.image_id
    assert shown["context"]["concept"]["wnid"] == concept.wnid
    assert [d["value"] for d in shown["decisions"]] == ["accept", "redraw", "close", "absent"]
    refused = client.post(f"/api/v1/review/items/{item.pk}/decide", {"decision": "reject"})
    assert refused.status_code == 400 and "accept, redraw, close, absent" in refused.json()["decision"]


def test_a_review_item_says_what_is_asked_so_a_reviewer_can_tell_a_question_from_a_box_job(
    fixed_box_rule, capped, dataset, concept, reviewer, api_client
):
    question = verify_question_at_cap(dataset, concept)
    client = api_client(reviewer)
    shown = client.get("/api/v1/review/next").json()
    assert shown["context"]["kind"] == question.kind == "image_verify"
    client.post(f"/api/v1/review/items/{shown['id']}/decide", {"decision": "accept"})
    job_at_round_cap(dataset, concept)
    shown = client.get("/api/v1/review/next").json()
    assert shown["subject"]["type"] == "box_job" and shown["context"]["kind"] == "box_job"


def test_redraw_returns_a_box_job_to_drawing_with_room_for_more_rounds(
    fixed_box_rule, dataset, concept, reviewer
):
    job = job_at_round_cap(dataset, concept)
    lease_and_decide(reviewer, Decision.REDRAW)
    job.refresh_from_db()
    assert job.status == "needs_draw" and job.state["max_rounds"] > job.state["rounds"]
    draw = Task.objects.filter(kind=boxes.DRAW_KIND, state=TaskState.OPEN).get()
    assert draw.payload["round"] == 2
    assert job.events.order_by("-seq").first().event["type"] == "review_decided"


def test_accept_and_close_finish_a_box_job_in_review(fixed_box_rule, dataset, concept, reviewer):
    job = job_at_round_cap(dataset, concept)
    lease_and_decide(reviewer, Decision.CLOSE)
    assert BoxJob.objects.get(pk=job.pk).status == "done"

    other, _ = boxes.box_job_start(image=image(dataset), concept=concept)
    drawer, *voters = workers(4, prefix="e")
    answer(drawer, boxes.DRAW_KIND, {"box": [5, 5, 60, 60]})
    boxes.on_quality_undecidable(Box.objects.get(image=other.image).pk)  # the fixed rule's own cap
    item = lease_and_decide(reviewer, Decision.ACCEPT)
    assert item.subject == {"type": "box_job", "id": other.pk}
    assert BoxJob.objects.get(pk=other.pk).status == "done"
    assert Box.objects.get(image=other.image).state == BoxState.ACCEPTED
    assert item.decisions.get().after["boxes"] == {
        str(item.box_a_id): {"state": "accepted", "concept": concept.pk}
    }


# --- the overlap scan after accepted boxes, and on a schedule -----------------------------------------------


def test_an_accepted_box_is_checked_on_commit_and_is_final_at_once(
    consensus_boxes, dataset, concept, django_capture_on_commit_callbacks
):
    with_table(concept, QuestionKind.BOX_QUALITY)
    job, _ = boxes.box_job_start(image=image(dataset), concept=concept)
    drawer, *voters = workers(6)
    answer(drawer, boxes.DRAW_KIND, {"box": [10, 10, 110, 90]})
    with django_capture_on_commit_callbacks(execute=True):
        for voter in voters:
            if answer(voter, "question", {"answer": True}).state == TaskState.DONE:
                break
    box = Box.objects.get()
    assert box.state == BoxState.ACCEPTED
    assert OverlapCheck.objects.filter(box=box).exists(), "checked when its acceptance committed"
    assert list(FinalBox.objects.values_list("box_id", flat=True)) == [box.pk], (
        "final with no scan waited for"
    )
    assert not ScanState.objects.filter(dataset=dataset, scan_requested_at__isnull=False).exists()


def test_a_catch_up_scan_request_is_debounced(dataset, django_capture_on_commit_callbacks):
    now = timezone.now()
    state = ScanState.objects.create(dataset=dataset, last_finished_at=now)
    later = now + timedelta(seconds=settings.CROWDLABEL["REVIEW_SCAN_DEBOUNCE_SECONDS"] + 1)
    assert scan.overlaps_scan_request(dataset.pk, now=later - timedelta(seconds=2)) is False, (
        "a scan finished within the debounce period: the next request or the schedule covers the box"
    )
    ScanState.objects.filter(pk=state.pk).update(scan_requested_at=later)
    assert scan.overlaps_scan_request(dataset.pk, now=later) is False, "a queued scan absorbs the request"
    ScanState.objects.filter(pk=state.pk).update(scan_requested_at=None)
    with django_capture_on_commit_callbacks(execute=True):
        assert scan.overlaps_scan_request(dataset.pk, now=later) is True
    assert ScanState.objects.get(pk=state.pk).scan_requested_at is None, (
        "the scan that ran cleared its request"
    )


def test_an_organizers_scan_request_runs_at_once_even_right_after_a_scan(dataset):
    """Issue 31: the operator's scan before the last review round was refused for the 30 s after the previous
    scan (and a queued one ran 30 s later), so the export came 30 s after the last answer."""
    from outbox.models import Message

    now = timezone.now()
    state = ScanState.objects.create(dataset=dataset, last_finished_at=now)
    assert scan.overlaps_scan_request(dataset.pk, now=now, at_once=True) is True, (
        "a scan that just finished refuses only the debounced (failure) requests"
    )
    message = Message.objects.get(task_name="review.tasks.overlaps_scan")
    assert message.available_at <= timezone.now(), "queued to run now, not after the debounce period"
    assert scan.overlaps_scan_request(dataset.pk, now=now, at_once=True) is False, (
        "a scan queued and not started yet covers the same boxes"
    )
    assert ScanState.objects.get(pk=state.pk).scan_requested_at == now


def test_the_scheduled_scan_covers_datasets_with_unscanned_boxes(dataset, concept, make_box):
    img = image(dataset)
    a = make_box(img, concept, 10, 10, 100, 100)
    b = make_box(img, concept, 12, 12, 100, 100)
    assert scan.datasets_to_scan() == [dataset.pk]
    assert tasks.overlaps_scan_due() == {"datasets": [dataset.pk]}
    pair = ReviewItem.objects.get(kind=ReviewKind.DUPLICATE)
    assert (pair.box_a_id, pair.box_b_id, pair.image_id) == (a.pk, b.pk, img.pk)
    assert scan.datasets_to_scan() == []
    schedule = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {"review.tasks.overlaps_scan_due", "review.tasks.stuck_enqueue"} <= schedule


# --- the sweep -------------------------------------------------------------------------------------------------


def test_the_sweep_queues_questions_and_box_jobs_left_in_review_without_an_item(
    fixed_box_rule, capped, dataset, concept
):
    question = verify_question_at_cap(dataset, concept)
    job = job_at_round_cap(dataset, concept)
    ReviewItem.objects.update(state=ItemState.DISMISSED)  # as if they had been lost
    report = stuck.stuck_enqueue()
    assert (report.questions_queued, report.box_jobs_queued) == (1, 1)
    subjects = {
        (i.subject["type"], i.subject["id"], i.image_id) for i in ReviewItem.objects.filter(state="open")
    }
    assert subjects == {
        ("consensus.question", question.pk, question.image_id),
        ("box_job", job.pk, job.image_id),
    }
    out = io.StringIO()
    call_command("review_stuck", stdout=out)
    assert "0 questions" in out.getvalue() and "0 box jobs" in out.getvalue()


def test_the_sweep_dismisses_an_item_whose_question_left_review(capped, dataset, concept):
    question = verify_question_at_cap(dataset, concept)
    Question.objects.filter(pk=question.pk).update(state=QuestionState.OPEN)  # reopened by voided votes
    assert stuck.stuck_enqueue().items_dismissed == 1
    assert ReviewItem.objects.get().state == ItemState.DISMISSED


def test_deciding_an_item_whose_question_left_review_dismisses_it(capped, dataset, concept, reviewer):
    question = verify_question_at_cap(dataset, concept)
    item = leasing.review_lease_next(reviewer=reviewer)
    Question.objects.filter(pk=question.pk).update(state=QuestionState.OPEN)  # reopened by voided votes
    with pytest.raises(errors.SubjectGone, match="dismissed"):
        decisions.review_decide(item=item, reviewer=reviewer, decision=Decision.ACCEPT)
    assert ReviewItem.objects.get(pk=item.pk).state == ItemState.DISMISSED
    assert leasing.review_lease_next(reviewer=reviewer) is None, "the reviewer is not handed it again"


def test_an_item_whose_question_got_a_verdict_without_a_reviewer_is_dismissed_before_a_reviewer_sees_it(
    capped, dataset, concept, reviewer
):
    # What `consensus.voiding` does when a blocked worker's votes are voided and the remaining votes decide a
    # question in review: the engine finalizes it (no reviewer), announcing the verdict.
    question = verify_question_at_cap(dataset, concept)
    assert ReviewItem.objects.get().state == ItemState.OPEN
    with transaction.atomic():
        task = Task.objects.select_for_update().get(pk=question.task_id)
        question = Question.objects.select_for_update().get(pk=question.pk)
        settings_ = ConsensusSettings.for_dataset(dataset.pk)
        _decision, estimate = engine.decision_for(question, settings_)
        engine.task_change_apply(task, engine.question_finalize(question, Decision_.ACCEPT, estimate))
        task.save()
    assert ReviewItem.objects.get().state == ItemState.DISMISSED
    assert leasing.review_lease_next(reviewer=reviewer) is None, "no reviewer is handed a settled question"


def test_a_question_reopened_out_of_review_loses_its_item_at_once(capped, dataset, concept, reviewer):
    # The yes vote voided, the one no left does not decide it: the question collects votes again, and its item
    # goes at once (not at the next sweep), so deciding it later by votes need not look for one.
    question = verify_question_at_cap(dataset, concept)
    assert ReviewItem.objects.get().state == ItemState.OPEN
    report = voiding.votes_void(votes=[Vote.objects.get(question=question, answer=True).pk], reason="test")
    assert report.reopened == [question.pk]
    assert ReviewItem.objects.get().state == ItemState.DISMISSED
    assert leasing.review_lease_next(reviewer=reviewer) is None


def test_a_verdict_on_a_question_never_in_review_touches_no_review_item(dataset, concept):
    # A plain vote (a question with a two-vote majority rule) decided by its votes: no statement on review
    # items runs for any of them, and an open item of another subject stays as it is.
    (task,) = binary_vote.vote_tasks_create(
        dataset=dataset, concept=concept, images=[image(dataset)], answers_wanted=2
    )
    question = Question.objects.get(task=task)
    other = ReviewItem.objects.create(
        kind=ReviewKind.AMBIGUOUS, dataset=dataset, subject={"type": "box_job", "id": question.pk}
    )
    touched = []
    for worker in workers(2, prefix="y"):
        with CaptureQueriesContext(connection) as ctx:
            vote_record(question=Question.objects.get(pk=question.pk), worker=worker, answer=True)
        touched += [q["sql"] for q in ctx.captured_queries if ReviewItem._meta.db_table in q["sql"]]
    question.refresh_from_db()
    assert question.state == QuestionState.ACCEPTED
    assert not touched, touched
    assert ReviewItem.objects.get(pk=other.pk).state == ItemState.OPEN


def test_an_item_a_pipeline_waits_on_is_reviewed_before_any_overlapping_pair(
    capped, dataset, concept, reviewer, make_box
):
    img = image(dataset)
    make_box(img, concept, 10, 10, 100, 100)
    make_box(img, concept, 10, 10, 100, 101)  # IoU ~0.99: the top pair priority
    scan.overlaps_scan(dataset)
    question = verify_question_at_cap(dataset, concept)
    first = leasing.review_lease_next(reviewer=reviewer)
    assert first.subject == {"type": "consensus.question", "id": question.pk}
    assert first.priority > ReviewItem.objects.get(kind=ReviewKind.DUPLICATE).priority


def test_absent_closes_a_box_job_that_found_nothing_and_makes_the_pair_a_verified_negative(
    fixed_box_rule, dataset, concept, reviewer
):
    # The crowd said the class is present (multi-label), no drawer could box it: the reviewer sees the image.
    job = job_at_round_cap(dataset, concept)
    final_labels_record(
        dataset_id=dataset.pk,
        source=MULTILABEL,
        verdicts=[LabelVerdict(job.image_id, concept.pk, True, 5, 0, 0.9999)],
    )
    assert FinalLabel.objects.get(image_id=job.image_id, concept=concept).present is True
    lease_and_decide(reviewer, Decision.ABSENT)
    assert BoxJob.objects.get(pk=job.pk).status == "done"
    label = FinalLabel.objects.get(image_id=job.image_id, concept=concept)
    assert (label.present, label.source) == (False, "review"), "the reviewer's look outranks the crowd's yes"
    final_labels_rebuild(dataset)
    label = FinalLabel.objects.get(image_id=job.image_id, concept=concept)
    assert (label.present, label.source) == (False, "review"), "a rebuild keeps it"


def test_absent_is_refused_for_a_box_job_with_accepted_boxes(fixed_box_rule, dataset, concept, reviewer):
    job, _ = boxes.box_job_start(image=image(dataset), concept=concept)
    drawer, v1, v2, v3, second = workers(5, prefix="f")
    answer(drawer, boxes.DRAW_KIND, {"box": [5, 5, 60, 60]})
    answer(v1, "box_quality", {"answer": True})
    answer(v2, "box_quality", {"answer": True})  # the fixed rule: 2 yes accept the box
    answer(v3, "box_coverage", {"answer": False})  # 1 no: draw another
    answer(second, boxes.DRAW_KIND, {"box": [100, 100, 160, 160]})
    pending = Box.objects.filter(image=job.image).order_by("-pk").first()
    boxes.on_quality_undecidable(pending.pk)
    item = leasing.review_lease_next(reviewer=reviewer)
    assert item.subject == {"type": "box_job", "id": job.pk}
    with pytest.raises(errors.InvalidDecision, match="accepted boxes"):
        decisions.review_decide(item=item, reviewer=reviewer, decision=Decision.ABSENT)
