"""`manage.py simulate`: run a simulated crowd through the platform's HTTP API and print a JSON summary."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from config.roles import ORGANIZERS, WORKERS
from crowd.driver import Accounts, dumps, simulate
from crowd.models import WorkerSource
from crowd.scenarios import SCENARIOS
from crowd.scenes import SceneClass
from crowd.services import token_for, user_create
from crowd.simulated import Crowd, CrowdSpec
from crowd.transport import HttpTransport, InProcessTransport
from hierarchy.algorithm import DagError
from hierarchy.fixture import FixtureError, load_fixture
from hierarchy.services import HierarchyConflict, concepts_upsert, hierarchy_load

DEFAULT_HIERARCHY = {
    "verify": "fixtures/hierarchies/voc20.json",
    "multilabel": "fixtures/hierarchies/ilsvrc_det200.json",
}
CONSENSUS_RULES = ("dynamic", "weighted", *(f"majority{n}" for n in range(3, 16, 2)))


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


class Command(BaseCommand):
    help = (
        "Run a simulated crowd against the platform through its HTTP API (in-process, or a server with --server) "
        "and print one JSON summary comparing the final labels with the ground truth."
    )

    def add_arguments(self, parser):
        parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="verify")
        parser.add_argument("--images", type=int, default=200, help="Generated images (default 200).")
        parser.add_argument("--workers", type=int, default=30, help="Simulated workers (default 30).")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--spammers", type=float, default=0.1, help="Share of spammers (default 0.1).")
        parser.add_argument(
            "--synsets",
            type=int,
            default=None,
            help="Use the first K leaf synsets (default 10 for verify, all for multilabel; 0 = all).",
        )
        parser.add_argument(
            "--positive-rate", type=float, default=0.6, help="Share of true candidates (verify)."
        )
        parser.add_argument(
            "--consensus",
            choices=CONSENSUS_RULES,
            default="weighted",
            help="verify: dynamic consensus with per-synset calibration (default), reliability-weighted, or "
            "a fixed majority of N votes.",
        )
        parser.add_argument(
            "--colluders", type=float, default=0.0, help="Share of colluding workers (default 0)."
        )
        parser.add_argument(
            "--gold-rate",
            type=float,
            default=0.0,
            help="verify: share of tasks that are gold (default 0 = off); the organizer seeds gold from a "
            "fifth of the images, which it labeled itself.",
        )
        parser.add_argument(
            "--image-size",
            default=None,
            help="verify: generated image size as WxH (default: realistic sizes; small is faster).",
        )
        parser.add_argument(
            "--hierarchy", type=Path, default=None, help="Hierarchy fixture (JSON) for the classes."
        )
        parser.add_argument(
            "--order",
            choices=["breadth_first", "correlation"],
            default="breadth_first",
            help="Question order (multilabel): ILSVRC breadth-first, or correlation-aware.",
        )
        parser.add_argument(
            "--engine",
            choices=["consensus", "vote"],
            default="consensus",
            help="multilabel: decide questions with the consensus engine (estimator from --consensus), or the "
            "interim yes-biased sequential vote.",
        )
        parser.add_argument(
            "--server",
            default=None,
            help="Base URL of a running server sharing this DATABASE_URL (accounts and concepts are created in the database directly; default: in-process).",
        )
        parser.add_argument(
            "--concurrency", type=int, default=1, help="Parallel worker threads (needs --server)."
        )
        parser.add_argument(
            "--max-tasks", type=int, default=None, help="Stop after this many tasks (a budget)."
        )
        parser.add_argument(
            "--report", type=Path, default=None, help="Also write a Markdown report with plots here."
        )
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, **opts):
        scenario_name = opts["scenario"]
        if opts["synsets"] is None:
            opts["synsets"] = 0 if scenario_name == "multilabel" else 10
        self.validate(opts)
        hierarchy = Path(
            opts["hierarchy"]
            or Path(settings.BASE_DIR)
            / DEFAULT_HIERARCHY.get(scenario_name, "fixtures/hierarchies/voc20.json")
        )
        if opts["hierarchy"] is None and not hierarchy.exists():
            nodes = synthetic_classes(opts["synsets"] or 10)
        else:
            nodes = leaf_classes(hierarchy)
        if opts["synsets"]:
            if opts["synsets"] > len(nodes):
                raise CommandError(
                    f"--synsets {opts['synsets']} is more than the {len(nodes)} leaves of {hierarchy}"
                )
            nodes = nodes[: opts["synsets"]]
        classes = [SceneClass(n["wnid"], n["name"]) for n in nodes]

        run_id = uuid.uuid4().hex[:8]
        accounts = self.make_accounts(run_id, opts["workers"], nodes)
        crowd = Crowd.build(
            CrowdSpec(
                n_workers=opts["workers"],
                seed=opts["seed"],
                spammer_fraction=opts["spammers"],
                colluder_fraction=opts["colluders"],
            ),
            class_keys=[c.key for c in classes],
        )
        extra = {}
        if scenario_name == "verify":
            extra = {
                "consensus": opts["consensus"],
                "image_size": opts["image_size"],
                "gold_rate": opts["gold_rate"],
            }
        if scenario_name == "multilabel":
            self.load_hierarchy(hierarchy)
            extra = {
                "hierarchy_path": hierarchy,
                "order": opts["order"],
                "engine": opts["engine"],
                "consensus": opts["consensus"],
                "image_size": opts["image_size"],
            }
        scenario = SCENARIOS[scenario_name](
            classes=classes,
            crowd=crowd,
            n_images=opts["images"],
            seed=opts["seed"],
            positive_rate=opts["positive_rate"],
            **extra,
        )
        transport = HttpTransport(opts["server"]) if opts["server"] else InProcessTransport()
        summary = simulate(
            transport,
            scenario,
            crowd,
            accounts,
            dataset_name=f"sim-{scenario_name}-{opts['seed']}-{run_id}",
            seed=opts["seed"],
            concurrency=opts["concurrency"],
            max_tasks=opts["max_tasks"],
            progress=None if opts["no_progress"] else self.progress,
        )
        if not opts["no_progress"]:
            sys.stderr.write("\n")
        if opts["report"]:
            from crowd.report import write_report

            path = write_report(summary, opts["report"])
            sys.stderr.write(f"report written to {path}\n")
        self.stdout.write(dumps(summary))

    def validate(self, opts) -> None:
        problems = []
        if opts["images"] < 1:
            problems.append("--images must be at least 1")
        if opts["workers"] < 2:
            problems.append("--workers must be at least 2")
        if not 0 <= opts["spammers"] < 1:
            problems.append("--spammers must be in [0, 1)")
        if not 0 <= opts["colluders"] < 1 or opts["spammers"] + opts["colluders"] >= 1:
            problems.append("--colluders must be in [0, 1) and leave room for honest workers")
        if not 0 <= opts["gold_rate"] < 1:
            problems.append("--gold-rate must be in [0, 1)")
        if opts["gold_rate"] and (opts["scenario"] != "verify" or opts["consensus"].startswith("majority")):
            problems.append("--gold-rate needs the verify scenario with dynamic or weighted consensus")
        if opts["concurrency"] < 1:
            problems.append("--concurrency must be at least 1")
        if opts["concurrency"] > 1 and not opts["server"]:
            problems.append("--concurrency above 1 needs --server (a running server to load)")
        if opts["synsets"] < 0:
            problems.append("--synsets must be at least 1 (or 0 for all)")
        if opts["image_size"] is not None:
            try:
                w, h = (int(x) for x in opts["image_size"].lower().split("x"))
            except ValueError:
                w = h = 0
            if not (32 <= w <= 2000 and 32 <= h <= 2000):
                problems.append("--image-size must be WxH with sides from 32 to 2000 pixels, e.g. 128x96")
            opts["image_size"] = (w, h)
        if problems:
            raise CommandError("; ".join(problems))

    def load_hierarchy(self, path: Path) -> None:
        """The question hierarchy, loaded as `load_hierarchy` does (a no-op when it is already loaded)."""
        try:
            hierarchy_load(load_fixture(path))
        except FixtureError as exc:
            raise CommandError(str(exc)) from None
        except (DagError, HierarchyConflict) as exc:
            raise CommandError(f"{path}: {exc}") from None

    def make_accounts(self, run_id: str, n_workers: int, nodes: list[dict]) -> Accounts:
        """The organizer and worker accounts the simulated crowd logs in with, and the concepts it asks about.
        (Accounts and concepts have no public API: an operator creates them, as here.)"""
        with transaction.atomic():
            concepts_upsert(nodes)
            organizer = user_create(username=f"sim-{run_id}-organizer", password=None, roles=(ORGANIZERS,))
            tokens = [
                token_for(
                    user_create(
                        username=f"sim-{run_id}-w{i:04d}",
                        password=None,
                        roles=(WORKERS,),
                        source=WorkerSource.SIMULATED,
                        external_id=f"{run_id}-{i}",
                    )
                )
                for i in range(n_workers)
            ]
            return Accounts(organizer_token=token_for(organizer), worker_tokens=tokens)

    def progress(self, what: str, count: int) -> None:
        if count % 50 == 0:
            sys.stderr.write(f"\r{what}: {count}")
            sys.stderr.flush()
