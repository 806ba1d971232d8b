"""External study links: a participant id becomes a signed session on one bundle; the completion code is
bound to participant and bundle, cannot be forged, moved or replayed; completions export as JSON and CSV."""

from __future__ import annotations

import csv
import io
import re

import pytest

from crowd.models import Bundle, StudyLink
from crowd.providers import base, external_link
from tests import factories
from tests.conftest import client_for
from tests.crowd.providers.conftest import answer_bundle, session_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(dataset, votes):
    return StudyLink.objects.create(
        dataset=dataset, kind="binary_vote", participant_param="PID", completion_redirect=""
    )


def visit(client, study, participant):
    response = client.get(f"/study/{study.key}/", {"PID": participant} if participant is not None else {})
    token = re.search(rb'data-session="([^"]+)"', response.content)
    return response, token.group(1).decode() if token else None


def finish(client, study, participant) -> dict:
    _, token = visit(client, study, participant)
    return answer_bundle(session_client(token), 3)


def test_a_participant_id_opens_one_resumable_session_and_a_bad_one_is_refused(client, study):
    for bad in (None, "", "a b", "x" * 65, "<script>"):
        response, token = visit(client, study, bad)
        assert response.status_code == 400 and token is None
        assert b"PID" in response.content  # the message names the parameter the link needs
    first, token = visit(client, study, "P-1")
    again, token2 = visit(client, study, "P-1")
    assert first.status_code == 200 and token and token2
    assert Bundle.objects.filter(provider="external").count() == 1


def test_completion_code_redeems_once_for_its_participant_only(client, study, organizer):
    code = finish(client, study, "alice")["completion"]["code"]
    bob_code = finish(client, study, "bob")["completion"]["code"]
    api = client_for(organizer)
    url = f"/api/v1/studies/{study.pk}/redeem"
    bundle_id, mac = code.split("-")
    forged = [
        {"participant": "alice", "code": f"{bundle_id}-{'0' * len(mac)}"},  # made-up MAC
        {"participant": "alice", "code": bob_code},  # another participant's bundle
        {"participant": "bob", "code": code},  # alice's code reported for bob
        {"participant": "alice", "code": "garbage"},
    ]
    for body in forged:
        assert api.post(url, body, format="json").status_code == 400, body
    ok = api.post(url, {"participant": "alice", "code": code.lower()}, format="json")
    assert ok.status_code == 200 and ok.json()["redeemed"] is True
    assert api.post(url, {"participant": "alice", "code": code}, format="json").status_code == 409  # replay


def test_many_codes_are_approved_at_once_each_reported_and_a_repeat_changes_nothing(client, study, organizer):
    codes = {name: finish(client, study, name)["completion"]["code"] for name in ("alice", "bob")}
    api = client_for(organizer)
    url = f"/api/v1/studies/{study.pk}/redeem-many"
    api.post(
        f"/api/v1/studies/{study.pk}/redeem", {"participant": "bob", "code": codes["bob"]}, format="json"
    )
    batch = [
        {"participant": "alice", "code": codes["alice"]},
        {"participant": "bob", "code": codes["alice"]},  # alice's code reported for bob
        {"participant": "bob", "code": codes["bob"]},  # accepted one at a time before
    ]
    reply = api.post(url, {"codes": batch}, format="json")
    assert reply.status_code == 200, reply.content
    body = reply.json()
    assert [(r["participant"], r["status"]) for r in body["results"]] == [
        ("alice", "redeemed"),
        ("bob", "refused"),
        ("bob", "already_redeemed"),
    ]
    assert (body["redeemed"], body["already_redeemed"], body["refused"]) == (1, 1, 1)
    assert "not issued" in body["results"][1]["detail"]
    assert body["results"][0]["bundle"] == int(codes["alice"].split("-")[0])
    rows = {r["participant"]: r for r in api.get(f"/api/v1/studies/{study.pk}/completions").json()}
    assert rows["alice"]["redeemed"] and rows["bob"]["redeemed"]

    again = api.post(url, {"codes": batch}, format="json").json()
    assert [r["status"] for r in again["results"]] == ["already_redeemed", "refused", "already_redeemed"]
    assert api.post(url, {"codes": []}, format="json").status_code == 400
    assert api.post(url, {"codes": [{"participant": "alice"}]}, format="json").status_code == 400
    stranger = client_for(factories.user_with_roles("o2", ("organizers",)))
    assert stranger.post(url, {"codes": batch}, format="json").status_code == 404


