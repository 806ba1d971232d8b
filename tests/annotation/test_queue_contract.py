"""The queue's contract with the apps above it (issue 14, part 3): lease policies return terms the queue turns
into SQL itself, a draw from a reserved pool is leased like any task, kind handlers return their changes (an
in-memory change they do not return is not written), submit extras come back in the result (replays too), and
the Idempotency-Key is checked once, where it enters."""

from __future__ import annotations

import pytest

from annotation import hooks, kinds, queue
from annotation.models import Task
from tests import factories

RESERVED = "test-reserved"


@pytest.fixture
def policy():
    """Register a lease policy for one test; `policy.terms` is what it returns."""

    def lease_policy(worker, request, now):
        return lease_policy.terms

    lease_policy.terms = None
    hooks.register_lease_policy(lease_policy)
    yield lease_policy
    hooks.lease_policies.remove(lease_policy)


@pytest.fixture
def kind():
    """A task kind registered for one test; its handler is `kind["handler"]`."""
    current = {"handler": lambda assignment: None}
    kinds.register(
        kinds.TaskKind(
            name="contract_test",
            title="Contract test",
            clean_answer=lambda task, answer: dict(answer),
            on_submit=lambda assignment, writes: current["handler"](assignment),
        )
    )
    yield current
    kinds._registry.pop("contract_test")


def test_lease_terms_merge_their_conditions_and_keep_the_first_draw():
    a = queue.LeaseTerms(withheld_datasets=frozenset({1}), draw=queue.Draw(pool="p", task_ids=(5,)))
    b = queue.LeaseTerms(
        withheld_topics=frozenset({(2, "image_verify")}), draw=queue.Draw(pool="q", task_ids=(6,))
    )
    merged = queue.LeaseTerms.combined([a, None, b])
    assert merged.withheld_datasets == {1} and merged.withheld_topics == {(2, "image_verify")}
    assert merged.draw.pool == "p"
    with pytest.raises(ValueError):
        queue.Draw(pool="", task_ids=(1,))


def test_an_idempotency_key_is_checked_once_and_passed_on_as_it_is():
    key = queue.IdempotencyKey.parse("  abc ")
    assert key.value == "abc" and queue.IdempotencyKey.parse(key) is key
    for bad in ("", "   ", None, "x" * 129):
        with pytest.raises(queue.KeyInvalid):
            queue.IdempotencyKey.parse(bad)


@pytest.mark.django_db
def test_withheld_datasets_and_topics_keep_tasks_back_and_a_draw_leases_from_its_reserved_pool(policy):
    worker = factories.user_with_roles("w", ("workers",)).worker
    mine = factories.TaskFactory()
    other = factories.TaskFactory(kind="question", topic="image_verify")
    reserved = queue.task_create(
        kind="question", topic="image_verify", pool=RESERVED, dataset=other.dataset, image=other.image
    )
    assert {t.pk for t in queue.available_tasks(worker=worker)} == {mine.pk, other.pk}, (
        "a reserved pool is kept out"
    )

    policy.terms = queue.LeaseTerms(
        withheld_datasets=frozenset({mine.dataset_id}),
        withheld_topics=frozenset({(other.dataset_id, "image_verify")}),
    )
    assert queue.task_lease_next(worker=worker) is None

    policy.terms = queue.LeaseTerms(
        withheld_datasets=frozenset({mine.dataset_id}),
        withheld_topics=frozenset({(other.dataset_id, "image_verify")}),
        draw=queue.Draw(pool=RESERVED, task_ids=(reserved.pk,), note="why"),
    )
    drawn = queue.task_lease_next(worker=worker)
    assert drawn.task_id == reserved.pk and drawn.lease_note == "why"
    assert drawn.expires_at - drawn.leased_at == queue.lease_duration()
    # Drawn once: the queue never gives the worker that task again, so the draw finds nothing free and the lease
    # goes on from the open pool.
    policy.terms = queue.LeaseTerms(draw=queue.Draw(pool=RESERVED, task_ids=(reserved.pk,)))
    assert queue.task_lease_next(worker=worker).task.pool == queue.OPEN_POOL


@pytest.mark.django_db
def test_a_topic_withheld_everywhere_keeps_its_tasks_back_in_every_dataset_and_leaves_the_rest(policy):
    worker = factories.user_with_roles("w", ("workers",)).worker
    verify = [factories.TaskFactory(kind="question", topic="image_verify") for _ in range(2)]
    hierarchy = factories.TaskFactory(kind="question", topic="hierarchy", dataset=verify[0].dataset)
    policy.terms = queue.LeaseTerms(withheld_topics_everywhere=frozenset({"image_verify"}))
    assert {t.pk for t in queue.available_tasks(worker=worker)} >= {hierarchy.pk}
    assert not {t.pk for t in queue.available_tasks(worker=worker)} & {t.pk for t in verify}
    assert queue.task_lease_next(worker=worker).task_id == hierarchy.pk
    assert queue.task_lease_next(worker=worker) is None
    # A draw (gold's) is the policy's own choice: a topic withheld everywhere does not keep it back.
    reserved = queue.task_create(
        kind="question", topic="image_verify", pool=RESERVED, dataset=verify[0].dataset, image=verify[0].image
    )
    policy.terms = queue.LeaseTerms(
        withheld_topics_everywhere=frozenset({"image_verify"}),
        draw=queue.Draw(pool=RESERVED, task_ids=(reserved.pk,), note="gold"),
    )
    assert queue.task_lease_next(worker=worker).task_id == reserved.pk
    policy.terms = queue.LeaseTerms(withheld_topics_everywhere=frozenset({"image_verify"}))
    merged = queue.LeaseTerms.combined(
        [policy.terms, queue.LeaseTerms(withheld_topics_everywhere=frozenset({"x"}))]
    )
    assert merged.withheld_topics_everywhere == {"image_verify", "x"}


