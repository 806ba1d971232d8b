"""Why work stopped, on the organizer's dataset page (a small crowd stalled silently: every worker saw "No tasks
are waiting" while the page said "about 2 h left"): questions no worker of the dataset can take any more, with
"settle now"; calibration that needs more distinct workers than the crowd has, with "lower the calibration
votes"; nothing when work can go on."""

from __future__ import annotations

import pytest

from annotation.models import AuditEntry
from consensus.creation import Target, questions_create
from consensus.models import Question, QuestionKind, QuestionRole, QuestionState
from tests import factories
from tests.annotation.boxhelpers import answer
from tests.conftest import client_for
from tests.consensus.conftest import concept, make_images, make_workers, small_settings  # noqa: F401
from tests.consensus.test_starved import split_question  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


def stalls(organizer, dataset) -> list[dict]:
    reply = client_for(organizer).get(f"/api/v1/datasets/{dataset.pk}/stalls")
    assert reply.status_code == 200, reply.content
    return reply.json()["stalls"]


def test_a_fresh_dataset_has_no_stall_and_another_tenant_cannot_look(organizer, dataset):
    assert stalls(organizer, dataset) == []
    other = factories.user_with_roles("other-org", ("organizers",))
    assert client_for(other).get(f"/api/v1/datasets/{dataset.pk}/stalls").status_code == 404
    assert client_for(other).post(f"/api/v1/datasets/{dataset.pk}/stalls/settle").status_code == 404


def test_questions_nobody_can_take_are_named_and_settled_from_the_page(
    organizer,
    dataset,
    split_question,  # noqa: F811
):
    (stall,) = stalls(organizer, dataset)
    assert (stall["code"], stall["count"], stall["stages"], stall["actions"]) == (
        "starved_questions",
        1,
        ["verification"],
        ["settle", "invite"],
    )
    assert "1 open question (image_verify) need a voter who has not answered yet" in stall["message"]
    reply = client_for(organizer).post(f"/api/v1/datasets/{dataset.pk}/stalls/settle")
    assert reply.status_code == 200, reply.content
    assert reply.json() == {"settled": {"review": 1}, "stalls": []}
    split_question.refresh_from_db()
    assert split_question.state == QuestionState.REVIEW
    assert AuditEntry.objects.get(action="stalls.settle").result == {"settled": {"review": 1}}


def test_calibration_a_small_crowd_cannot_finish_is_explained_with_the_setting_to_lower(
    organizer,
    dataset,
    concept,  # noqa: F811
):
    small_settings(dataset, calibration_votes=5)
    questions_create(
        dataset=dataset,
        kind=QuestionKind.IMAGE_VERIFY,
        concept=concept,
        targets=[Target(image=img) for img in make_images(dataset, 6)],
    )
    calibrating = Question.objects.filter(role=QuestionRole.CALIBRATION, state=QuestionState.OPEN).count()
    assert calibrating == 4
    for worker in make_workers(2):
        answer(worker, "question", {"answer": True})
    found = {s["code"]: s for s in stalls(organizer, dataset)}
    stall = found["calibration_short"]
    assert stall["crowd"] == 2 and stall["actions"] == ["lower_calibration_votes", "invite"]
    assert stall["message"].startswith("Calibration needs 5 distinct workers per question; 2 have worked")
    assert "2 questions wait for their tables" in stall["message"]
    # The page's action: the calibration votes lowered to the crowd's size, and the stall is gone.
    reply = client_for(organizer).patch(
        f"/api/v1/datasets/{dataset.pk}/consensus-settings", {"calibration_votes": 2}, format="json"
    )
    assert reply.status_code == 200, reply.content
    assert "calibration_short" not in {s["code"] for s in stalls(organizer, dataset)}