def test_a_code_from_another_study_is_refused(client, study, dataset, organizer):
    other = StudyLink.objects.create(dataset=dataset, kind="box_quality", participant_param="PID")
    code = finish(client, study, "alice")["completion"]["code"]
    with pytest.raises(external_link.CodeRefused):
        external_link.completion_redeem(study=other, participant="alice", code=code)


def test_completion_redirect_carries_the_code(client, study):
    study.completion_redirect = "https://marketplace.example/complete?cc={code}"
    study.save()
    completion = finish(client, study, "carol")["completion"]
    assert completion["redirect"] == f"https://marketplace.example/complete?cc={completion['code']}"


def test_completions_export_as_json_and_csv_with_pay_decisions(client, study, organizer):
    finish(client, study, "alice")
    api = client_for(organizer)
    rows = api.get(f"/api/v1/studies/{study.pk}/completions").json()
    assert [(r["participant"], r["answered"], r["recommendation"]) for r in rows] == [("alice", 3, "approve")]
    response = api.get(f"/api/v1/studies/{study.pk}/completions", {"export": "csv"})
    assert response["Content-Type"] == "text/csv"
    parsed = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert parsed[0]["code"] == rows[0]["code"] and parsed[0]["recommendation"] == "approve"
    assert api.get(f"/api/v1/studies/{study.pk}/completions", {"export": "xml"}).status_code == 400


def test_study_links_are_created_by_the_datasets_organizers_only(dataset, organizer, worker):
    from tests import factories

    stranger = factories.user_with_roles("stranger", ("organizers",))
    body = {"dataset": dataset.pk, "kind": "binary_vote", "participant_param": "PROLIFIC_PID"}
    assert client_for(stranger).post("/api/v1/studies", body, format="json").status_code == 400
    assert client_for(worker).post("/api/v1/studies", body, format="json").status_code == 403
    created = client_for(organizer).post("/api/v1/studies", body, format="json")
    assert created.status_code == 201 and created.json()["url"].startswith("/study/")
    bad = client_for(organizer).post("/api/v1/studies", {**body, "kind": "nope"}, format="json")
    assert bad.status_code == 400 and "known" in str(bad.json())
    assert client_for(stranger).get("/api/v1/studies").json()["results"] == []


@pytest.mark.django_db
def test_study_link_command_makes_the_link_once_and_exports_completions(dataset, votes):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    out = io.StringIO()
    call_command("study_link", dataset=dataset.name, kind="binary_vote", stdout=out)
    link = StudyLink.objects.get()
    assert out.getvalue().strip() == f"made study link: /study/{link.key}/?PROLIFIC_PID=<participant id>"
    again = io.StringIO()
    call_command("study_link", dataset=dataset.name, kind="binary_vote", stdout=again)
    assert again.getvalue().startswith("existing study link") and StudyLink.objects.count() == 1
    bundle = external_link.study_session_start(study=link, participant="P1")
    for n in range(bundle.size):
        step = base.bundle_next(bundle)
        base.bundle_submit(
            bundle, assignment_id=step.assignment.pk, answer={"answer": True}, idempotency_key=f"{n}"
        )
    csv_out = io.StringIO()
    call_command("study_link", dataset=dataset.name, kind="binary_vote", completions=True, stdout=csv_out)
    header, row = csv_out.getvalue().strip().splitlines()
    assert header.startswith("participant,bundle,code") and row.startswith(f"P1,{bundle.pk},{bundle.pk}-")
    with pytest.raises(CommandError, match="unknown task kind"):
        call_command("study_link", dataset=dataset.name, kind="nope")
