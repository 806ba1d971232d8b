"""Who may see and do what through the API: workers see only their own assignments and images, organizers only
their own datasets, anonymous callers nothing; token and session auth (with CSRF) both work."""

from __future__ import annotations

import re

import pytest
from drf_spectacular.generators import SchemaGenerator
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation import queue
from annotation.imagerefs import image_ref
from tests import factories
from tests.conftest import client_for

pytestmark = pytest.mark.django_db

PASSWORD = "pass-for-tests-123"  # what tests.factories.user_with_roles gives every user


@pytest.fixture
def other_organizer(db):
    return factories.user_with_roles("organizer2", ("organizers",))


def leased_assignment(user):
    """Queue a task and lease it to `user`'s worker identity."""
    factories.TaskFactory()
    assignment = queue.task_lease_next(worker=user.worker)
    assert assignment is not None
    return assignment


# --- workers -------------------------------------------------------------------------------------------


def test_worker_cannot_read_or_act_on_another_workers_assignment(worker, other_worker):
    theirs = leased_assignment(other_worker)
    client = client_for(worker)
    assert client.get(f"/api/v1/assignments/{theirs.pk}/").status_code == 404
    submitted = client.post(
        f"/api/v1/assignments/{theirs.pk}/submit",
        {"answer": {"answer": True}},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k",
    )
    assert submitted.status_code == 404
    assert client.post(f"/api/v1/assignments/{theirs.pk}/release").status_code == 404
    theirs.refresh_from_db()
    assert theirs.state == "leased" and theirs.answer is None


def test_worker_assignment_list_holds_only_their_own(worker, other_worker):
    mine = leased_assignment(worker)
    leased_assignment(other_worker)
    body = client_for(worker).get("/api/v1/assignments/").json()
    assert [row["id"] for row in body["results"]] == [mine.pk]


def test_worker_can_read_their_own_assignment(worker):
    mine = leased_assignment(worker)
    assert client_for(worker).get(f"/api/v1/assignments/{mine.pk}/").status_code == 200


def test_worker_cannot_read_datasets_at_all(worker, dataset):
    client = client_for(worker)
    assert client.get("/api/v1/datasets/").status_code == 403
    assert client.get(f"/api/v1/datasets/{dataset.pk}/").status_code == 403
    assert client.get(f"/api/v1/datasets/{dataset.pk}/images/").status_code == 403
    assert client.post(f"/api/v1/datasets/{dataset.pk}/vote-tasks/", {"concept": "x"}).status_code == 403


def test_worker_cannot_fetch_an_image_of_a_task_they_never_had(worker, other_worker):
    theirs = leased_assignment(other_worker)
    mine = leased_assignment(worker)
    client = client_for(worker)
    assert client.get(f"/api/v1/task-images/{image_ref(theirs.task.image_id)}").status_code == 404
    assert client.get(f"/api/v1/task-images/{image_ref(mine.task.image_id)}").status_code == 200
    # Never by id, not even their own task's image: ids tell old images from new ones.
    assert client.get(f"/api/v1/images/{mine.task.image_id}/file").status_code == 403


# --- organizers ----------------------------------------------------------------------------------------


def test_organizer_sees_only_their_own_datasets(organizer, other_organizer, dataset):
    theirs = factories.DatasetFactory(organizers=[other_organizer])
    client = client_for(organizer)
    listed = [row["id"] for row in client.get("/api/v1/datasets/").json()["results"]]
    assert listed == [dataset.pk]
    assert client.get(f"/api/v1/datasets/{dataset.pk}/").status_code == 200
    assert client.get(f"/api/v1/datasets/{theirs.pk}/").status_code == 404
    assert client.get(f"/api/v1/datasets/{theirs.pk}/images/").status_code == 404
    assert client.post(f"/api/v1/datasets/{theirs.pk}/vote-tasks/", {"concept": "x"}).status_code == 404


def test_organizer_cannot_fetch_images_of_another_organizers_dataset(organizer, other_organizer):
    image = factories.ImageFactory(dataset=factories.DatasetFactory(organizers=[other_organizer]))
    assert client_for(organizer).get(f"/api/v1/images/{image.pk}/file").status_code == 404
    assert client_for(other_organizer).get(f"/api/v1/images/{image.pk}/file").status_code == 200


