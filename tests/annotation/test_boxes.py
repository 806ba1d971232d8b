"""Box pipeline services: every transition through the queue, the caps, the self-verification ban, the event
log, and the question hook that lets a higher app take over the binary questions."""

from __future__ import annotations

import pytest

from annotation import pipeline, questions
from annotation.models import Box, BoxJob, BoxJobEvent, BoxState, Task, TaskExclusion, TaskState
from boxes import services as boxes
from boxes.fixed_questions import POLICIES
from tests import factories
from tests.annotation.boxhelpers import answer, image, lease, vote, workers

pytestmark = pytest.mark.django_db

DRAW, QUALITY, COVERAGE = boxes.DRAW_KIND, questions.QUALITY, questions.COVERAGE


@pytest.fixture
def concept():
    return factories.ConceptFactory(wnid="n02084071", name="dog", gloss="a domesticated canid")


@pytest.fixture
def job(dataset, concept):
    created, new = boxes.box_job_start(image=image(dataset), concept=concept)
    assert new
    return created


@pytest.fixture
def crowd():
    return workers(8)


def refresh(job) -> BoxJob:
    return BoxJob.objects.get(pk=job.pk)


def draw(worker, box=(10, 10, 110, 90)):
    task = answer(worker, DRAW, {"box": list(box)})
    return Box.objects.get(pk=task.result["box_id"])


def test_starting_a_job_queues_one_draw_and_a_second_start_changes_nothing(job, concept):
    again, created = boxes.box_job_start(image=job.image, concept=concept)
    assert (again.pk, created) == (job.pk, False)
    assert BoxJob.objects.count() == 1
    draws = Task.objects.filter(kind=DRAW)
    assert draws.count() == 1 and draws.get().payload["job"] == job.pk
    assert job.status == "needs_draw"


def test_draw_accept_cover_finishes_the_job_with_the_box_accepted(job, crowd):
    drawer, *others = crowd
    box = draw(drawer)
    assert box.state == BoxState.PENDING and box.drawn_by == drawer
    assert refresh(job).status == "awaiting_quality"
    vote(others, QUALITY, True)
    box.refresh_from_db()
    assert box.state == BoxState.ACCEPTED and refresh(job).status == "awaiting_coverage"
    done = vote(others, COVERAGE, True)
    assert done.result["answer"] is True
    assert refresh(job).status == "done"
    assert not Task.objects.exclude(state=TaskState.DONE).exists()


def test_a_rejected_box_is_kept_as_rejected_and_a_new_draw_is_queued(job, crowd):
    drawer, *others = crowd
    box = draw(drawer)
    vote(others, QUALITY, False)
    box.refresh_from_db()
    assert box.state == BoxState.REJECTED  # a state, not a deletion
    assert refresh(job).status == "needs_draw"
    open_draws = Task.objects.filter(kind=DRAW).exclude(state=TaskState.DONE)
    assert open_draws.count() == 1 and open_draws.get().payload["round"] == 2


def test_coverage_no_queues_another_draw_showing_the_accepted_box(job, crowd):
    drawer, *others = crowd
    first = draw(drawer)
    vote(others, QUALITY, True)
    vote(others, COVERAGE, False)
    assert refresh(job).status == "needs_draw"
    lease_ = lease(others[0], DRAW)
    payload = boxes_payload(lease_.task)
    assert [b["id"] for b in payload["boxes"]] == [first.pk]
    assert payload["concept"]["name"] == "dog" and "dog" in payload["instructions"]


def boxes_payload(task):
    from annotation import kinds

    return kinds.get(task.kind).public_payload(task)


def test_a_drawer_never_gets_the_quality_task_of_their_own_box(job, crowd):
    drawer, verifier, *_ = crowd
    box = draw(drawer)
    quality = Task.objects.get(kind=QUALITY)
    assert quality.box_id == box.pk
    assert list(TaskExclusion.objects.filter(task=quality).values_list("worker_id", flat=True)) == [drawer.pk]
    assert lease(drawer, QUALITY) is None
    assert lease(verifier, QUALITY) is not None


def test_coverage_excludes_every_drawer_of_an_accepted_box(job, crowd):
    a, b, *others = crowd
    draw(a, (10, 10, 110, 90))
    vote(others, QUALITY, True)
    vote(others, COVERAGE, False)
    draw(b, (200, 200, 300, 300))
    vote([a, *others], QUALITY, True)
    coverage = Task.objects.filter(kind=COVERAGE).exclude(state=TaskState.DONE).get()
    assert set(TaskExclusion.objects.filter(task=coverage).values_list("worker_id", flat=True)) == {
        a.pk,
        b.pk,
    }
    assert lease(a, COVERAGE) is None and lease(b, COVERAGE) is None
    assert lease(others[0], COVERAGE) is not None


def test_none_left_is_checked_by_coverage_without_the_skipper(job, crowd):
    skipper, *others = crowd
    task = answer(skipper, DRAW, {"none_left": True})
    assert task.result == {"none_left": True}
    assert refresh(job).status == "awaiting_coverage"
    assert lease(skipper, COVERAGE) is None
    # coverage "yes" with no box contradicts the verified label: a person looks
    vote(others, COVERAGE, True)
    job = refresh(job)
    assert job.status == "review" and job.review_reason == "no_boxes"


