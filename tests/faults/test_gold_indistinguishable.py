"""Gold cannot be told apart from the real questions it hides among (issue 18, item 1, the part that does not
wait for gold to become pre-created pool tasks): every field a worker sees of a gold lease has the same keys,
types and stamps as a normal one over hundreds of leases (lease_expires_at - leased_at is exactly the lease
length for both), and gold is served on images that carry no live question of its kind."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from annotation.models import Assignment
from config.roles import WORKERS
from consensus.models import QuestionKind
from crowd.models import Worker
from gold.items import GoldSpec, gold_items_create
from gold.models import GoldItem, GoldSettings
from tests import factories
from tests.conftest import client_for
from tests.gold.conftest import make_images, production_questions

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def concept(db):
    return factories.ConceptFactory(wnid="n02123045", name="tabby cat", gloss="a cat with a striped coat")


def shape(value):
    """The structure of a JSON value: dict keys with their shapes, a list's element shapes, a scalar's type."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        return ["list", *sorted({repr(shape(item)) for item in value})]
    return type(value).__name__


# Gold is drawn per lease by a generator seeded with the worker's id (gold/serving.py): workers with ids of the
# test's own choosing, far above the sequence's, make the draws the same however many rows earlier tests left.
FIRST_WORKER_ID = 7_000_000


def workers_with_fixed_ids(n: int) -> list[Worker]:
    group, _ = Group.objects.get_or_create(name=WORKERS)
    workers = []
    for i in range(n):
        user = get_user_model().objects.create_user(username=f"fixed{i}", password=None)
        user.groups.add(group)
        workers.append(Worker.objects.create(pk=FIRST_WORKER_ID + i, user=user))
    return workers


def test_gold_and_normal_assignments_agree_on_every_field_over_hundreds_of_leases(dataset, concept):
    images = make_images(dataset, 150)
    busy, clean = images[:60], images[60:]
    production_questions(dataset, concept, busy, vote_cap=15)
    # Gold on images with live questions of the same kind, and on images with none.
    gold_items_create(
        dataset=dataset,
        specs=[
            GoldSpec(kind=QuestionKind.IMAGE_VERIFY, concept=concept, image=image, answer=True)
            for image in busy[:30] + clean
        ],
    )
    GoldSettings.objects.create(dataset=dataset, rate=0.3, qualification_size=0, qualification_pass=0)
    workers = workers_with_fixed_ids(8)
    leases, listed = [], []
    for worker in workers:
        client = client_for(worker.user)
        for n in range(30):
            response = client.get("/api/v1/tasks/next")
            if response.status_code == 204:
                break
            assert response.status_code == 200, response.content
            body = response.json()
            leases.append(body)
            if n % 3:  # some answered, some left leased: both states are compared
                submitted = client.post(
                    f"/api/v1/assignments/{body['id']}/submit",
                    {"answer": {"answer": True}},
                    format="json",
                    HTTP_IDEMPOTENCY_KEY=f"k{body['id']}",
                )
                assert submitted.status_code in (200, 201), submitted.content
        listed += client.get("/api/v1/assignments/?page_size=100").json()["results"]

    gold_tasks = set(GoldItem.objects.values_list("task_id", flat=True))
    task_of = dict(
        Assignment.objects.filter(pk__in=[a["id"] for a in leases + listed]).values_list("pk", "task_id")
    )

    def is_gold(a: dict) -> bool:  # leases name no task: looked up by their assignment
        return task_of[a["id"]] in gold_tasks

    gold = [a for a in leases if is_gold(a)]
    normal = [a for a in leases if not is_gold(a)]
    assert len(gold) >= 40 and len(normal) >= 100, (len(gold), len(normal))

    lease = timedelta(seconds=settings.CROWDLABEL["LEASE_SECONDS"])
    for group in (gold, normal, listed):
        for a in group:
            held = datetime.fromisoformat(a["expires_at"]) - datetime.fromisoformat(a["leased_at"])
            assert held == lease, (is_gold(a), held)

    # Every field: the same keys and value types, nested, for the lease answer and the listing.
    assert {repr(shape(a)) for a in gold} == {repr(shape(a)) for a in normal}
    listed_gold = [a for a in listed if is_gold(a)]
    listed_normal = [a for a in listed if not is_gold(a)]
    for state in ("leased", "submitted"):
        gold_shapes = {repr(shape(a)) for a in listed_gold if a["state"] == state}
        normal_shapes = {repr(shape(a)) for a in listed_normal if a["state"] == state}
        assert gold_shapes and gold_shapes == normal_shapes, state
    # The same kind, title and wording (the concept is the same, so the question is too).
    assert {(a["task"]["kind"], a["task"]["title"], a["task"]["payload"]["question"]) for a in gold} == {
        (a["task"]["kind"], a["task"]["title"], a["task"]["payload"]["question"]) for a in normal
    }

    # Gold sits on images without a question of its kind: the same image and question never comes twice.
    served_images = set(
        GoldItem.objects.filter(task__assignments__isnull=False).values_list("image_id", flat=True)
    )
    assert served_images.isdisjoint({image.pk for image in busy})
    repeats = [
        a["id"]
        for a in listed_gold
        for b in listed_normal
        if a["task"]["image"]["ref"] == b["task"]["image"]["ref"]
        and a["task"]["payload"] == b["task"]["payload"]
    ]
    assert repeats == [], "a worker met one image and question twice: once gold, once real"
