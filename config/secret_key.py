"""Which secret keys and hosts the settings accept, without Django imports (config/settings.py calls these at
start-up). A weak key signs sessions, password-reset links and CSRF tokens that an attacker can forge."""

from __future__ import annotations

DEVELOPMENT_KEY = "dev-only-insecure-key-for-the-embedded-setup"
# Django's own deployment check (security.W009) asks for this much.
MIN_LENGTH = 50
MIN_UNIQUE_CHARACTERS = 5
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "testserver", "[::1]", "::1", ".localhost"})


def secret_key_problem(key: str) -> str | None:
    """Why `key` must not protect a production site, or None when it may."""
    if key == DEVELOPMENT_KEY:
        return "is the development key, which is published with the code"
    if key.startswith("django-insecure-"):
        return "is one of Django's generated insecure keys"
    if len(key) < MIN_LENGTH:
        return f"has {len(key)} characters; use at least {MIN_LENGTH} random ones"
    if len(set(key)) < MIN_UNIQUE_CHARACTERS:
        return f"uses fewer than {MIN_UNIQUE_CHARACTERS} different characters"
    return None


def non_local_hosts(hosts: list[str]) -> list[str]:
    """The hosts (of an ALLOWED_HOSTS list) that are not this machine; "*" counts as every host."""
    return [
        host for host in hosts if host.lower() not in LOCAL_HOSTS and not host.lower().endswith(".localhost")
    ]
