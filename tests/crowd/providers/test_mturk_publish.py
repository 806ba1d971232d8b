"""Publishing MTurk HITs: fees and the budget cap (checked before any call), HIT types with qualification
requirements, ExternalQuestion, and UniqueRequestToken so a retried publish never makes a second HIT. Every
call is checked by botocore's Stubber against MTurk's real service model."""

from __future__ import annotations

from decimal import Decimal

import pytest
from botocore.exceptions import ConnectionClosedError, ParamValidationError
from django.core.management import call_command
from django.core.management.base import CommandError

from crowd.models import HitState, MturkBudget, MturkHit
from crowd.providers import mturk
from tests.crowd.providers.mturk_helpers import NOW, stubbed_client

pytestmark = pytest.mark.django_db


def test_fees_are_20_percent_under_ten_assignments_and_40_percent_from_ten():
    assert mturk.cost_estimate(Decimal("0.50"), count=2, max_assignments=9) == Decimal("0.60") * 18
    assert mturk.cost_estimate(Decimal("0.50"), count=2, max_assignments=10) == Decimal("0.70") * 20
    assert mturk.assignment_cost(Decimal("0.01"), 3) == Decimal("0.02")  # the fee is at least a cent


def test_over_budget_is_refused_with_the_figures_before_any_call(hit_type, mturk_client):
    # The stubber has no responses queued: any call to MTurk would fail the test.
    with pytest.raises(CommandError, match=r"costs about \$210.00 .* has \$100.00 left"):
        call_command(
            "publish_hits", dataset=hit_type.dataset.name, kind="binary_vote", count=30, max_assignments=10
        )
    assert not MturkHit.objects.exists()


def test_publish_needs_a_budget_a_hit_type_and_an_https_address(hit_type, settings, mturk_client):
    with pytest.raises(CommandError, match="no MTurk HIT type for kind 'box_quality'"):
        call_command(
            "publish_hits", dataset=hit_type.dataset.name, kind="box_quality", count=1, max_assignments=1
        )
    with pytest.raises(CommandError, match="unknown task kind"):
        call_command("publish_hits", dataset=hit_type.dataset.name, kind="nope", count=1, max_assignments=1)
    settings.CROWDLABEL = {**settings.CROWDLABEL, "MTURK_PUBLIC_URL": "http://insecure.example"}
    with pytest.raises(CommandError, match="https://"):
        call_command(
            "publish_hits", dataset=hit_type.dataset.name, kind="binary_vote", count=1, max_assignments=1
        )
    MturkBudget.objects.all().delete()
    settings.CROWDLABEL = {**settings.CROWDLABEL, "MTURK_PUBLIC_URL": "https://crowdlabel.example"}
    with pytest.raises(CommandError, match="no MTurk budget cap"):
        call_command(
            "publish_hits", dataset=hit_type.dataset.name, kind="binary_vote", count=1, max_assignments=1
        )


def _hit_type_call(stubber):
    stubber.add_response(
        "create_hit_type",
        {"HITTypeId": "HITTYPE1"},
        {
            "AutoApprovalDelayInSeconds": 259200,
            "AssignmentDurationInSeconds": 3600,
            "Reward": "0.50",
            "Title": "Does the image show it?",
            "Keywords": "image, yes/no",
            "Description": "Answer yes or no about 3 images.",
            "QualificationRequirements": [
                {
                    "QualificationTypeId": mturk.APPROVAL_RATE_QUALIFICATION,
                    "Comparator": "GreaterThanOrEqualTo",
                    "IntegerValues": [95],
                    "ActionsGuarded": "DiscoverPreviewAndAccept",
                },
                {
                    "QualificationTypeId": mturk.LOCALE_QUALIFICATION,
                    "Comparator": "EqualTo",
                    "LocaleValues": [{"Country": "US"}],
                    "ActionsGuarded": "DiscoverPreviewAndAccept",
                },
            ],
        },
    )


