"""The sign-in page as a person meets it: signing out lands there (not on the admin's page), and a wrong
password keeps the username typed."""

from __future__ import annotations

import pytest

from tests import factories

pytestmark = pytest.mark.django_db


def test_signing_out_lands_on_the_sign_in_page_saying_so_for_every_role(client):
    for username, roles in (("wanda", ("workers",)), ("rita", ("reviewers",)), ("olga", ("organizers",))):
        user = factories.user_with_roles(username, roles)
        client.force_login(user)
        response = client.post("/accounts/logout/", follow=True)
        assert response.redirect_chain[-1][0].startswith("/accounts/login/")
        page = response.content.decode()
        assert "You are signed out." in page and "Logged out" not in page
        assert "_auth_user_id" not in client.session


def test_a_wrong_password_keeps_the_username_and_says_what_an_organizer_types(client):
    factories.user_with_roles("ada@example.org", ("organizers",))
    first = client.get("/accounts/login/").content.decode()
    assert "organizers: your e-mail address" in first and "You are signed out." not in first
    response = client.post("/accounts/login/", {"username": "ada@example.org", "password": "wrong"})
    page = response.content.decode()
    assert "didn't match" in page
    assert 'value="ada@example.org"' in page