@pytest.mark.django_db
def test_a_topic_withheld_everywhere_stays_on_offer_in_the_datasets_it_is_kept_in(policy):
    worker = factories.user_with_roles("w", ("workers",)).worker
    kept, elsewhere = (factories.TaskFactory(kind="question", topic="image_verify") for _ in range(2))
    policy.terms = queue.LeaseTerms(
        withheld_topics_everywhere=frozenset({"image_verify"}),
        kept_in=frozenset({(kept.dataset_id, "image_verify")}),
    )
    assert {t.pk for t in queue.available_tasks(worker=worker)} == {kept.pk}
    assert queue.task_lease_next(worker=worker).task_id == kept.pk
    assert queue.task_lease_next(worker=worker) is None, "withheld in every other dataset"


def test_merged_terms_keep_a_pair_on_offer_only_where_no_policy_withholding_its_topic_everywhere_holds_it_back():
    keeps = queue.LeaseTerms(
        withheld_topics_everywhere=frozenset({"t"}), kept_in=frozenset({(1, "t"), (2, "t")})
    )
    assert queue.LeaseTerms.combined([keeps, queue.LeaseTerms(withheld_datasets=frozenset({9}))]).kept_in == {
        (1, "t"),
        (2, "t"),
    }, "a policy that does not withhold the topic leaves the pairs on offer"
    other = queue.LeaseTerms(withheld_topics_everywhere=frozenset({"t"}), kept_in=frozenset({(2, "t")}))
    assert keeps.merge(other).kept_in == {(2, "t")} == other.merge(keeps).kept_in
    strict = queue.LeaseTerms(withheld_topics_everywhere=frozenset({"t"}))
    assert keeps.merge(strict).kept_in == frozenset()


@pytest.mark.django_db
def test_the_queue_writes_the_change_a_handler_returns_and_nothing_it_only_did_in_memory(kind):
    worker = factories.user_with_roles("w", ("workers",)).worker

    def mutate_only(assignment):
        assignment.task.state, assignment.task.result = "done", {"sneaked": True}
        return None

    kind["handler"] = mutate_only
    task = factories.TaskFactory(kind="contract_test", answers_wanted=3)
    a = queue.task_lease_next(worker=worker, kinds_wanted=["contract_test"])
    queue.assignment_submit(assignment=a, answer={"x": 1}, idempotency_key="k1")
    task.refresh_from_db()
    assert (task.state, task.result, task.answers_count) == ("open", None, 1)

    kind["handler"] = lambda assignment: queue.TaskChange(state="done", result={"n": 2})
    other = factories.user_with_roles("v", ("workers",)).worker
    b = queue.task_lease_next(worker=other, kinds_wanted=["contract_test"])
    queue.assignment_submit(assignment=b, answer={"x": 2}, idempotency_key="k2")
    task.refresh_from_db()
    assert (task.state, task.result, task.answers_count) == ("done", {"n": 2}, 2)


@pytest.mark.django_db
def test_submit_extras_come_back_in_the_result_of_a_submit_and_of_its_replay(kind):
    worker = factories.user_with_roles("w", ("workers",)).worker
    kind["handler"] = lambda assignment: None
    calls = []

    def extras(assignment):
        calls.append(assignment.pk)
        return {"note": f"for {assignment.pk}"} if assignment.task.kind == "contract_test" else {}

    hooks.register_submit_extras(extras)
    try:
        factories.TaskFactory(kind="contract_test")
        a = queue.task_lease_next(worker=worker, kinds_wanted=["contract_test"])
        first = queue.assignment_submit(assignment=a, answer={"x": 1}, idempotency_key="k1")
        again = queue.assignment_submit(assignment=a, answer={"x": 1}, idempotency_key="k1")
    finally:
        hooks.submit_extras.remove(extras)
    assert (first.replayed, again.replayed) == (False, True)
    assert first.extras == again.extras == {"note": f"for {a.pk}"}
    assert calls == [a.pk, a.pk]


@pytest.mark.django_db
def test_tasks_made_through_the_queue_keep_the_order_they_are_given_and_its_own_fields_are_refused():
    dataset = factories.DatasetFactory()
    made = queue.tasks_create([Task(kind="binary_vote", dataset=dataset, payload={"n": i}) for i in range(5)])
    assert [t.payload["n"] for t in sorted(made, key=lambda t: t.pk)] == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError):
        queue.tasks_update([made[0].pk], pool="elsewhere")
    with pytest.raises(ValueError):
        queue.task_save(made[0], ["kind"])