def _create_params(hit: MturkHit) -> dict:
    return {
        "HITTypeId": "HITTYPE1",
        "MaxAssignments": 3,
        "LifetimeInSeconds": 604800,
        "Question": mturk.external_question(),
        "RequesterAnnotation": hit.request_token,
        "UniqueRequestToken": hit.request_token,
    }


def _hit(hit_id: str, annotation: str) -> dict:
    return {"HITId": hit_id, "HITTypeId": "HITTYPE1", "RequesterAnnotation": annotation, "CreationTime": NOW}


def test_publish_sends_an_external_question_with_the_rows_token(hit_type, mturk_client):
    batch = mturk.hits_plan(dataset=hit_type.dataset, kind="binary_vote", count=2, max_assignments=3)
    assert batch.estimated_cost == Decimal("3.60")
    hits = list(MturkHit.objects.filter(batch=batch.batch).order_by("id"))
    _hit_type_call(mturk_client)
    for n, hit in enumerate(hits):
        mturk_client.add_response(
            "create_hit_with_hit_type", {"HIT": _hit(f"HIT{n}", hit.request_token)}, _create_params(hit)
        )
    client = mturk.client()
    assert mturk.hits_publish(client, batch=batch.batch, sleep=lambda s: None) == 2
    assert sorted(MturkHit.objects.values_list("hit_id", "state")) == [
        ("HIT0", "published"),
        ("HIT1", "published"),
    ]
    question = mturk.external_question()
    assert "<ExternalURL>https://crowdlabel.example/mturk/task/</ExternalURL>" in question
    assert "<FrameHeight>800</FrameHeight>" in question
    assert mturk.hits_publish(client, batch=batch.batch) == 0  # a rerun has nothing left to send


def test_publish_retried_after_a_network_failure_makes_no_duplicate_hit(hit_type, mturk_client):
    """MTurk made the HIT but the answer was lost: the retry sends the same token, MTurk refuses a second HIT,
    and the HIT is found again through the paginated list by its annotation."""
    batch = mturk.hits_plan(dataset=hit_type.dataset, kind="binary_vote", count=1, max_assignments=3)
    hit = MturkHit.objects.get(batch=batch.batch)
    client = mturk.client()
    lost = {"n": 0}

    def lose_first_answer(**kwargs):
        if lost["n"] == 0:
            lost["n"] += 1
            raise ConnectionClosedError(endpoint_url=mturk.SANDBOX_ENDPOINT)

    client.meta.events.register("after-call.mturk.CreateHITWithHITType", lose_first_answer)
    _hit_type_call(mturk_client)
    mturk_client.add_response(
        "create_hit_with_hit_type", {"HIT": _hit("HITX", hit.request_token)}, _create_params(hit)
    )
    mturk_client.add_client_error(
        "create_hit_with_hit_type",
        service_error_code="RequestError",
        service_message="There is already a HIT with this UniqueRequestToken.",
        expected_params=_create_params(hit),
    )
    mturk_client.add_response(
        "list_hits", {"HITs": [_hit("OTHER", "someone-else")], "NextToken": "page2"}, {"MaxResults": 100}
    )
    mturk_client.add_response(
        "list_hits", {"HITs": [_hit("HITX", hit.request_token)]}, {"MaxResults": 100, "NextToken": "page2"}
    )
    slept = []
    assert mturk.hits_publish(client, batch=batch.batch, sleep=slept.append) == 1
    hit.refresh_from_db()
    assert (hit.hit_id, hit.state, slept) == ("HITX", HitState.PUBLISHED, [1.0])
    assert MturkHit.objects.count() == 1


def test_throttling_is_retried_with_backoff_and_parameter_errors_are_not():
    client, stubber = stubbed_client()
    for _ in range(2):
        stubber.add_client_error("list_hits", service_error_code="ThrottlingException", http_status_code=400)
    stubber.add_response("list_hits", {"HITs": []})
    slept = []
    with stubber:
        assert mturk.call(client, "list_hits", sleep=slept.append) == {"HITs": []}
        stubber.add_client_error("get_assignment", service_error_code="RequestError", http_status_code=400)
        with pytest.raises(ParamValidationError):  # the model's minimum length, checked before sending
            mturk.call(client, "get_assignment", sleep=slept.append, AssignmentId="")
        with pytest.raises(Exception, match="RequestError"):
            mturk.call(client, "get_assignment", sleep=slept.append, AssignmentId="A1")
    assert slept == [1.0, 2.0]  # two throttled attempts; nothing retried for the errors after


