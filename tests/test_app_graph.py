"""No app imports one above it (or beside it), and the apps' import graph has no cycle: the order of
`config/layers.py`, checked on the source by AST. Every import counts, lazy ones inside functions included;
tests, benchmarks and migrations are not part of the apps. The browser's ES modules count too, by the app
whose `static/` folder holds them: each of their imports must name a file that is there, and a page's modules
import only their own namespace's and the shared one's (`config.layers.SHARED_STATIC`), which imports only its
own."""

from __future__ import annotations

import ast
import posixpath
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from config.layers import APP_LAYERS, SHARED_STATIC, layer_of

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


# `import ... from "x"` and `export ... from "x"` (over several lines too), `import "x"`, and `import("x")` or
# `import(`x/${kind}.js`)`, whose part before the first `${` is taken as a folder. A statement must start its
# line, so a line comment that mentions one is not an import.
STATIC_IMPORT = re.compile(
    r"""^[ \t]*(?:(?:import|export)\b[^;'"`]*?\bfrom|import)[ \t]*(["'])(?P<spec>[^"'\n]+)\1""", re.MULTILINE
)
DYNAMIC_IMPORT = re.compile(r"""\bimport\(\s*(["'`])(?P<spec>[^"'`$]*)(?P<template>\$\{)?""")


@dataclass(frozen=True)
class ModuleImport:
    source: Path  # the importing module, relative to the root
    namespace: str  # its static namespace (`frontend` for frontend/static/frontend/...)
    target: str  # the URL path the import resolves to, below /static/ ("shared/api.js"; "frontend/kinds/" for a folder)
    where: str  # path:line

    @property
    def target_namespace(self) -> str:
        return self.target.split("/", 1)[0]

    def __str__(self) -> str:
        return f"{self.where}: {self.namespace} imports {self.target}"


def static_modules(root: Path) -> dict[str, Path]:
    """Every ES module of the apps, by its path below /static/ ("frontend/worker.js"), to its file."""
    apps = apps_in(root)
    modules = {}
    for path in sorted(root.glob("*/static/**/*.js")):
        parts = path.relative_to(root).parts
        if parts[0] in apps and not SKIPPED_PARTS.intersection(parts):
            modules["/".join(parts[2:])] = path
    return modules


def module_imports(root: Path) -> tuple[list[ModuleImport], list[str]]:
    """The imports of every ES module of the apps, and the ones that name no module of theirs (a bare name, a
    path outside /static/, a file or folder that is not there)."""
    modules = static_modules(root)
    folders = {posixpath.dirname(url) + "/" for url in modules}
    found, unresolved = [], []
    for url, path in modules.items():
        text = path.read_text()
        specs = [(m, False) for m in STATIC_IMPORT.finditer(text)]
        specs += [(m, bool(m.group("template"))) for m in DYNAMIC_IMPORT.finditer(text)]
        for match, folder in specs:
            written = match.group("spec")
            spec = written + ("*" if folder else "")  # a template's folder: the dirname of a name in it
            where = f"{path.relative_to(root)}:{text.count(chr(10), 0, match.start('spec')) + 1}"
            if spec.startswith("/static/"):
                target = spec[len("/static/") :]
            elif spec.startswith(("./", "../")):
                target = posixpath.normpath(posixpath.join("/static", posixpath.dirname(url), spec))
                target = target[len("/static/") :] if target.startswith("/static/") else ""
            else:
                target = ""
            if folder and target:
                target = posixpath.dirname(target) + "/"
            if not target or (target not in folders if folder else target not in modules):
                unresolved.append(f"{where}: {written!r} is not a module of the apps' static folders")
                continue
            found.append(ModuleImport(path.relative_to(root), url.split("/", 1)[0], target, where))
    return found, unresolved


def namespace_crossings(imports: list[ModuleImport], shared: str = SHARED_STATIC) -> list[ModuleImport]:
    """Imports of another namespace's module than the shared one's (the shared modules import only their own)."""
    return [i for i in imports if i.target_namespace not in (i.namespace, shared)]


