"""The classes a simulated run labels, read from a hierarchy fixture (its leaves, and the sibling groups people
confuse) or made up when no fixture is installed: `manage.py simulate`'s inputs."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import CommandError


def synthetic_classes(k: int) -> list[dict]:
    """K made-up leaf classes, for when no hierarchy fixture is installed: the crowd gives each its own
    difficulty, which is all the verify scenario needs."""
    return [{"wnid": f"sim{i:05d}", "name": f"class {i}", "gloss": "", "parents": []} for i in range(k)]


def leaf_classes(path: Path) -> list[dict]:
    """The leaf concepts of a hierarchy fixture (nodes marked "leaf")."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise CommandError(f"cannot read hierarchy {path}: {exc}") from None
    leaves = [n for n in data.get("nodes", []) if n.get("leaf")]
    if not leaves:
        raise CommandError(f"hierarchy {path} has no leaf nodes")
    return [{"wnid": n["id"], "name": n["name"], "gloss": n.get("gloss", ""), "parents": []} for n in leaves]


def sibling_groups(path: Path | None, keys: list[str]) -> list[list[str]]:
    """Classes that share a parent in the hierarchy (the classes people confuse), or seeded-order chunks of
    four when there is no hierarchy file."""
    parents: dict[str, list[str]] = {}
    if path is not None and path.exists():
        parents = {n["id"]: n.get("parents", []) for n in json.loads(path.read_text()).get("nodes", [])}
    groups: dict[str, list[str]] = {}
    for i, key in enumerate(keys):
        first = (parents.get(key) or [f"chunk-{i // 4}"])[0]
        groups.setdefault(first, []).append(key)
    return list(groups.values())
