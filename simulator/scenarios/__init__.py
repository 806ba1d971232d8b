"""Simulator scenarios, one module each; `SCENARIOS` maps a name to its factory."""

from __future__ import annotations

from collections.abc import Callable

from .boxes import BoxesScenario
from .full import FullScenario
from .multilabel import MultilabelScenario
from .verify import VerifyScenario

SCENARIOS: dict[str, Callable[..., object]] = {
    "boxes": BoxesScenario,
    "verify": VerifyScenario,
    "multilabel": MultilabelScenario,
    "full": FullScenario,
}
