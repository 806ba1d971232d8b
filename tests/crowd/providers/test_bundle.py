"""The bundle: a provider session answers `size` micro-tasks of one kind, leased one at a time through the
queue, and completes when they are answered; the session token is its only credential."""

from __future__ import annotations

import pytest

from annotation.imagerefs import image_ref, image_ref_id
from annotation.models import Assignment, AssignmentState
from crowd.models import Bundle, BundleState, Provider, WorkerSource
from crowd.providers import base
from tests import factories
from tests.crowd.providers.conftest import answer_bundle, session_client

pytestmark = pytest.mark.django_db


def fake_bundle(dataset, ref="p1", worker=None):
    worker = worker or base.worker_for_external(source=WorkerSource.EXTERNAL, external_id=ref)
    return base.bundle_open(
        provider=Provider.FAKE, external_ref=ref, worker=worker, dataset=dataset, kind="binary_vote"
    )


def test_bundle_leases_one_item_at_a_time_through_the_queue_and_completes_when_answered(dataset, votes):
    bundle = fake_bundle(dataset)
    assert bundle.size == 3
    first = base.bundle_next(bundle)
    again = base.bundle_next(bundle)
    assert again.assignment.pk == first.assignment.pk  # a reload shows the same item, no second lease
    assert Assignment.objects.filter(worker=bundle.worker, state=AssignmentState.LEASED).count() == 1
    for n in range(3):
        step = base.bundle_next(bundle)
        step = base.bundle_submit(
            bundle, assignment_id=step.assignment.pk, answer={"answer": n % 2 == 0}, idempotency_key=f"k{n}"
        )
    bundle.refresh_from_db()
    assert (bundle.state, bundle.answered, bundle.short) == (BundleState.COMPLETE, 3, False)
    assert step.completion.code == f"FAKE-{bundle.pk}"
    done = base.bundle_next(bundle)
    assert done.assignment is None and done.completion is not None
    assert Assignment.objects.filter(worker=bundle.worker).count() == 3  # nothing leased after completion


def test_replayed_submit_counts_once_and_foreign_assignments_are_refused(dataset, votes, other_worker):
    bundle = fake_bundle(dataset)
    step = base.bundle_next(bundle)
    base.bundle_submit(bundle, assignment_id=step.assignment.pk, answer={"answer": True}, idempotency_key="k")
    replay = base.bundle_submit(
        bundle, assignment_id=step.assignment.pk, answer={"answer": True}, idempotency_key="k"
    )
    assert replay.replayed
    bundle.refresh_from_db()
    assert bundle.answered == 1
    from annotation import queue

    outside = queue.task_lease_next(worker=other_worker.worker)
    with pytest.raises(Assignment.DoesNotExist):
        base.bundle_submit(bundle, assignment_id=outside.pk, answer={"answer": True}, idempotency_key="x")


def test_bundle_completes_short_when_the_queue_runs_dry(dataset):
    factories.TaskFactory.create_batch(2, image__dataset=dataset)
    bundle = fake_bundle(dataset)  # default size (10) > 2 tasks
    for n in range(2):
        step = base.bundle_next(bundle)
        base.bundle_submit(
            bundle, assignment_id=step.assignment.pk, answer={"answer": True}, idempotency_key=f"{n}"
        )
    step = base.bundle_next(bundle)
    bundle.refresh_from_db()
    assert step.assignment is None and bundle.state == BundleState.COMPLETE and bundle.short


def test_a_session_reference_is_never_taken_over_by_another_worker(dataset, votes):
    fake_bundle(dataset, ref="p1")
    intruder = base.worker_for_external(source=WorkerSource.EXTERNAL, external_id="p2")
    with pytest.raises(base.SessionInvalid):
        fake_bundle(dataset, ref="p1", worker=intruder)


def test_session_tokens_are_signed_and_bound_to_their_bundle(dataset, votes):
    bundle = fake_bundle(dataset)
    token = base.session_token(bundle)
    assert base.session_bundle(token).pk == bundle.pk
    for forged in (token[:-2] + "xx", "", token.replace(":", ";", 1)):
        with pytest.raises(base.SessionInvalid):
            base.session_bundle(forged)


def test_bundle_api_needs_the_session_header_and_answers_the_bundle(dataset, votes):
    bundle = fake_bundle(dataset)
    client = session_client(base.session_token(bundle))
    assert session_client("forged").get("/api/v1/bundle/next").status_code == 401
    assert client.get("/api/v1/tasks/next").status_code in (401, 403)  # the token opens only the bundle API
    body = answer_bundle(client, 3)
    assert body["bundle"]["state"] == "complete"
    assert body["completion"]["code"] == f"FAKE-{bundle.pk}"
    assert Bundle.objects.get(pk=bundle.pk).answered == 3


def test_bundle_images_are_served_only_for_the_sessions_own_items(dataset, votes):
    bundle = fake_bundle(dataset)
    token = base.session_token(bundle)
    step = session_client(token).get("/api/v1/bundle/next").json()
    image = step["assignment"]["task"]["image"]
    client = session_client("unused")
    client.credentials()
    assert client.get(image["url"]).status_code == 200
    assert "id" not in image and image["url"].startswith(f"/api/v1/bundle/images/{image['ref']}?")
    mine = image_ref_id(image["ref"])
    other = next(t.image_id for t in votes if t.image_id != mine)
    assert client.get(f"/api/v1/bundle/images/{image_ref(other)}?session={token}").status_code == 404
    assert client.get(f"/api/v1/bundle/images/{image['ref']}?session=forged").status_code in (401, 403)


def test_a_bundle_step_carries_the_organizers_instructions_for_its_stage(dataset, votes):
    from annotation.instructions import instructions_set

    instructions_set(dataset=dataset, kind="binary_vote", text="Say yes only for real dogs.", user=None)
    token = base.session_token(fake_bundle(dataset))
    step = session_client(token).get("/api/v1/bundle/next").json()
    assert step["assignment"]["task"]["instructions"] == "Say yes only for real dogs."
