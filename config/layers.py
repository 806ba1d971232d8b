"""The floors of the house: which app may import which. An app imports only apps on lower floors and calls them
directly; apps on one floor (gold and multilabel) do not import each other. A lower app that must reach a higher
one announces an event through a small registry the higher app subscribes to in its `AppConfig.ready()`
(`consensus.events`, `annotation.hooks`, `annotation.kinds`, the box pipeline's hooks in `boxes.services`).
`tests/test_app_graph.py` enforces this order, on the Python source and on the static ES modules' imports, and
docs/architecture.md draws it."""

from __future__ import annotations

# Lowest first. `config` holds settings, roles and URL wiring (the URL map names apps by string only), and the
# static modules every page shares.
APP_LAYERS: tuple[tuple[str, ...], ...] = (
    ("config",),
    ("hierarchy",),
    ("annotation",),
    # Model predictions: proposals the box pipeline and Algorithm 1 read; they need images and classes only.
    ("predictions",),
    ("outbox",),
    ("candidates",),
    ("consensus",),
    ("boxes",),
    ("gold", "multilabel"),
    ("review",),
    ("benchmark",),
    ("crowd",),
    ("organize",),
    ("frontend",),
    # The crowd simulator drives the platform from outside, through its HTTP API, like bench/: nothing imports it.
    ("simulator",),
)


# The browser's ES modules stand on the same floors, by the app whose `static/` folder holds them. A page's
# modules (`frontend/static/frontend/`: worker, reviewer and session pages; `organize/static/organize/`: the
# organizer's) import modules of their own namespace and of this one, which every page shares and which imports
# only its own: `config/static/shared/` (the API client, the box overlay, decoded task images, instructions).
SHARED_STATIC = "shared"


def layer_of(app: str) -> int:
    """The floor of `app` (0 is the lowest); KeyError for an app that has no floor yet."""
    for level, apps in enumerate(APP_LAYERS):
        if app in apps:
            return level
    raise KeyError(app)