def module_edges(root: Path) -> list[Edge]:
    """The ES modules' imports as edges between the apps whose static folders hold them."""
    modules = static_modules(root)
    owners = {url: path.relative_to(root).parts[0] for url, path in modules.items()}
    owners.update({posixpath.dirname(url) + "/": owner for url, owner in owners.items()})
    edges = []
    for i in module_imports(root)[0]:
        source, target = i.source.parts[0], owners[i.target]
        if source != target:
            edges.append(Edge(source, target, i.where))
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
    assert [str(e) for e in upward_edges(import_edges(ROOT) + module_edges(ROOT))] == []


def test_the_app_import_graph_has_no_cycle():
    assert cycles(import_edges(ROOT) + module_edges(ROOT)) == []


def test_every_es_module_import_names_a_module_that_is_there():
    imports, unresolved = module_imports(ROOT)
    assert unresolved == []
    assert len(imports) > 40  # the scan reads the modules: the pages import a few dozen


def test_pages_import_their_own_modules_and_the_shared_ones_only():
    imports, _ = module_imports(ROOT)
    assert [str(i) for i in namespace_crossings(imports)] == []
    # The shared namespace stands below every page namespace: the ground floor.
    shared_home = {
        p.relative_to(ROOT).parts[0]
        for url, p in static_modules(ROOT).items()
        if url.startswith(f"{SHARED_STATIC}/")
    }
    assert shared_home == {"config"}


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


def test_the_checker_reads_es_module_imports_and_refuses_crossings(tmp_path):
    files = {
        "config/static/shared/api.js": 'import { clamp } from "./boxview.js";\nimport { x } from "../frontend/worker.js";\n',
        "config/static/shared/boxview.js": "export const clamp = 1;\n",
        "frontend/static/frontend/worker.js": (
            "// import { gone } from './nowhere.js' is only a comment\n"
            'import {\n  api,\n} from "../shared/api.js";\n'
            'export { clamp } from "/static/shared/boxview.js";\n'
            "const r = await import(`./kinds/${kind}.js`);\n"
            'import "../organize/page.js";\n'
            'import { y } from "lodash";\n'
        ),
        "frontend/static/frontend/kinds/yes.js": 'import { api } from "../../shared/api.js";\n',
        "organize/static/organize/page.js": 'import { z } from "../frontend/kinds/yes.js";\nimport("./missing.js");\n',
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    for app in ("frontend", "organize"):
        (tmp_path / app / "apps.py").write_text("")

    imports, unresolved = module_imports(tmp_path)

    assert sorted(str(i) for i in imports) == [
        "config/static/shared/api.js:1: shared imports shared/boxview.js",
        "config/static/shared/api.js:2: shared imports frontend/worker.js",
        "frontend/static/frontend/kinds/yes.js:1: frontend imports shared/api.js",
        "frontend/static/frontend/worker.js:4: frontend imports shared/api.js",
        "frontend/static/frontend/worker.js:5: frontend imports shared/boxview.js",
        "frontend/static/frontend/worker.js:6: frontend imports frontend/kinds/",
        "frontend/static/frontend/worker.js:7: frontend imports organize/page.js",
        "organize/static/organize/page.js:1: organize imports frontend/kinds/yes.js",
    ]
    assert unresolved == [
        "frontend/static/frontend/worker.js:8: 'lodash' is not a module of the apps' static folders",
        "organize/static/organize/page.js:2: './missing.js' is not a module of the apps' static folders",
    ]
    assert sorted(str(i) for i in namespace_crossings(imports)) == [
        "config/static/shared/api.js:2: shared imports frontend/worker.js",
        "frontend/static/frontend/worker.js:7: frontend imports organize/page.js",
        "organize/static/organize/page.js:1: organize imports frontend/kinds/yes.js",
    ]
    floors = {"config": 0, "organize": 1, "frontend": 2}
    assert sorted(str(e) for e in upward_edges(module_edges(tmp_path), layer=floors.__getitem__)) == [
        "config/static/shared/api.js:2: config imports frontend",
        "organize/static/organize/page.js:1: organize imports frontend",
    ]