def test_the_round_cap_sends_the_job_to_review_instead_of_another_draw(dataset, concept, crowd):
    job, _ = boxes.box_job_start(image=image(dataset), concept=concept, max_rounds=2)
    drawer, *others = crowd
    draw(drawer)
    vote(others, QUALITY, False)
    draw(drawer, (20, 20, 120, 100))
    vote(others, QUALITY, False)
    job = refresh(job)
    assert job.status == "review" and job.review_reason == "round_cap"
    assert not Task.objects.filter(kind=DRAW).exclude(state=TaskState.DONE).exists()


def test_the_box_cap_sends_the_job_to_review(dataset, concept, crowd):
    job, _ = boxes.box_job_start(image=image(dataset), concept=concept, max_boxes=1)
    drawer, *others = crowd
    draw(drawer)
    vote(others, QUALITY, True)
    vote(others, COVERAGE, False)
    job = refresh(job)
    assert job.status == "review" and job.review_reason == "box_cap"


def test_review_hooks_hear_about_jobs_sent_to_review(dataset, concept, crowd):
    heard = []

    def hook(job, reason, detail):
        heard.append((job.pk, reason))

    boxes.review_hook_register(hook)
    try:
        job, _ = boxes.box_job_start(image=image(dataset), concept=concept, max_rounds=1)
        drawer, *others = crowd
        draw(drawer)
        vote(others, QUALITY, False)
    finally:
        boxes.review_hook_unregister(hook)
    assert heard == [(job.pk, "round_cap")]


def test_the_event_log_replays_to_the_cached_state(job, crowd):
    drawer, *others = crowd
    draw(drawer)
    vote(others, QUALITY, False)
    draw(drawer, (20, 20, 120, 100))
    vote(others, QUALITY, True)
    vote(others, COVERAGE, True)
    job = refresh(job)
    rows = list(BoxJobEvent.objects.filter(job=job).order_by("seq"))
    assert [r.seq for r in rows] == [1, 2, 3, 4, 5]
    assert [r.event["type"] for r in rows] == [
        "box_drawn",
        "quality_decided",
        "box_drawn",
        "quality_decided",
        "coverage_decided",
    ]
    events = [pipeline._event_from_dict(r.event) for r in rows]
    replayed = pipeline.replay(events, job.max_boxes, job.max_rounds)
    assert replayed == boxes.job_state(job)
    assert replayed.status == pipeline.JobStatus.DONE


def test_quality_stops_early_once_the_majority_is_reached(job, crowd):
    drawer, *others = crowd
    draw(drawer)
    task = vote(others, QUALITY, True)
    assert task.answers_count == POLICIES[QUALITY].yes_needed == 2


def test_a_stale_decision_is_ignored_and_changes_nothing(job, crowd):
    drawer, *others = crowd
    box = draw(drawer)
    vote(others, QUALITY, True)
    events = BoxJobEvent.objects.count()
    assert boxes.on_quality_decided(box.pk, False) is False
    assert BoxJobEvent.objects.count() == events
    box.refresh_from_db()
    assert box.state == BoxState.ACCEPTED


def test_undecidable_questions_send_the_job_to_review_with_the_box_pending(job, crowd):
    drawer, *_ = crowd
    box = draw(drawer)
    question = questions.BinaryQuestion.from_dict(Task.objects.get(kind=QUALITY).payload["question"])
    assert boxes.on_question_decided(question, None) is True
    job = refresh(job)
    assert job.status == "review" and job.review_reason == "quality_undecidable"
    box.refresh_from_db()
    assert box.state == BoxState.PENDING


def test_the_quality_question_names_its_job_box_and_drawer_and_its_decision_goes_back(job, crowd):
    drawer, *_ = crowd
    box = draw(drawer)
    question = questions.BinaryQuestion.from_dict(Task.objects.get(kind=QUALITY).payload["question"])
    assert (question.kind, question.box_id, question.exclude_workers) == (QUALITY, box.pk, (drawer.pk,))
    assert question.job_id == job.pk and "dog" in question.text
    assert boxes.on_question_decided(question, True)
    assert Task.objects.filter(kind=COVERAGE).count() == 1


def test_box_jobs_start_covers_every_image_of_the_dataset_once(dataset, concept):
    first = [image(dataset) for _ in range(3)]
    report = boxes.box_jobs_start(dataset=dataset, concept=concept)
    assert (report.created, report.existing) == (3, 0)
    report = boxes.box_jobs_start(dataset=dataset, concept=concept, images=first[:2])
    assert (report.created, report.existing) == (0, 2)
    assert boxes.status_counts(dataset)["needs_draw"] == 3


def test_a_job_sent_to_review_becomes_one_ambiguous_review_item_about_its_pending_box(job, crowd):
    from review.models import ReviewItem

    drawer, *_ = crowd
    box = draw(drawer)
    boxes.on_quality_undecidable(box.pk)
    item = ReviewItem.objects.get()
    assert item.subject == {"type": "box_job", "id": job.pk}
    assert item.box_a_id == box.pk and "quality_undecidable" in item.reason


def test_one_no_on_coverage_queues_another_draw_but_yes_needs_three_votes(job, crowd):
    drawer, *others = crowd
    draw(drawer)
    vote(others, QUALITY, True)
    a, b, c, *_ = others
    answer(a, COVERAGE, {"answer": True})
    answer(b, COVERAGE, {"answer": True})
    assert refresh(job).status == "awaiting_coverage"
    task = answer(c, COVERAGE, {"answer": False})
    assert task.state == TaskState.DONE and task.result["answer"] is False
    assert refresh(job).status == "needs_draw"
