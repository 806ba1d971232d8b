"""Example images per concept and task kind (issue 17): organizers attach what counts and what does not through
the API, checked like ingested images; a handed-out task carries the URLs of its concept's and kind's examples,
identical for gold and ordinary tasks; the files go only to people with a reason to see them."""

from __future__ import annotations

import pytest

from annotation.models import ConceptExample, ExampleState
from gold.models import GoldServing, GoldSettings, Purpose
from tests import factories
from tests.conftest import client_for, leased_task, png_bytes
from tests.gold.conftest import gold_for, make_images, make_workers, production_questions, small_qualification

pytestmark = pytest.mark.django_db


def upload(
    client, dataset, concept, *, kind="binary_vote", polarity="positive", data=None, caption="", name="a.png"
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return client.post(
        f"/api/v1/datasets/{dataset.pk}/examples",
        {
            "concept": concept.wnid,
            "kind": kind,
            "polarity": polarity,
            "caption": caption,
            "file": SimpleUploadedFile(name, data if data is not None else png_bytes(seed=1)),
        },
        format="multipart",
    )


@pytest.fixture
def concept(db):
    return factories.ConceptFactory(wnid="n02084071", name="dog", gloss="a domesticated canid")


def test_an_organizer_attaches_a_positive_and_a_negative_example_and_lists_them(organizer, dataset, concept):
    client = client_for(organizer)
    first = upload(client, dataset, concept, caption="a dog seen from the side")
    assert first.status_code == 201, first.content
    second = upload(client, dataset, concept, polarity="negative", data=png_bytes(seed=2), caption="a wolf")
    assert second.status_code == 201, second.content
    assert first.json()["url"] == f"/api/v1/examples/{first.json()['id']}/file"
    listed = client.get(f"/api/v1/datasets/{dataset.pk}/examples?concept={concept.wnid}").json()["results"]
    assert [(e["polarity"], e["caption"], e["state"]) for e in listed] == [
        ("positive", "a dog seen from the side", "shown"),
        ("negative", "a wolf", "shown"),
    ]
    stored = ConceptExample.objects.get(pk=first.json()["id"])
    assert stored.file.read() == png_bytes(seed=1) and (stored.width, stored.height) == (64, 48)
    assert stored.created_by == organizer


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"data": b"not an image at all"}, "not an image file"),
        ({"data": b""}, "the file is empty"),
        ({"kind": "no_such_kind"}, "unknown task kind"),
    ],
)
def test_an_example_is_checked_like_an_ingested_image(organizer, dataset, concept, fields, reason):
    response = upload(client_for(organizer), dataset, concept, **fields)
    assert response.status_code == 400
    assert reason in response.json()["file"][0]
    assert not ConceptExample.objects.exists()


def test_the_same_image_twice_for_one_concept_and_kind_is_refused(organizer, dataset, concept):
    client = client_for(organizer)
    assert upload(client, dataset, concept).status_code == 201
    again = upload(client, dataset, concept)
    assert again.status_code == 400 and "already" in again.json()["file"][0]
    assert upload(client, dataset, concept, kind="question").status_code == 201  # another kind: fine


def test_only_the_datasets_organizers_attach_examples(worker, dataset, concept):
    other = factories.user_with_roles("other-organizer", ("organizers",))
    assert upload(client_for(worker), dataset, concept).status_code == 403
    assert upload(client_for(other), dataset, concept).status_code == 404
    assert not ConceptExample.objects.exists()


def test_a_leased_task_carries_its_concepts_and_kinds_examples_and_a_removed_one_goes(
    organizer, dataset, concept, worker
):
    client = client_for(organizer)
    shown = upload(client, dataset, concept, caption="a dog").json()
    removed = upload(client, dataset, concept, polarity="negative", data=png_bytes(seed=2)).json()
    upload(client, dataset, concept, kind="question", data=png_bytes(seed=3))  # another kind's page
    cat = factories.ConceptFactory(wnid="n02121808", name="cat")
    upload(client, dataset, cat, data=png_bytes(seed=4))  # another concept
    response = client.post(f"/api/v1/datasets/{dataset.pk}/examples/{removed['id']}/remove")
    assert response.status_code == 200 and response.json()["state"] == ExampleState.REMOVED
    image = factories.ImageFactory(dataset=dataset)
    factories.TaskFactory(dataset=dataset, image=image, concept=concept)

    body = client_for(worker).get("/api/v1/tasks/next").json()
    assert body["task"]["examples"] == [
        {"url": shown["url"], "polarity": "positive", "caption": "a dog", "width": 64, "height": 48}
    ]
    # The worker holding a task of the dataset may load the example's bytes; the removed one is gone.
    assert client_for(worker).get(shown["url"]).status_code == 200
    assert client_for(worker).get(removed["url"]).status_code == 404
    held = client_for(worker).get("/api/v1/assignments?held=true").json()["results"]
    assert held[0]["task"]["examples"] == body["task"]["examples"]


