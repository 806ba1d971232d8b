"""Invitations through the API: an organizer invites people to their own dataset only; the token is shown
once; anyone holding it creates one account with it."""

from __future__ import annotations

import pytest

from config.roles import WORKERS, has_role
from crowd.models import Invitation

pytestmark = pytest.mark.django_db


def invite(client, dataset, role=WORKERS, **extra):
    return client.post(f"/api/v1/datasets/{dataset.pk}/invitations", {"role": role, **extra}, format="json")


def test_an_organizer_gets_a_token_once_and_the_list_never_shows_it(api_client, organizer, dataset):
    client = api_client(organizer)
    response = invite(client, dataset, expires_in_hours=2)
    assert response.status_code == 201, response.data
    token = response.data["token"]
    assert response.data["accept_url"].endswith(f"/invite/{token}/")
    assert response.data["status"] == "open"
    listed = client.get(f"/api/v1/datasets/{dataset.pk}/invitations")
    assert listed.status_code == 200
    assert [row["id"] for row in listed.data] == [response.data["id"]]
    assert token not in str(listed.content)


def test_inviting_to_another_organizers_dataset_is_404(api_client, organizer, other_dataset):
    client = api_client(organizer)
    assert invite(client, other_dataset).status_code == 404
    assert client.get(f"/api/v1/datasets/{other_dataset.pk}/invitations").status_code == 404
    assert not Invitation.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [({"role": "organizers"}, "role"), ({"role": "workers", "expires_in_hours": 0}, "expires_in_hours")],
)
def test_a_bad_invitation_request_names_the_field(api_client, organizer, dataset, body, field):
    response = api_client(organizer).post(f"/api/v1/datasets/{dataset.pk}/invitations", body, format="json")
    assert response.status_code == 400 and field in response.data


def test_accepting_through_the_api_returns_the_api_token_and_works_once(api_client, organizer, dataset):
    from rest_framework.test import APIClient

    token = invite(api_client(organizer), dataset).data["token"]
    anonymous = APIClient()
    body = {"token": token, "username": "newbie", "password": "a-long-passphrase-42"}
    response = anonymous.post("/api/v1/invitations/accept", body, format="json")
    assert response.status_code == 201, response.data
    assert response.data["role"] == WORKERS and response.data["dataset"] == dataset.pk
    me = APIClient()
    me.credentials(HTTP_AUTHORIZATION=f"Token {response.data['api_token']}")
    assert me.get("/api/v1/me").data["roles"] == [WORKERS]
    again = anonymous.post("/api/v1/invitations/accept", {**body, "username": "newbie2"}, format="json")
    assert again.status_code == 404 and "used" in again.data["detail"]


def test_a_weak_password_is_refused_with_the_reason_and_the_token_stays_usable(
    api_client, organizer, dataset
):
    from rest_framework.test import APIClient

    token = invite(api_client(organizer), dataset).data["token"]
    response = APIClient().post(
        "/api/v1/invitations/accept", {"token": token, "username": "x", "password": "123"}, format="json"
    )
    assert response.status_code == 400 and "password" in response.data
    assert Invitation.objects.get().accepted_at is None


def test_the_accept_page_creates_the_account_signs_in_and_shows_the_token(
    client, api_client, organizer, dataset
):
    token = invite(api_client(organizer), dataset, role="reviewers").data["token"]
    page = client.get(f"/invite/{token}/")
    assert page.status_code == 200 and dataset.name in page.content.decode()
    done = client.post(f"/invite/{token}/", {"username": "rita", "password": "a-long-passphrase-42"})
    assert done.status_code == 201
    user = done.wsgi_request.user
    assert user.username == "rita" and has_role(user, "reviewers")
    assert user.auth_token.key in done.content.decode()
    assert client.get(f"/invite/{token}/").status_code == 404
