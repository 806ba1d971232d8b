"""Workers out of good standing on an image-question kind are not offered its questions (issue 33, votes per
image): the pure rule (`Standing.withholds`: enough votes to judge, enough good workers left, a share of draws
kept open) and the lease policy through the queue (consensus/standing_lease.py)."""

from __future__ import annotations

import numpy as np
import pytest
from django.utils import timezone

from annotation import queue
from consensus import standing_lease
from consensus.models import Question, QuestionKind
from consensus.standing import WITHHOLD_EXPLORE_SHARE, WITHHOLD_MIN_GOOD, WITHHOLD_MIN_VOTES, Standing
from tests import factories

OUT = 7  # the worker out of good standing in `crowd_standing`


def crowd_standing(
    n_good: int = WITHHOLD_MIN_GOOD, out_votes: int = WITHHOLD_MIN_VOTES, ids=None
) -> Standing:
    """`n_good` workers in good standing (ids 100, 101, ...) beside worker OUT at J 0.05 on `out_votes` votes."""
    good = list(ids) if ids is not None else [100 + i for i in range(n_good)]
    worker_ids = np.array(sorted([OUT, *good]), dtype=np.int64)
    j = np.where(worker_ids == OUT, 0.05, 0.7)
    votes = np.where(worker_ids == OUT, out_votes, 40).astype(np.int64)
    return Standing(worker_ids, j, votes=votes)


def test_a_worker_out_of_standing_on_enough_votes_is_withheld_except_on_the_explored_share_of_leases():
    standing = crowd_standing()
    assert standing.withholds(OUT, draw=0.5)
    assert not standing.withholds(OUT, draw=WITHHOLD_EXPLORE_SHARE / 2), "explored: the record keeps growing"
    assert not standing.withholds(100, draw=0.5), "in good standing"
    assert not standing.withholds(55, draw=0.5), "not fitted yet: stands at the crowd's average"
    assert not standing.withholds(10_000, draw=0.5)


def test_nobody_is_withheld_on_a_short_record_or_from_a_small_team_or_without_votes_counted():
    assert not crowd_standing(out_votes=WITHHOLD_MIN_VOTES - 1).withholds(OUT, draw=0.5)
    assert not crowd_standing(n_good=WITHHOLD_MIN_GOOD - 1).withholds(OUT, draw=0.5)
    no_record = crowd_standing()
    assert not Standing(no_record.worker_ids, no_record.j, np.zeros_like(no_record.votes)).withholds(
        OUT, draw=0.5
    )
    # `out_of_standing` is the same judgement without the draw: the policy draws only for such a worker.
    assert crowd_standing().out_of_standing(OUT) and not crowd_standing().out_of_standing(100)


def test_a_worker_out_of_standing_is_let_back_for_about_the_explored_share_of_fits_and_the_draw_replays():
    standing = crowd_standing()
    draws = [standing_lease.exploration_draw(OUT, "image_verify", clock) for clock in range(1000, 5000)]
    offered = np.mean([not standing.withholds(OUT, d) for d in draws])
    assert abs(offered - WITHHOLD_EXPLORE_SHARE) < 0.02
    # The same fit gives the same answer on every lease (a simulation replays); kinds draw apart.
    assert standing_lease.exploration_draw(OUT, "image_verify", 1000) == draws[0]
    assert standing_lease.exploration_draw(OUT, "hierarchy", 1000) != draws[0]


@pytest.mark.django_db
def test_the_lease_policy_keeps_the_kinds_questions_from_a_worker_out_of_standing_and_gives_the_rest(
    monkeypatch,
):
    out = factories.user_with_roles("out", ("workers",)).worker
    good = factories.user_with_roles("good", ("workers",)).worker
    verify = factories.TaskFactory(kind="question", topic="image_verify")
    other = factories.TaskFactory(dataset=verify.dataset)
    ids = np.array(sorted([out.pk, good.pk, *(good.pk + 1000 + i for i in range(WITHHOLD_MIN_GOOD))]))
    standing = Standing(ids, np.where(ids == out.pk, 0.05, 0.7), votes=np.full(ids.size, 40))
    monkeypatch.setattr(
        standing_lease, "cached_standing", lambda kind: (standing, 1234) if kind == "image_verify" else None
    )
    monkeypatch.setattr(
        standing_lease, "exploration_draw", lambda worker_id, kind, clock: 0.5
    )  # never explored

    assert queue.task_lease_next(worker=out).task_id == other.pk
    assert queue.task_lease_next(worker=out) is None, "the question is withheld"
    assert queue.task_lease_next(worker=good).task_id == verify.pk
    # A lease that wants only other task kinds is none of the policy's business.
    request = queue.LeaseRequest(kinds_wanted=("vote",), dataset_id=None)
    assert standing_lease.lease_policy(out, request, timezone.now()) is None
    # An explored draw offers the question again.
    monkeypatch.setattr(standing_lease, "exploration_draw", lambda worker_id, kind, clock: 0.0)
    assert (
        standing_lease.lease_policy(
            out, queue.LeaseRequest(kinds_wanted=None, dataset_id=None), timezone.now()
        )
        is None
    )