def test_organizer_cannot_take_tasks(organizer):
    factories.TaskFactory()
    response = client_for(organizer).get("/api/v1/tasks/next")
    assert response.status_code == 403
    assert "worker" in response.json()["detail"]


# --- anonymous callers ---------------------------------------------------------------------------------


def api_operations() -> list[tuple[str, str]]:
    """Every (method, path) of the API as the OpenAPI generator sees it, path parameters filled in: a new
    endpoint is covered without editing this test."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    operations = []
    for path, item in schema["paths"].items():
        concrete = re.sub(r"\{wnid\}", "n00000001", path)
        concrete = re.sub(r"\{ref\}", "A" * 22, concrete)  # an image reference's shape
        concrete = re.sub(r"\{[^}]+\}", "1", concrete)
        for method in item:
            if method in {"get", "post", "put", "patch", "delete"}:
                operations.append((method, concrete))
    return operations


def test_the_anonymous_check_covers_the_whole_api():
    paths = {path for _, path in api_operations()}
    for expected in ("/api/v1/tasks/next/", "/api/v1/assignments/1/submit/", "/api/v1/datasets/1/images/"):
        assert expected in paths
    assert all(path.startswith("/api/v1/") for path in paths)


# Operations for people who have no account yet: accepting an invitation creates one (docs/organizer.md). An
# anonymous call is validated like any other and refused with 400 when it carries no valid invitation.
PUBLIC_OPERATIONS = {("post", "/api/v1/invitations/accept/")}


@pytest.mark.parametrize(("method", "path"), api_operations())
def test_anonymous_calls_are_refused_with_401_and_a_token_challenge(method, path, dataset):
    response = getattr(APIClient(), method)(path, {}, format="json")
    if (method, path) in PUBLIC_OPERATIONS:
        assert response.status_code == 400, (method, path, response.status_code)
        return
    assert response.status_code == 401, (method, path, response.status_code)
    # TokenAuthentication comes first, so DRF answers 401 and names the scheme to use; a provider session's
    # bundle API names its own signed session scheme (docs/providers.md).
    expected = "Bundle" if path.startswith("/api/v1/bundle/") else "Token"
    assert response["WWW-Authenticate"] == expected


# --- authentication schemes ----------------------------------------------------------------------------


def test_token_authentication_works(organizer, dataset):
    token = Token.objects.create(user=organizer)
    client = APIClient()
    response = client.get("/api/v1/datasets/", HTTP_AUTHORIZATION=f"Token {token.key}")
    assert response.status_code == 200
    assert [row["id"] for row in response.json()["results"]] == [dataset.pk]


def test_a_wrong_token_is_refused(organizer):
    Token.objects.create(user=organizer)
    response = APIClient().get("/api/v1/datasets/", HTTP_AUTHORIZATION="Token not-a-real-token")
    assert response.status_code == 401


def test_token_authenticated_writes_need_no_csrf_token(organizer):
    token = Token.objects.create(user=organizer)
    client = APIClient(enforce_csrf_checks=True)
    response = client.post(
        "/api/v1/datasets/", {"name": "by-token"}, format="json", HTTP_AUTHORIZATION=f"Token {token.key}"
    )
    assert response.status_code == 201


def test_session_authentication_requires_csrf_for_unsafe_methods(organizer):
    client = APIClient(enforce_csrf_checks=True)
    assert client.login(username=organizer.username, password=PASSWORD)
    assert client.get("/api/v1/datasets/").status_code == 200  # safe methods need no CSRF token

    refused = client.post("/api/v1/datasets/", {"name": "no-csrf"}, format="json")
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]

    client.get("/worker/")  # any page that sets the CSRF cookie, as the browser would load first
    csrf = client.cookies["csrftoken"].value
    accepted = client.post("/api/v1/datasets/", {"name": "with-csrf"}, format="json", HTTP_X_CSRFTOKEN=csrf)
    assert accepted.status_code == 201
