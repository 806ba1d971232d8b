"""Gold through HTTP: nothing in a worker's raw JSON or page says gold or carries the known answer; organizers
create gold, see scores and payments; the CSV import stores all rows or none."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from gold.models import GoldItem, GoldSettings, WorkerScore
from tests.conftest import client_for, leased_task

from .conftest import gold_for, make_images, make_workers, production_questions, small_qualification

GOLD_MARKERS = ("gold", "qualification", "feedback", "expected", "explanation", "look closer", "purpose")


def assert_no_gold(raw: str):
    low = raw.lower()
    for marker in GOLD_MARKERS:
        assert marker not in low, f"{marker!r} leaked: {raw[:300]}"


@pytest.mark.django_db
def test_embedded_gold_never_leaks_in_raw_json_or_the_worker_page(dataset, concept):
    images = make_images(dataset, 30)
    production_questions(dataset, concept, images[:10])
    gold = gold_for(dataset, concept, images[10:])
    GoldSettings.objects.create(dataset=dataset, rate=0.5, qualification_size=0, qualification_pass=0)
    (w,) = make_workers(1)
    client = client_for(w.user)
    shapes = {}
    gold_tasks = 0
    for i in range(12):
        r = client.get("/api/v1/tasks/next")
        assert r.status_code == 200
        raw = r.content.decode()
        assert_no_gold(raw)
        body = json.loads(raw)
        item = GoldItem.objects.filter(task_id=leased_task(body).pk).first()
        is_gold = item is not None
        gold_tasks += is_gold
        shapes.setdefault(is_gold, set()).add(json.dumps(sorted(body["task"]["payload"])))
        # Gold answered right: a worker blocked for wrong gold answers would (rightly) run out of tasks.
        submit = client.post(
            f"/api/v1/assignments/{body['id']}/submit",
            {"answer": {"answer": item.answer if is_gold else False}},
            format="json",
            HTTP_IDEMPOTENCY_KEY=f"k{i}",
        )
        assert submit.status_code == 201
        assert_no_gold(submit.content.decode())
        assert set(json.loads(submit.content)) == {
            "id",
            "state",
            "leased_at",
            "expires_at",
            "submitted_at",
            "answer",
            "task",
        }
    assert gold_tasks >= 2
    assert shapes[True] == shapes[False], "gold and ordinary tasks carry the same payload keys"
    listing = client.get("/api/v1/assignments/")
    assert_no_gold(listing.content.decode())
    browser = Client()
    browser.force_login(w.user)
    page = browser.get("/worker/")
    assert page.status_code == 200
    assert_no_gold(page.content.decode())
    assert len(gold) == 20


@pytest.mark.django_db
def test_qualification_feedback_appears_only_after_a_wrong_qualification_answer(dataset, concept):
    images = make_images(dataset, 20)
    production_questions(dataset, concept, images[:10])
    gold = gold_for(dataset, concept, images[10:])
    small_qualification(dataset)
    answers = {g.image_id: g.answer for g in gold}
    (w,) = make_workers(1)
    client = client_for(w.user)
    body = client.get("/api/v1/tasks/next").json()
    truth = answers[leased_task(body).image_id]
    wrong = client.post(
        f"/api/v1/assignments/{body['id']}/submit",
        {"answer": {"answer": not truth}},
        format="json",
        HTTP_IDEMPOTENCY_KEY="a",
    ).json()
    assert wrong["feedback"]["expected"] == {"answer": truth}
    body = client.get("/api/v1/tasks/next").json()
    truth = answers[leased_task(body).image_id]
    right = client.post(
        f"/api/v1/assignments/{body['id']}/submit",
        {"answer": {"answer": truth}},
        format="json",
        HTTP_IDEMPOTENCY_KEY="b",
    ).json()
    assert "feedback" not in right


@pytest.mark.django_db
def test_organizer_creates_gold_and_sees_worker_scores(organizer, dataset, concept):
    images = make_images(dataset, 3)
    client = client_for(organizer)
    r = client.post(
        f"/api/v1/datasets/{dataset.pk}/gold/",
        {"kind": "image_verify", "concept": concept.wnid, "image": images[0].pk, "answer": True},
        format="json",
    )
    assert r.status_code == 201, r.content
    assert client.get(f"/api/v1/datasets/{dataset.pk}/gold/").json()["count"] == 1
    (w,) = make_workers(1)
    WorkerScore.objects.create(
        worker=w,
        dataset=dataset,
        kind="image_verify",
        answered=4,
        correct=4,
        mean=0.8,
        lower=0.5,
        p_below=0.1,
    )
    rows = client.get(f"/api/v1/datasets/{dataset.pk}/workers/").json()["results"]
    assert rows[0]["answered"] == 4 and rows[0]["blocked"] is False
    worker_client = client_for(w.user)
    assert worker_client.get(f"/api/v1/datasets/{dataset.pk}/gold/").status_code == 403


@pytest.mark.django_db
def test_csv_import_stores_nothing_when_any_row_is_bad_and_names_the_line(dataset, concept, tmp_path):
    images = make_images(dataset, 3)
    good = tmp_path / "good.csv"
    good.write_text(
        f"kind,concept,image,answer\nimage_verify,{concept.wnid},{images[0].pk},yes\nimage_verify,{concept.wnid},{images[1].pk},no\n"
    )
    bad = tmp_path / "bad.csv"
    bad.write_text(
        f"kind,concept,image,answer\nimage_verify,{concept.wnid},{images[2].pk},yes\nimage_verify,n999,{images[1].pk},maybe\n"
    )
    with pytest.raises(CommandError, match="line 3"):
        call_command("import_gold", "--dataset", dataset.name, str(bad))
    assert GoldItem.objects.count() == 0
    call_command("import_gold", "--dataset", dataset.name, str(good))
    assert GoldItem.objects.count() == 2


@pytest.mark.django_db
def test_organizer_sets_the_gold_rate_and_workers_cannot(organizer, dataset):
    client = client_for(organizer)
    url = f"/api/v1/datasets/{dataset.pk}/gold-settings/"
    assert client.get(url).json()["rate"] == 0.1
    r = client.patch(url, {"rate": 0.2, "seed": 7}, format="json")
    assert r.status_code == 200, r.content
    assert GoldSettings.objects.get(dataset=dataset).rate == 0.2
    assert client.patch(url, {"rate": 1.0}, format="json").status_code == 400
    assert client.patch(url, {"qualification_pass": 9}, format="json").status_code == 400
    (w,) = make_workers(1)
    assert client_for(w.user).patch(url, {"rate": 0.5}, format="json").status_code == 403
