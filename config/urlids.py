"""URLs of routes whose one argument is an object's id, at the cost of a string format.

Every lease and submit answers with its image's URL; Django's `reverse` resolves the route anew on each call,
which cost about a twentieth of a whole task cycle's CPU (bench/load.py). The route is reversed once per
(route, script prefix) with a marker id and the id written in its place; the result is exactly `reverse`'s. A
changed URLconf (tests override ROOT_URLCONF) clears the cache."""

from __future__ import annotations

import functools

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.urls import get_script_prefix, reverse

_MARKER = 9_876_543_210_123  # no real id reverses to a URL that contains it twice


def id_url(name: str, pk: int) -> str:
    """`reverse(name, args=[pk])` for a route whose only argument is an integer id."""
    head, tail = _parts(name, get_script_prefix())
    return f"{head}{int(pk)}{tail}"


@functools.lru_cache(maxsize=64)
def _parts(name: str, _prefix: str) -> tuple[str, str]:
    # A route that takes no id raises NoReverseMatch here, as `reverse` would; one that takes it writes it.
    head, _, tail = reverse(name, args=[_MARKER]).rpartition(str(_MARKER))
    return head, tail


@receiver(setting_changed)
def _urlconf_changed(*, setting, **kwargs) -> None:
    if setting in ("ROOT_URLCONF", "FORCE_SCRIPT_NAME"):
        _parts.cache_clear()