@pytest.mark.django_db
def test_the_starved_sweep_counts_a_worker_out_of_standing_as_unable_explored_share_or_not(
    monkeypatch,
):
    """A question only a withheld worker could still answer is starved, explored share or not; the sweep brings
    its process's kept fits up to date first, as it may run in a process that keeps none (a Celery worker)."""
    out = factories.user_with_roles("out", ("workers",)).worker
    verify = factories.TaskFactory(kind="question", topic="image_verify")
    other = factories.TaskFactory(dataset=verify.dataset)
    ids = np.array(sorted([out.pk, *(out.pk + 1000 + i for i in range(WITHHOLD_MIN_GOOD))]))
    standing = Standing(ids, np.where(ids == out.pk, 0.05, 0.7), votes=np.full(ids.size, 40))
    monkeypatch.setattr(
        standing_lease, "cached_standing", lambda kind: (standing, 1234) if kind == "image_verify" else None
    )
    monkeypatch.setattr(standing_lease, "exploration_draw", lambda worker_id, kind, clock: 0.0)  # explored
    assert (
        queue.task_lease_next(worker=out, kinds_wanted=["binary_vote"]).task_id == other.pk
    )  # one of the crowd now
    # An explored lease offers the question.
    assert verify.pk in set(queue.available_tasks(worker=out).values_list("pk", flat=True))

    later = timezone.now() + timezone.timedelta(days=1)
    assert queue.tasks_reachable(dataset_id=verify.dataset_id, task_ids={verify.pk}, now=later) == set()
    # Back in good standing, the same worker could take it.
    monkeypatch.setattr(standing_lease, "cached_standing", lambda kind: None)
    assert queue.tasks_reachable(dataset_id=verify.dataset_id, task_ids={verify.pk}, now=later) == {verify.pk}


@pytest.mark.django_db
def test_the_starved_sweep_brings_its_process_kept_fits_up_to_date_before_asking_who_can_take_a_question(
    monkeypatch,
):
    from consensus import starved

    refreshed = []
    monkeypatch.setattr(starved, "fit_with_standing", refreshed.append)
    assert starved.questions_starved(idle_seconds=0) == []
    assert refreshed == ["image_verify"], "once, the kind the policy withholds, not once per worker"


@pytest.mark.django_db
def test_the_lease_policy_leaves_algorithm_one_alone_and_withholds_verification_in_every_other_dataset(
    monkeypatch,
):
    """Algorithm 1's questions (its high-level `hierarchy` questions, and its leaves, asked as `image_verify` in a
    dataset running it) reach a worker out of good standing as before: on DET 200 the policy cost recall and
    reviewer time there (docs/consensus.md, *The good-standing policy and Algorithm 1*)."""
    out = factories.user_with_roles("out", ("workers",)).worker
    verify = factories.TaskFactory(kind="question", topic="image_verify")
    leaf = factories.TaskFactory(kind="question", topic="image_verify")
    inner = factories.TaskFactory(kind="question", topic="hierarchy", dataset=leaf.dataset, image=leaf.image)
    Question.objects.create(
        kind=QuestionKind.HIERARCHY,
        dataset=leaf.dataset,
        concept=factories.ConceptFactory(),
        image=leaf.image,
        task=inner,
    )
    ids = np.array(sorted([out.pk, *(out.pk + 1000 + i for i in range(WITHHOLD_MIN_GOOD))]))
    standing = Standing(ids, np.where(ids == out.pk, 0.05, 0.7), votes=np.full(ids.size, 40))
    monkeypatch.setattr(standing_lease, "cached_standing", lambda kind: (standing, 1234))
    monkeypatch.setattr(
        standing_lease, "exploration_draw", lambda worker_id, kind, clock: 0.5
    )  # never explored

    assert standing_lease.algorithm_one_datasets() == [leaf.dataset_id]
    # A lease naming its dataset (the sweep's look-ahead) asks about that one only.
    assert standing_lease.algorithm_one_datasets([verify.dataset_id]) == []
    assert standing_lease.algorithm_one_datasets([verify.dataset_id, leaf.dataset_id]) == [leaf.dataset_id]
    assert set(queue.available_tasks(worker=out).values_list("pk", flat=True)) == {leaf.pk, inner.pk}
    for dataset in (verify.dataset, leaf.dataset):  # one of each dataset's crowd now
        joined = factories.TaskFactory(dataset=dataset)
        assert queue.task_lease_next(worker=out, kinds_wanted=["binary_vote"]).task_id == joined.pk
    later = timezone.now() + timezone.timedelta(days=1)
    assert queue.tasks_reachable(dataset_id=leaf.dataset_id, task_ids={leaf.pk, inner.pk}, now=later) == {
        leaf.pk,
        inner.pk,
    }, "the starved sweep's look-ahead waits for them there too"
    assert queue.tasks_reachable(dataset_id=verify.dataset_id, task_ids={verify.pk}, now=later) == set()


