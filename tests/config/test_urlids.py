"""config.urlids writes an id into a route reversed once: the URL must be exactly Django's `reverse`, under a
script prefix too, and a changed URLconf must not serve stale URLs."""

from __future__ import annotations

import pytest
from django.test import override_settings
from django.urls import NoReverseMatch, clear_script_prefix, reverse, set_script_prefix

from config.urlids import id_url


@pytest.mark.parametrize("pk", [1, 7, 10, 987, 2**31, 2**63 - 1])
@pytest.mark.parametrize("name", ["image-file", "example-file"])
def test_an_id_url_is_exactly_what_reverse_gives(name, pk):
    assert id_url(name, pk) == reverse(name, args=[pk])


def test_an_id_url_follows_the_script_prefix_of_the_request():
    plain = id_url("image-file", 5)
    set_script_prefix("/crowd/")
    try:
        assert id_url("image-file", 5) == reverse("image-file", args=[5]) == "/crowd" + plain
    finally:
        clear_script_prefix()
    assert id_url("image-file", 5) == plain


@override_settings(ROOT_URLCONF="tests.config.urlids_urls")
def test_a_changed_urlconf_is_not_answered_from_the_old_one():
    assert id_url("image-file", 3) == "/elsewhere/3/img"


def test_a_route_without_an_id_is_refused():
    with pytest.raises(NoReverseMatch):
        id_url("healthz", 1)