def test_the_client_is_the_sandbox_unless_production_is_explicit(settings):
    assert mturk.client().meta.endpoint_url == mturk.SANDBOX_ENDPOINT
    settings.CROWDLABEL = {**settings.CROWDLABEL, "MTURK_PRODUCTION": True}
    assert mturk.client().meta.endpoint_url == mturk.PRODUCTION_ENDPOINT


def test_organizer_api_plans_the_batch_and_publishes_it(
    hit_type, organizer, mturk_client, django_capture_on_commit_callbacks
):
    from tests.conftest import client_for

    body = {"dataset": hit_type.dataset_id, "kind": "binary_vote", "count": 1, "max_assignments": 3}
    _hit_type_call(mturk_client)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client_for(organizer).post("/api/v1/mturk/hits", body, format="json")
    assert response.status_code == 202 and response.json()["estimated_cost"] == "1.80"
    hit = MturkHit.objects.get()
    mturk_client.add_response(
        "create_hit_with_hit_type", {"HIT": _hit("HITA", hit.request_token)}, _create_params(hit)
    )
    for callback in callbacks:
        callback()
    hit.refresh_from_db()
    assert hit.hit_id == "HITA"
    over = client_for(organizer).post("/api/v1/mturk/hits", {**body, "count": 1000}, format="json")
    assert over.status_code == 400 and "budget" in str(over.json())


@pytest.mark.django_db
def test_one_command_goes_from_a_bare_dataset_to_published_hits(dataset, settings, mturk_client):
    """The HIT type and the budget made by the same publish_hits call: a dataset needs no admin step."""
    from io import StringIO

    from botocore.stub import ANY

    from crowd.models import MturkHitType

    settings.CROWDLABEL = {**settings.CROWDLABEL, "MTURK_PUBLIC_URL": "https://crowdlabel.example"}
    base = {"dataset": dataset.name, "kind": "binary_vote", "count": 1, "max_assignments": 3}
    with pytest.raises(CommandError, match="give a title and a reward"):
        call_command("publish_hits", **base, title="Yes or no?")
    with pytest.raises(CommandError, match="not an amount"):
        call_command("publish_hits", "--reward", "lots", **base)
    mturk_client.add_response(
        "create_hit_type",
        {"HITTypeId": "HITTYPE1"},
        {
            **dict.fromkeys(
                [
                    "AutoApprovalDelayInSeconds",
                    "AssignmentDurationInSeconds",
                    "Keywords",
                    "QualificationRequirements",
                ],
                ANY,
            ),
            "Reward": "0.25",
            "Title": "Yes or no?",
            "Description": "Yes or no?",
        },
    )
    mturk_client.add_response(
        "create_hit_with_hit_type",
        {"HIT": _hit("HITX", "t")},
        dict.fromkeys(
            [
                "HITTypeId",
                "MaxAssignments",
                "LifetimeInSeconds",
                "Question",
                "RequesterAnnotation",
                "UniqueRequestToken",
            ],
            ANY,
        ),
    )
    out = StringIO()
    call_command("publish_hits", "--reward", "0.25", "--budget", "5", **base, title="Yes or no?", stdout=out)
    assert (
        "published 1 HITs" in out.getvalue()
        and "about $0.90 with fees ($4.10 of the budget left)" in out.getvalue()
    )
    hit_type = MturkHitType.objects.get()
    assert (hit_type.title, hit_type.description, str(hit_type.reward)) == (
        "Yes or no?",
        "Yes or no?",
        "0.25",
    )
    assert str(MturkBudget.objects.get().cap) == "5.00"
    assert MturkHit.objects.get().hit_id == "HITX"
