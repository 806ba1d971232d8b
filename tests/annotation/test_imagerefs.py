"""Leases name their image by an opaque reference and their task not at all (issue 35, item 3): a reference
reads back to its image only with the key, carries no order, and the image behind it is served only to a
worker who holds or held a task on it; workers no longer load images by id."""

from __future__ import annotations

import pytest

from annotation.imagerefs import REF_LENGTH, image_ref, image_ref_id
from tests import factories
from tests.conftest import client_for, leased_task

pytestmark = pytest.mark.django_db


def test_a_reference_reads_back_to_its_image_and_carries_no_order(settings):
    refs = [image_ref(n) for n in range(1, 2001)]
    assert len(set(refs)) == len(refs) and {len(r) for r in refs} == {REF_LENGTH}
    assert [image_ref_id(r) for r in refs] == list(range(1, 2001))
    # Sorting the references says nothing about the ids: about half of neighbouring ids come out in order.
    in_order = sum(a < b for a, b in zip(refs, refs[1:], strict=False)) / (len(refs) - 1)
    assert 0.45 < in_order < 0.55, in_order
    # Forged or damaged references name no image.
    assert image_ref_id("A" * REF_LENGTH) is None
    for position in (0, 10, REF_LENGTH - 1):  # the last character's spare bits included
        for other in "AgQw":
            damaged = refs[0][:position] + other + refs[0][position + 1 :]
            assert damaged == refs[0] or image_ref_id(damaged) is None, damaged
    assert image_ref_id("not a reference") is None and image_ref_id(refs[0] + "=") is None
    # Another key, other references.
    settings.SECRET_KEY = "another-secret-key-" + "x" * 40
    assert image_ref(1) != refs[0] and image_ref_id(refs[0]) is None


def test_the_task_image_goes_only_to_a_worker_with_a_task_on_it(worker, other_worker):
    task = factories.TaskFactory()
    client = client_for(worker)
    body = client.get("/api/v1/tasks/next").json()
    assert "id" not in body["task"] and "id" not in body["task"]["image"]
    assert leased_task(body).pk == task.pk
    url = body["task"]["image"]["url"]
    assert url == f"/api/v1/task-images/{image_ref(task.image_id)}"
    assert client.get(url).status_code == 200
    assert client_for(other_worker).get(url).status_code == 404, "not their task's image"
    assert client.get(f"/api/v1/task-images/{'A' * REF_LENGTH}").status_code == 404
    # By id, a worker gets nothing: ids would tell old images (and old gold) from new ones.
    response = client.get(f"/api/v1/images/{task.image_id}/file")
    assert response.status_code == 403 and "task.image.url" in response.json()["detail"]
    organizer = factories.user_with_roles("org", ("organizers",))
    task.dataset.organizers.add(organizer)
    assert client_for(organizer).get(f"/api/v1/images/{task.image_id}/file").status_code == 200
