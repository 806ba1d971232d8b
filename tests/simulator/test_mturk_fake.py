"""The fake MTurk marketplace keeps MTurk's rules the platform depends on, so a simulated run through it can
fail the way a real one would: parameters checked against botocore's service model, GetAssignment silent
until submission, one use per UniqueRequestToken, approval only of submitted work and only once, deletion
only of Reviewable HITs with nothing left to decide, and the externalSubmit form only for an accepted
assignment at MTurk's path."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from botocore.exceptions import ClientError, ParamValidationError

from simulator.mturk_fake import FakeMturk

SUBMIT = "https://workersandbox.mturk.com/mturk/externalSubmit"


@pytest.fixture
def market():
    fake = FakeMturk()
    hit_type = fake.create_hit_type(
        AssignmentDurationInSeconds=600, Reward="0.20", Title="t", Description="d"
    )["HITTypeId"]
    fake.create_hit_with_hit_type(
        HITTypeId=hit_type, MaxAssignments=1, LifetimeInSeconds=600, Question="<q/>", UniqueRequestToken="tok"
    )
    return fake


def test_parameters_are_checked_against_the_service_model(market):
    with pytest.raises(ParamValidationError):
        market.approve_assignment(AssignmentID="x")  # misspelt: MTurk's model has AssignmentId
    with pytest.raises(ParamValidationError):
        market.create_hit_type(Reward="0.20", Title="t")  # required fields missing


def test_a_token_is_used_once(market):
    (hit_type,) = {t["HITTypeId"] for t in market.hit_types.values()}
    with pytest.raises(ClientError, match="UniqueRequestToken"):
        market.create_hit_with_hit_type(
            HITTypeId=hit_type,
            MaxAssignments=1,
            LifetimeInSeconds=60,
            Question="<q/>",
            UniqueRequestToken="tok",
        )
    assert len(market.hits) == 1


def test_an_assignment_is_invisible_until_submitted_and_approved_once(market):
    accepted = market.accept("W1")
    assert market.accept("W2") is None  # one assignment per HIT, taken
    with pytest.raises(ClientError, match="status of: Submitted"):
        market.get_assignment(AssignmentId=accepted.assignment_id)
    with pytest.raises(ValueError):
        market.external_submit("https://evil.example/collect", {"assignmentId": accepted.assignment_id})
    market.external_submit(SUBMIT, {"assignmentId": accepted.assignment_id})
    assert market.get_assignment(AssignmentId=accepted.assignment_id)["Assignment"]["WorkerId"] == "W1"
    market.approve_assignment(AssignmentId=accepted.assignment_id)
    with pytest.raises(ClientError):
        market.approve_assignment(AssignmentId=accepted.assignment_id)
    assert market.report()["approve_calls"] == 2 and market.report()["assignments_approved"] == 1


def test_a_hit_is_deleted_only_when_reviewable_with_nothing_to_decide(market):
    (hit_id,) = market.hits
    accepted = market.accept("W1")
    market.update_expiration_for_hit(HITId=hit_id, ExpireAt=datetime.now(UTC))
    with pytest.raises(ClientError):
        market.delete_hit(HITId=hit_id)  # a worker is still on it
    market.external_submit(SUBMIT, {"assignmentId": accepted.assignment_id})
    with pytest.raises(ClientError):
        market.delete_hit(HITId=hit_id)  # submitted, not yet decided
    market.reject_assignment(AssignmentId=accepted.assignment_id, RequesterFeedback="no")
    assert market.get_hit(HITId=hit_id)["HIT"]["HITStatus"] == "Reviewable"
    market.delete_hit(HITId=hit_id)
    assert market.report()["hits_deleted"] == 1