def test_the_lease_statement_hands_out_the_examples_the_lookup_finds_in_the_same_order(
    organizer, dataset, concept, worker
):
    """On PostgreSQL the lease statement selects the examples itself; a held task's are looked up: the two
    must agree, positives first, then by age."""
    client = client_for(organizer)
    negative = upload(client, dataset, concept, polarity="negative", data=png_bytes(seed=5)).json()
    first = upload(client, dataset, concept, caption="one", data=png_bytes(seed=6)).json()
    second = upload(client, dataset, concept, caption='two "quoted" \\ <b>', data=png_bytes(seed=7)).json()
    factories.TaskFactory(dataset=dataset, image=factories.ImageFactory(dataset=dataset), concept=concept)

    body = client_for(worker).get("/api/v1/tasks/next").json()
    assert [e["url"] for e in body["task"]["examples"]] == [first["url"], second["url"], negative["url"]]
    assert body["task"]["examples"][1]["caption"] == 'two "quoted" \\ <b>'
    held = client_for(worker).get("/api/v1/assignments?held=true").json()["results"]
    assert held[0]["task"]["examples"] == body["task"]["examples"]


def test_a_worker_without_a_task_in_the_dataset_cannot_load_its_examples(organizer, dataset, concept, worker):
    shown = upload(client_for(organizer), dataset, concept).json()
    assert client_for(worker).get(shown["url"]).status_code == 404
    assert client_for(organizer).get(shown["url"]).status_code == 200


def test_gold_and_ordinary_tasks_carry_the_same_examples(organizer, dataset, concept, api_client):
    """Examples depend on the dataset, concept and kind only: a gold task cannot be told apart by them."""
    images = make_images(dataset, 12)
    production_questions(dataset, concept, images[:4])
    gold = gold_for(dataset, concept, images[4:])
    small_qualification(dataset, qualification_size=2, qualification_pass=2)
    assert upload(client_for(organizer), dataset, concept, kind="question").status_code == 201
    answers = {g.image_id: g.answer for g in gold}
    (w,) = make_workers(1)
    client = api_client(w.user)

    def lease_and_answer():
        body = client.get("/api/v1/tasks/next").json()
        task = leased_task(body)
        client.post(
            f"/api/v1/assignments/{body['id']}/submit",
            {"answer": {"answer": answers.get(task.image_id, True)}},
            format="json",
            HTTP_IDEMPOTENCY_KEY=f"k{body['id']}",
        )
        return body, task

    for _ in range(2):
        lease_and_answer()  # the qualification
    GoldSettings.objects.filter(dataset=dataset).update(rate=0.99)
    gold_body, gold_task = lease_and_answer()
    assert GoldServing.objects.get(task=gold_task).purpose == Purpose.EMBEDDED
    GoldSettings.objects.filter(dataset=dataset).update(rate=0.0)
    plain_body, plain_task = lease_and_answer()
    assert not GoldServing.objects.filter(task=plain_task).exists()
    assert len(gold_body["task"]["examples"]) == 1
    assert gold_body["task"]["examples"] == plain_body["task"]["examples"]
    assert gold_body["task"].keys() == plain_body["task"].keys()


def test_the_lease_carries_its_examples_and_instructions_as_data_and_leaves_the_task_as_loaded(
    organizer, dataset, concept, worker
):
    from django.db import connection

    from annotation import queue

    shown = upload(client_for(organizer), dataset, concept, caption="a dog").json()
    task = factories.TaskFactory(
        dataset=dataset, image=factories.ImageFactory(dataset=dataset), concept=concept
    )
    lease = queue.task_lease(worker=worker.worker)
    assert lease is not None and lease.assignment.task_id == task.pk
    assert lease.instructions == ""  # the dataset has none for the stage
    if (
        connection.vendor == "postgresql"
    ):  # the lease statement selects them; elsewhere the page looks them up
        assert [e[0] for e in lease.examples] == [shown["id"]]
    else:
        assert lease.examples is None
    assert not [name for name in vars(lease.assignment.task) if name.startswith("_leased")]
