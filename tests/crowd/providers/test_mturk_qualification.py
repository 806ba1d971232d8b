"""Our own MTurk qualification type: gold announces a passed qualification set (gold.events, gold never imports
crowd), crowd records a grant in the outbox within the same transaction, and the grant task makes the type
once per dataset and kind and grants it once, safely retried after a failure. HIT types that require it
list it in their QualificationRequirements. Every MTurk call goes through botocore's Stubber."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from consensus.models import QuestionKind
from crowd.models import MturkHitType, MturkQualificationGrant
from crowd.providers import base, mturk, mturk_qualification
from gold import events
from outbox.models import Message
from tests import factories
from tests.gold.conftest import gold_for, make_images, production_questions, small_qualification
from tests.gold.test_qualification import answer_qualification

pytestmark = pytest.mark.django_db

NAME = "Crowdlabel {} question qualified"


@pytest.fixture
def concept(db):
    return factories.ConceptFactory(wnid="n02123045", name="tabby cat", gloss="a cat with a striped coat")


@pytest.fixture
def question_hit_type(hit_type):
    hit_type.kind = "question"
    hit_type.save()
    return hit_type


def gated(dataset, concept):
    images = make_images(dataset, 30)
    production_questions(dataset, concept, images[:10])
    answers = {g.image_id: g.answer for g in gold_for(dataset, concept, images[10:])}
    small_qualification(dataset, qualification_size=8, qualification_pass=8)
    return answers


def test_a_passed_qualification_set_records_one_grant_in_the_outbox_for_mturk_workers_only(
    dataset, concept, question_hit_type, monkeypatch
):
    heard = []
    hooks = [*events.qualification_passed_hooks, lambda *args: heard.append(args)]
    monkeypatch.setattr(events, "qualification_passed_hooks", hooks)
    answers = gated(dataset, concept)
    turker = base.worker_for_external(source="mturk", external_id="WORKER1")
    inhouse = factories.user_with_roles("in1", ("workers",)).worker
    answer_qualification(turker, answers, [True] * 8)
    answer_qualification(inhouse, answers, [True] * 8)
    assert heard == [
        (turker, dataset.pk, QuestionKind.IMAGE_VERIFY, "question"),
        (inhouse, dataset.pk, QuestionKind.IMAGE_VERIFY, "question"),
    ]
    grants = list(
        Message.objects.filter(task_name=mturk_qualification.GRANT_TASK).values_list("args", flat=True)
    )
    assert grants == [[turker.pk, dataset.pk, "question"]]


def test_a_failed_qualification_set_announces_nothing(dataset, concept, question_hit_type):
    answers = gated(dataset, concept)
    turker = base.worker_for_external(source="mturk", external_id="WORKER1")
    answer_qualification(turker, answers, [False] + [True] * 7)
    assert not Message.objects.filter(task_name=mturk_qualification.GRANT_TASK).exists()


def created(stubber, dataset_name, type_id="QT1"):
    stubber.add_response(
        "create_qualification_type",
        {"QualificationType": {"QualificationTypeId": type_id, "Name": NAME.format(dataset_name)}},
        {
            "Name": NAME.format(dataset_name),
            "Keywords": "crowdlabel, qualification",
            "Description": "Passed the check questions of 'Does the image show it?'.",
            "QualificationTypeStatus": "Active",
        },
    )


def associated(stubber, worker_id="WORKER1", type_id="QT1"):
    stubber.add_response(
        "associate_qualification_with_worker",
        {},
        {"QualificationTypeId": type_id, "WorkerId": worker_id, "IntegerValue": 1, "SendNotification": True},
    )


def grant(hit_type, worker):
    return mturk_qualification.qualification_grant(
        mturk.client(), worker_id=worker.pk, dataset_id=hit_type.dataset_id, kind=hit_type.kind
    )


def test_the_type_is_made_once_and_each_worker_granted_once(dataset, question_hit_type, mturk_client):
    first = base.worker_for_external(source="mturk", external_id="WORKER1")
    second = base.worker_for_external(source="mturk", external_id="WORKER2")
    created(mturk_client, dataset.name)
    associated(mturk_client)
    assert grant(question_hit_type, first) is True
    associated(mturk_client, "WORKER2")
    assert grant(question_hit_type, second) is True  # the stored type: no second creation
    assert grant(question_hit_type, first) is False  # a repeated task calls nothing
    question_hit_type.refresh_from_db()
    assert question_hit_type.qualification_type_id == "QT1"
    assert MturkQualificationGrant.objects.filter(granted_at__isnull=False).count() == 2


def test_a_creation_whose_answer_was_lost_finds_the_type_by_its_name(
    dataset, question_hit_type, mturk_client
):
    mturk_client.add_client_error(
        "create_qualification_type",
        service_error_code="RequestError",
        service_message="You have already created a QualificationType with this name.",
        http_status_code=400,
    )
    mturk_client.add_response(
        "list_qualification_types",
        {
            "QualificationTypes": [
                {"QualificationTypeId": "OTHER", "Name": "Crowdlabel other question qualified"},
                {"QualificationTypeId": "QT9", "Name": NAME.format(dataset.name)},
            ]
        },
        {
            "Query": NAME.format(dataset.name),
            "MustBeRequestable": False,
            "MustBeOwnedByCaller": True,
            "MaxResults": 100,
        },
    )
    assert mturk_qualification.qualification_type_ensure(mturk.client(), question_hit_type) == "QT9"


def test_a_grant_mturk_failed_is_sent_again_by_the_retry(dataset, question_hit_type, mturk_client):
    worker = base.worker_for_external(source="mturk", external_id="WORKER1")
    created(mturk_client, dataset.name)
    mturk_client.add_client_error(
        "associate_qualification_with_worker", service_error_code="InternalServerError", http_status_code=500
    )
    with pytest.raises(ClientError):
        grant(question_hit_type, worker)
    assert MturkQualificationGrant.objects.get().granted_at is None
    associated(mturk_client)
    assert grant(question_hit_type, worker) is True
    assert MturkQualificationGrant.objects.get().granted_at is not None


def test_nothing_is_granted_to_other_workers_or_without_a_hit_type(dataset, hit_type, mturk_client):
    inhouse = factories.user_with_roles("in1", ("workers",)).worker
    turker = base.worker_for_external(source="mturk", external_id="WORKER1")
    assert grant(hit_type, inhouse) is False
    assert (
        mturk_qualification.qualification_grant(
            mturk.client(), worker_id=turker.pk, dataset_id=dataset.pk, kind="box_draw"
        )
        is False
    )


def test_a_hit_type_requiring_it_lists_it_after_the_system_qualifications(
    dataset, question_hit_type, mturk_client
):
    question_hit_type.require_qualification = True
    question_hit_type.min_approved = 100
    question_hit_type.save()
    created(mturk_client, dataset.name)
    requirements = [
        {
            "QualificationTypeId": mturk.APPROVAL_RATE_QUALIFICATION,
            "Comparator": "GreaterThanOrEqualTo",
            "IntegerValues": [95],
            "ActionsGuarded": "DiscoverPreviewAndAccept",
        },
        {
            "QualificationTypeId": mturk.APPROVED_COUNT_QUALIFICATION,
            "Comparator": "GreaterThanOrEqualTo",
            "IntegerValues": [100],
            "ActionsGuarded": "DiscoverPreviewAndAccept",
        },
        {
            "QualificationTypeId": mturk.LOCALE_QUALIFICATION,
            "Comparator": "EqualTo",
            "LocaleValues": [{"Country": "US"}],
            "ActionsGuarded": "DiscoverPreviewAndAccept",
        },
        {"QualificationTypeId": "QT1", "Comparator": "Exists", "ActionsGuarded": "Accept"},
    ]
    params = {**mturk.hit_type_params(question_hit_type), "QualificationRequirements": requirements}
    mturk_client.add_response("create_hit_type", {"HITTypeId": "HT1"}, params)
    assert mturk.hit_type_ensure(mturk.client(), question_hit_type) == "HT1"
    assert mturk.hit_type_ensure(mturk.client(), question_hit_type) == "HT1"  # unchanged: no call
    # A changed setting makes the HIT type again (MTurk answers with the id of those settings).
    MturkHitType.objects.filter(pk=question_hit_type.pk).update(reward="0.60")
    question_hit_type.refresh_from_db()
    mturk_client.add_response(
        "create_hit_type", {"HITTypeId": "HT2"}, mturk.hit_type_params(question_hit_type)
    )
    assert mturk.hit_type_ensure(mturk.client(), question_hit_type) == "HT2"
