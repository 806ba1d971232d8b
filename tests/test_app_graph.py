"""No app imports one above it (or beside it), and the apps' import graph has no cycle: the order of
`config/layers.py`, checked on the source by AST. Every import counts, lazy ones inside functions included;
tests, benchmarks and migrations are not part of the apps."""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from config.layers import APP_LAYERS, layer_of

ROOT = Path(__file__).resolve().parent.parent
SKIPPED_PARTS = {"tests", "bench", "migrations"}


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    where: str  # path:line of the import, for the failure message

    def __str__(self) -> str:
        return f"{self.where}: {self.source} imports {self.target}"


def apps_in(root: Path) -> set[str]:
    return {p.parent.name for p in root.glob("*/apps.py")} | {"config"}


def import_edges(root: Path) -> list[Edge]:
    """Every import of one app's module by another app's code under `root`."""
    apps = apps_in(root)
    edges = []
    for path in sorted(root.glob("*/**/*.py")):
        parts = path.relative_to(root).parts
        if parts[0] not in apps or SKIPPED_PARTS.intersection(parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                target = name.split(".")[0]
                if target in apps and target != parts[0]:
                    where = f"{path.relative_to(root)}:{node.lineno}"
                    edges.append(Edge(parts[0], target, where))
    return edges


def upward_edges(edges: list[Edge], layer=layer_of) -> list[Edge]:
    """Imports of an app on the same floor or a higher one."""
    return [e for e in edges if layer(e.target) >= layer(e.source)]


def cycles(edges: list[Edge]) -> list[list[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for e in edges:
        graph[e.source].add(e.target)
    found: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(app: str) -> None:
        state[app] = 1
        stack.append(app)
        for nxt in sorted(graph[app]):
            if state.get(nxt) == 1:
                found.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[app] = 2

    for app in sorted(graph):
        if app not in state:
            visit(app)
    return found


def test_every_app_has_exactly_one_floor():
    layered = [app for floor in APP_LAYERS for app in floor]
    assert len(layered) == len(set(layered))
    assert set(layered) == apps_in(ROOT)


def test_no_app_imports_an_app_above_or_beside_it():
    assert [str(e) for e in upward_edges(import_edges(ROOT))] == []


def test_the_app_import_graph_has_no_cycle():
    assert cycles(import_edges(ROOT)) == []


def test_the_simulator_is_the_top_floor_and_no_app_imports_it():
    # It drives the platform from outside, like bench/: the providers in `crowd` never depend on it.
    assert APP_LAYERS[-1] == ("simulator",)
    assert [str(e) for e in import_edges(ROOT) if e.target == "simulator"] == []


def test_the_checker_catches_a_lazy_upward_import_and_the_cycle_it_makes(tmp_path):
    for app in ("low", "high"):
        (tmp_path / app).mkdir()
        (tmp_path / app / "apps.py").write_text("")
    (tmp_path / "high" / "views.py").write_text("from low.models import Thing\n")
    (tmp_path / "low" / "services.py").write_text("def f():\n    import high.views\n")
    (tmp_path / "low" / "tests").mkdir()
    (tmp_path / "low" / "tests" / "test_x.py").write_text("import high\n")  # tests are not the app
    (tmp_path / "low" / "migrations").mkdir()
    (tmp_path / "low" / "migrations" / "0001.py").write_text("import high\n")
    floors = {"config": 0, "low": 1, "high": 2}

    edges = import_edges(tmp_path)

    assert sorted(str(e) for e in edges) == [
        "high/views.py:1: high imports low",
        "low/services.py:2: low imports high",
    ]
    assert [str(e) for e in upward_edges(edges, layer=floors.__getitem__)] == [
        "low/services.py:2: low imports high"
    ]
    assert cycles(edges) == [["high", "low", "high"]]


def test_the_checker_refuses_imports_between_apps_on_one_floor(tmp_path):
    for app in ("gold", "multilabel"):
        (tmp_path / app).mkdir()
        (tmp_path / app / "apps.py").write_text("")
    (tmp_path / "gold" / "x.py").write_text("from multilabel import asking\n")
    edges = import_edges(tmp_path)
    assert [str(e) for e in upward_edges(edges)] == ["gold/x.py:1: gold imports multilabel"]