@pytest.mark.django_db
def test_the_organizer_reads_each_workers_standing_and_who_the_policy_keeps_from_the_datasets_verification(
    monkeypatch, api_client, organizer, dataset
):
    """`GET /datasets/{id}/consensus-standing/`: a worker who sees no verification question can be looked up;
    only workers with a counted vote in the dataset are listed; in a dataset running Algorithm 1 nobody is
    withheld; another organizer's dataset is not found, and a worker reads nothing."""
    from consensus.models import Vote, VoteVoid

    out, good, newcomer, voided = (factories.user_with_roles(n, ("workers",)).worker for n in "ogny")
    elsewhere = factories.user_with_roles("elsewhere", ("workers",)).worker
    image = factories.ImageFactory(dataset=dataset)
    question = Question.objects.create(
        kind=QuestionKind.IMAGE_VERIFY, dataset=dataset, concept=factories.ConceptFactory(), image=image
    )
    for worker in (out, good, newcomer, voided):
        vote = Vote.objects.create(question=question, worker=worker, answer=True)
    VoteVoid.objects.create(vote=vote, reason="blocked")
    other = factories.DatasetFactory()
    Vote.objects.create(
        question=Question.objects.create(
            kind=QuestionKind.IMAGE_VERIFY,
            dataset=other,
            concept=question.concept,
            image=factories.ImageFactory(dataset=other),
        ),
        worker=elsewhere,
        answer=True,
    )
    crowd = [out.pk, good.pk, *(good.pk + 1000 + i for i in range(WITHHOLD_MIN_GOOD))]
    ids = np.array(sorted(crowd))
    standing = Standing(ids, np.where(ids == out.pk, 0.05, 0.7), votes=np.full(ids.size, 40))
    monkeypatch.setattr(standing_lease, "fit_with_standing", lambda kind: (None, standing, 600))

    response = api_client(organizer).get(f"/api/v1/datasets/{dataset.pk}/consensus-standing/")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (
        body["kind"] == "image_verify" and body["withholding"] is True and body["min_discrimination"] == 0.4
    )
    rows = {row["username"]: row for row in body["workers"]}
    assert set(rows) == {"o", "g", "n"}, "counted votes in this dataset only"
    assert rows["o"] == {
        "worker": out.pk,
        "username": "o",
        "discrimination": pytest.approx(0.05),
        "in_good_standing": False,
        "withheld": True,
    }
    assert rows["g"]["in_good_standing"] and not rows["g"]["withheld"]
    assert rows["n"]["discrimination"] is None and rows["n"]["in_good_standing"] and not rows["n"]["withheld"]

    # A dataset running Algorithm 1 (it holds a hierarchy question): nobody withheld there.
    Question.objects.create(
        kind=QuestionKind.HIERARCHY, dataset=dataset, concept=question.concept, image=image
    )
    body = api_client(organizer).get(f"/api/v1/datasets/{dataset.pk}/consensus-standing/").json()
    assert body["withholding"] is False and not any(row["withheld"] for row in body["workers"])

    # No fit of the kind yet: nobody judged, nobody withheld.
    monkeypatch.setattr(standing_lease, "fit_with_standing", lambda kind: None)
    body = api_client(organizer).get(f"/api/v1/datasets/{dataset.pk}/consensus-standing/").json()
    assert body["withholding"] is False
    assert [(r["discrimination"], r["in_good_standing"], r["withheld"]) for r in body["workers"]] == [
        (None, True, False)
    ] * 3

    assert api_client(organizer).get(f"/api/v1/datasets/{other.pk}/consensus-standing/").status_code == 404
    assert api_client(out.user).get(f"/api/v1/datasets/{dataset.pk}/consensus-standing/").status_code == 403
