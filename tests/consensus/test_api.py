"""Consensus API: organizers queue verification and read decisions, vote histories and tables of their own
datasets; workers read none of it, and the task they are served says nothing about votes, P or role."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation import queue
from consensus import creation, verification
from consensus.models import CalibrationTable, ConsensusSettings, Question, QuestionRole, QuestionState
from tests import factories
from tests.conftest import leased_task

from .conftest import make_images, make_workers

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def calibrated(dataset, concept):
    """A dataset whose 4 calibration questions have their votes and whose table exists."""
    ConsensusSettings.objects.create(
        dataset=dataset,
        calibration_min=4,
        calibration_max=4,
        calibration_votes=5,
        vote_cap=8,
        estimator="dynamic",
    )
    make_images(dataset, 10)
    verification.verification_queue(dataset=dataset, concept=concept)
    # Both answers in the batch, whichever 4 images the seeded draw made calibration questions (by image parity,
    # all four come out alike in 10 of the 210 draws, and a table learned from one class decides nothing).
    calibration = Question.objects.filter(dataset=dataset, role=QuestionRole.CALIBRATION).order_by("image_id")
    truth = {
        image_id: i % 2 == 0 for i, image_id in enumerate(calibration.values_list("image_id", flat=True))
    }
    for w in make_workers(5, prefix="cal"):
        for _ in range(4):
            a = queue.task_lease_next(worker=w)
            answer = {"answer": truth[a.task.question.image_id]}
            queue.assignment_submit(assignment=a, answer=answer, idempotency_key=f"k{a.pk}")
    assert CalibrationTable.objects.exists()
    return dataset


def test_organizer_queues_verification_for_their_dataset(api_client, organizer, dataset, concept):
    images = make_images(dataset, 30)
    response = api_client(organizer).post(
        f"/api/v1/datasets/{dataset.pk}/verification/",
        {"concept": concept.wnid, "images": [i.pk for i in images[:25]]},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json() == {
        "created": 25,
        "calibration": 20,
        "waiting": 5,
        "table_reused": False,
        "from_pool": False,
    }


def test_verification_refuses_unknown_concepts_and_foreign_images(api_client, organizer, dataset, concept):
    other = factories.DatasetFactory()
    foreign = make_images(other, 1)[0]
    client = api_client(organizer)
    r1 = client.post(f"/api/v1/datasets/{dataset.pk}/verification/", {"concept": "n0"}, format="json")
    r2 = client.post(
        f"/api/v1/datasets/{dataset.pk}/verification/",
        {"concept": concept.wnid, "images": [foreign.pk]},
        format="json",
    )
    r3 = client.post(f"/api/v1/datasets/{other.pk}/verification/", {"concept": concept.wnid}, format="json")
    assert (r1.status_code, r2.status_code, r3.status_code) == (400, 400, 404)
    assert "n0" in r1.json()["concept"] and str(foreign.pk) in r2.json()["images"]
    assert not Question.objects.exists()


def test_settings_are_read_and_patched_by_the_organizer(api_client, organizer, dataset):
    client = api_client(organizer)
    assert client.get(f"/api/v1/datasets/{dataset.pk}/consensus-settings/").json()["estimator"] == "weighted"
    r = client.patch(
        f"/api/v1/datasets/{dataset.pk}/consensus-settings/", {"estimator": "dynamic"}, format="json"
    )
    assert r.status_code == 200 and ConsensusSettings.objects.get(dataset=dataset).estimator == "dynamic"
    bad = client.patch(
        f"/api/v1/datasets/{dataset.pk}/consensus-settings/", {"calibration_votes": 20}, format="json"
    )
    assert bad.status_code == 400 and "calibration_votes" in bad.json()


def test_decisions_table_and_vote_history_for_the_organizer(api_client, organizer, calibrated, concept):
    client = api_client(organizer)
    page = client.get(f"/api/v1/datasets/{calibrated.pk}/decisions/", {"concept": concept.wnid}).json()
    assert page["count"] == 10
    decided = [r for r in page["results"] if r["decision"]]
    assert decided and all(r["role"] == "calibration" for r in decided)
    detail = client.get(f"/api/v1/questions/{decided[0]['id']}/").json()
    assert len(detail["votes"]) == 5 and {"worker", "answer", "created_at"} <= set(detail["votes"][0])
    assert detail["decisions"][0]["table"] == CalibrationTable.objects.get().pk
    table = client.get(f"/api/v1/concepts/{concept.wnid}/calibration").json()
    assert (table["n_images"], table["n_votes"], table["cap"]) == (4, 20, 12)
    assert len(table["probabilities"]) == 13 and len(table["probabilities"][12]) == 1
    assert "created_at" in table


def test_decision_list_costs_a_fixed_number_of_queries(api_client, organizer, calibrated):
    client = api_client(organizer)
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(f"/api/v1/datasets/{calibrated.pk}/decisions/").status_code == 200
    assert len(ctx) <= 6, [q["sql"] for q in ctx.captured_queries]


def test_workers_cannot_read_decisions_tables_questions_or_settings(api_client, worker, calibrated, concept):
    client = api_client(worker)
    question = Question.objects.first()
    for url in (
        f"/api/v1/datasets/{calibrated.pk}/decisions/",
        f"/api/v1/questions/{question.pk}/",
        f"/api/v1/concepts/{concept.wnid}/calibration",
        f"/api/v1/datasets/{calibrated.pk}/consensus-settings/",
    ):
        assert client.get(url).status_code == 403, url
    post = client.post(
        f"/api/v1/datasets/{calibrated.pk}/verification/", {"concept": concept.wnid}, format="json"
    )
    assert post.status_code == 403


def test_another_organizer_sees_nothing_of_the_dataset(api_client, calibrated, concept):
    stranger = factories.user_with_roles("stranger", ("organizers",))
    client = api_client(stranger)
    question = Question.objects.first()
    assert client.get(f"/api/v1/datasets/{calibrated.pk}/decisions/").status_code == 404
    assert client.get(f"/api/v1/questions/{question.pk}/").status_code == 404
    assert client.get(f"/api/v1/concepts/{concept.wnid}/calibration").status_code == 404


def test_the_worker_task_json_never_shows_votes_p_role_or_calibration(api_client, calibrated):
    worker = make_workers(1, prefix="fresh")[0]
    client = api_client(worker.user)
    seen_roles = set()
    for _ in range(6):
        response = client.get("/api/v1/tasks/next")
        if response.status_code == 204:
            break
        body = response.json()
        text = json.dumps(body).lower()
        for word in ("calibration", "production", "role", "yes_count", "no_count", '"p"', "gold", "vote"):
            assert word not in text, (word, body)
        assert set(body["task"]["payload"]) == {"question", "concept"}
        seen_roles.add(Question.objects.get(task_id=leased_task(body).pk).role)
        submit = client.post(
            f"/api/v1/assignments/{body['id']}/submit",
            {"answer": {"answer": True}},
            format="json",
            HTTP_IDEMPOTENCY_KEY=f"key-{body['id']}",
        )
        assert submit.status_code == 201
        assert "result" not in json.dumps(submit.json()["task"])
    assert QuestionRole.PRODUCTION in seen_roles or QuestionRole.CALIBRATION in seen_roles


def test_worker_page_serves_the_question_renderer(client):
    from django.contrib.staticfiles import finders

    path = finders.find("frontend/kinds/question.js")
    assert path, "the /worker/ page loads kinds/<kind>.js for every task kind"
    source = open(path).read()
    assert 'from "./binary_vote.js"' in source, "the yes/no page is shared, not copied"


def test_decided_questions_appear_in_state_filter(api_client, organizer, calibrated):
    client = api_client(organizer)
    waiting = client.get(f"/api/v1/datasets/{calibrated.pk}/decisions/", {"state": "waiting"}).json()
    assert waiting["count"] == Question.objects.filter(state=QuestionState.WAITING).count() == 0


def test_calibration_endpoint_serves_question_node_concepts_and_answers_unknown_concepts_in_json(
    api_client, organizer, dataset
):
    # Hierarchy question nodes have local concepts named like "q:vehicle"; their tables must be readable.
    node = factories.ConceptFactory(wnid="q:vehicle", name="vehicle (question)")
    image = make_images(dataset, 1)[0]
    Question.objects.create(dataset=dataset, kind="hierarchy", concept=node, image=image)
    client = api_client(organizer)
    missing_table = client.get("/api/v1/concepts/q:vehicle/calibration/?kind=hierarchy")
    assert missing_table.status_code == 404
    assert missing_table["Content-Type"].startswith("application/json")
    assert "no hierarchy calibration table for q:vehicle" in missing_table.json()["detail"]
    unknown = client.get("/api/v1/concepts/q:no-such-node/calibration/")
    assert unknown.status_code == 404 and unknown["Content-Type"].startswith("application/json")
    assert "q:no-such-node" in unknown.json()["detail"]


def test_the_calibration_table_of_a_hierarchy_question_node_is_readable(api_client, organizer, dataset):
    # Question nodes of a hierarchy are concepts named "q:..."; the URL once refused the colon (an HTML 404).
    from tests import factories

    node = factories.ConceptFactory(wnid="q:vehicle", name="vehicle", gloss="")
    creation.questions_create(
        dataset=dataset,
        kind="hierarchy",
        concept=node,
        targets=[creation.Target(image=make_images(dataset, 1)[0])],
    )
    response = api_client(organizer).get("/api/v1/concepts/q:vehicle/calibration/", {"kind": "hierarchy"})
    assert response.status_code == 404 and response["Content-Type"].startswith("application/json")
    assert "no hierarchy calibration table for q:vehicle yet" in response.json()["detail"]


def test_every_concept_of_the_shipped_hierarchies_has_a_calibration_url_answered_in_json(
    api_client, organizer, dataset
):
    # The platform's own concept ids: wnids and the question nodes' local "q:slug" concepts. A generated client
    # percent-encodes the colon (q%3Aanimal); both spellings reach the view, which answers in JSON.
    from pathlib import Path
    from urllib.parse import quote

    from django.core.management import call_command
    from django.urls import resolve, reverse

    from hierarchy.models import Concept

    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "hierarchies"
    for name in ("voc20", "ilsvrc_det200"):
        call_command("load_hierarchy", str(fixtures / f"{name}.json"), stdout=open("/dev/null", "w"))
    wnids = list(Concept.objects.values_list("wnid", flat=True))
    questions = [w for w in wnids if w.startswith("q:")]
    assert len(wnids) > 250 and questions
    for wnid in wnids:
        url = reverse("concept-calibration", kwargs={"wnid": wnid})
        assert resolve(url).kwargs == {"wnid": wnid}, url
    node = Concept.objects.get(wnid=questions[0])
    Question.objects.create(dataset=dataset, kind="hierarchy", concept=node, image=make_images(dataset, 1)[0])
    client = api_client(organizer)
    for spelled in (node.wnid, quote(node.wnid, safe="")):
        response = client.get(f"/api/v1/concepts/{spelled}/calibration/", {"kind": "hierarchy"})
        assert response.status_code == 404 and response["Content-Type"].startswith("application/json")
        assert f"no hierarchy calibration table for {node.wnid} yet" in response.json()["detail"]
