"""The Django admin: every registered changelist renders for a superuser, with a query count that does not
grow with the number of rows, and assignments cannot be edited there."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation import queue
from annotation.models import Assignment, Box
from crowd.models import Worker
from hierarchy.models import ConceptEdge
from tests import factories

pytestmark = pytest.mark.django_db

CHANGELISTS = [
    "/admin/hierarchy/concept/",
    "/admin/annotation/dataset/",
    "/admin/annotation/image/",
    "/admin/annotation/box/",
    "/admin/annotation/task/",
    "/admin/annotation/assignment/",
    "/admin/crowd/worker/",
]


@pytest.fixture
def admin_client_():
    get_user_model().objects.create_superuser("root", "root@example.org", "root-pass-123")
    client = Client()
    assert client.login(username="root", password="root-pass-123")
    return client


def add_rows(start: int, count: int) -> None:
    """`count` more of every admin-listed model, each row pointing at distinct related rows."""
    for i in range(start, start + count):
        worker = factories.user_with_roles(f"w{i}", ("workers",)).worker
        task = factories.TaskFactory()
        parent = factories.ConceptFactory()
        ConceptEdge.objects.create(parent=parent, child=task.concept)
        Box.objects.create(image=task.image, concept=task.concept, x1=1, y1=1, x2=9, y2=9, drawn_by=worker)
        queue.task_lease_next(worker=worker)


def queries_for(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(captured)


@pytest.mark.parametrize("url", CHANGELISTS)
def test_admin_changelist_renders_with_a_query_count_independent_of_rows(admin_client_, url):
    add_rows(0, 2)
    few = queries_for(admin_client_, url)
    add_rows(2, 4)
    many = queries_for(admin_client_, url)
    assert many == few, f"{url}: {few} queries for 2 rows, {many} for 6 (an N+1 in list_display?)"


def test_admin_change_pages_render_for_every_model(admin_client_):
    add_rows(0, 1)
    task = factories.TaskFactory._meta.model.objects.first()
    pages = {
        "hierarchy/concept": task.concept.pk,
        "annotation/dataset": task.dataset.pk,
        "annotation/image": task.image.pk,
        "annotation/box": Box.objects.first().pk,
        "annotation/task": task.pk,
        "annotation/assignment": Assignment.objects.first().pk,
        "crowd/worker": Worker.objects.first().pk,
    }
    for model, pk in pages.items():
        response = admin_client_.get(f"/admin/{model}/{pk}/change/")
        assert response.status_code == 200, model


def test_admin_shows_concept_parents_inline(admin_client_):
    child = factories.ConceptFactory(name="domestic cat")
    parent = factories.ConceptFactory(name="feline")
    ConceptEdge.objects.create(parent=parent, child=child)
    response = admin_client_.get(f"/admin/hierarchy/concept/{child.pk}/change/")
    assert response.status_code == 200
    assert "parent_edges-TOTAL_FORMS" in response.content.decode()
    assert f'value="{parent.pk}"' in response.content.decode()


def test_admin_cannot_edit_add_or_delete_assignments(admin_client_):
    add_rows(0, 1)
    assignment = Assignment.objects.get()
    assert admin_client_.get("/admin/annotation/assignment/add/").status_code == 403
    assert admin_client_.get(f"/admin/annotation/assignment/{assignment.pk}/delete/").status_code == 403
    response = admin_client_.post(
        f"/admin/annotation/assignment/{assignment.pk}/change/", {"state": "submitted"}
    )
    assert response.status_code == 403
    assignment.refresh_from_db()
    assert assignment.state == "leased"


def test_admin_keeps_image_hashes_read_only(admin_client_):
    image = factories.ImageFactory()
    page = admin_client_.get(f"/admin/annotation/image/{image.pk}/change/").content.decode()
    assert image.sha256 in page
    assert 'name="sha256"' not in page and 'name="phash"' not in page
