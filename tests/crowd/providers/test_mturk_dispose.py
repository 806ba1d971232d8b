"""Ending the HITs of finished work: each is expired once (nobody new accepts it), and deleted only when MTurk
holds it Reviewable with every submitted assignment approved or rejected; a dataset with tasks still open
keeps its HITs. Every call goes through botocore's Stubber against MTurk's service model."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from botocore.stub import ANY
from django.core.management import call_command

from annotation.models import Task, TaskState
from crowd.models import HitState, MturkHit
from crowd.providers import mturk, mturk_sync
from tests.crowd.providers.mturk_helpers import assignment

pytestmark = pytest.mark.django_db

SUBMITTED = {"MaxResults": 100, "AssignmentStatuses": ["Submitted"]}


def hit_status(stubber, hit_id, status, pending=0):
    stubber.add_response(
        "get_hit",
        {"HIT": {"HITId": hit_id, "HITStatus": status, "NumberOfAssignmentsPending": pending}},
        {"HITId": hit_id},
    )


def expire(stubber, hit_id):
    stubber.add_response("update_expiration_for_hit", {}, {"HITId": hit_id, "ExpireAt": ANY})


@pytest.fixture
def two_hits(published_hit, votes):
    """Two HITs of finished work: every task of their kind is done."""
    Task.objects.update(state=TaskState.DONE)
    second = MturkHit.objects.create(
        hit_type=published_hit.hit_type,
        batch="b",
        request_token="tok-2",
        hit_id="HIT2",
        max_assignments=3,
        estimated_cost=published_hit.estimated_cost,
        state=HitState.PUBLISHED,
    )
    return published_hit, second


def states():
    return dict(MturkHit.objects.values_list("hit_id", "state"))


def test_finished_work_is_expired_once_and_deleted_when_mturk_releases_it(two_hits, mturk_client):
    # Run 1 (the command): both expired; HIT1 is released and deleted, HIT2 still has a worker on it.
    for hit_id in ("HIT1", "HIT2"):
        mturk_client.add_response(
            "list_assignments_for_hit", {"Assignments": []}, {"HITId": hit_id, **SUBMITTED}
        )
    expire(mturk_client, "HIT1")
    hit_status(mturk_client, "HIT1", "Reviewable")
    mturk_client.add_response("list_assignments_for_hit", {"Assignments": []}, {"HITId": "HIT1", **SUBMITTED})
    mturk_client.add_response("delete_hit", {}, {"HITId": "HIT1"})
    expire(mturk_client, "HIT2")
    hit_status(mturk_client, "HIT2", "Unassignable", pending=1)
    out = StringIO()
    call_command("sync_hits", dispose_finished=True, stdout=out)
    body = json.loads(out.getvalue())
    assert (body["hits_expired"], body["hits_deleted"], body["hits_kept"]) == (2, 1, 1)
    assert states() == {"HIT1": "disposed", "HIT2": "expired"}

    # Run 2: HIT2 is not expired again; its worker submitted, and an undecided assignment keeps it.
    hit_status(mturk_client, "HIT2", "Reviewable")
    mturk_client.add_response(
        "list_assignments_for_hit",
        {"Assignments": [assignment("A2", "W2", hit_id="HIT2")]},
        {"HITId": "HIT2", **SUBMITTED},
    )
    report = mturk_sync.hits_dispose_finished(mturk.client())
    assert (report.expired, report.deleted, report.kept) == (0, 0, 1)

    # Run 3: everything decided, so it is deleted; a fourth run finds nothing left to do.
    hit_status(mturk_client, "HIT2", "Reviewable")
    mturk_client.add_response("list_assignments_for_hit", {"Assignments": []}, {"HITId": "HIT2", **SUBMITTED})
    mturk_client.add_response("delete_hit", {}, {"HITId": "HIT2"})
    assert mturk_sync.hits_dispose_finished(mturk.client()).deleted == 1
    assert states() == {"HIT1": "disposed", "HIT2": "disposed"}
    assert mturk_sync.hits_dispose_finished(mturk.client()) == mturk_sync.DisposeReport()


def test_a_dataset_with_open_tasks_or_none_yet_keeps_its_hits(published_hit, votes, mturk_client):
    # The stubber holds nothing: any call to MTurk would fail the test.
    second = MturkHit.objects.create(
        hit_type=published_hit.hit_type,
        batch="b",
        request_token="tok-2",
        hit_id="HIT2",
        max_assignments=3,
        estimated_cost=published_hit.estimated_cost,
        state=HitState.PUBLISHED,
    )
    Task.objects.exclude(pk=votes[0].pk).update(state=TaskState.DONE)  # one task still open
    assert mturk_sync.dataset_kinds_finished() == []
    Task.objects.all().delete()  # HITs published before any task was queued
    assert mturk_sync.dataset_kinds_finished() == [] and second.state == HitState.PUBLISHED
    assert mturk_sync.hits_dispose_finished(mturk.client()) == mturk_sync.DisposeReport()
    assert states() == {"HIT1": "published", "HIT2": "published"}


def test_delete_refused_by_mturk_keeps_the_hit_for_the_next_run(published_hit, mturk_client):
    expire(mturk_client, "HIT1")
    hit_status(mturk_client, "HIT1", "Reviewable")
    mturk_client.add_response("list_assignments_for_hit", {"Assignments": []}, {"HITId": "HIT1", **SUBMITTED})
    mturk_client.add_client_error("delete_hit", service_error_code="RequestError", http_status_code=400)
    report = mturk_sync.hits_dispose(mturk.client(), dataset_id=published_hit.hit_type.dataset_id)
    assert (report.expired, report.deleted, report.kept) == (1, 0, 1)
    assert states() == {"HIT1": "expired"}


def test_dispose_of_one_dataset_needs_its_name(published_hit):
    with pytest.raises(Exception, match="needs --dataset"):
        call_command("sync_hits", dispose=True)
