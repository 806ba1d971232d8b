"""`manage.py simulate`: run a simulated crowd through the platform's HTTP API and print a JSON summary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from config.roles import ORGANIZERS, REVIEWERS, WORKERS
from crowd.models import WorkerSource
from crowd.services import token_for, user_create
from hierarchy.algorithm import DagError
from hierarchy.fixture import FixtureError, load_fixture
from hierarchy.services import HierarchyConflict, concepts_upsert, hierarchy_load
from simulator import provider_flows
from simulator.detector import DetectorSpec
from simulator.driver import Accounts, OrganizerApi, dumps, simulate
from simulator.hierarchy_classes import leaf_classes, sibling_groups, synthetic_classes
from simulator.operators import (
    ShellOperator,
    dataset_accounts,
    provider_edge,
    provider_flow,
    server_setup_for,
)
from simulator.report import side_by_side
from simulator.scenarios import SCENARIOS
from simulator.scenarios.existing import DatasetUnavailable, ExistingDatasetScenario
from simulator.scenes import HOSTILE_SCENES, SceneClass
from simulator.simulated import CROWD_PRESETS, Crowd, confusable_pairs, crowd_spec
from simulator.transport import HttpTransport, InProcessTransport

DEFAULT_HIERARCHY = {
    "verify": "fixtures/hierarchies/voc20.json",
    "multilabel": "fixtures/hierarchies/ilsvrc_det200.json",
    "full": "fixtures/hierarchies/voc20.json",
}
# Scenarios that load the hierarchy's questions into the platform.
HIERARCHY_SCENARIOS = ("multilabel", "full")
CONSENSUS_RULES = ("dynamic", "weighted", *(f"majority{n}" for n in range(3, 16, 2)))
# The full scenario runs as a careful organizer would: with gold seeded at this rate unless --gold-rate says
# otherwise (the platform's gold policing and qualification are part of its design; docs/gold.md).
FULL_GOLD_RATE = 0.1
# Options a --compare-crowds run hands on to each crowd's own run (option name -> flag).
FORWARDED = (
    "scenario",
    "images",
    "workers",
    "seed",
    "scenes",
    "spammers",
    "synsets",
    "positive_rate",
    "consensus",
    "colluders",
    "gold_rate",
    "majority",
    "hierarchy",
    "order",
    "engine",
    "max_tasks",
    "draw_mode",
    "detector_recall",
    "proposal_threshold",
)


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
        parser.add_argument(
            "--crowd",
            choices=sorted(CROWD_PRESETS),
            default="default",
            help="The crowd: default (10%% spammers), hostile (issue 13: 20%% spammers, weak, sloppy and lazy "
            "workers, colluders, confusable classes, many small objects) or clean (honest workers only).",
        )
        parser.add_argument(
            "--scenes",
            choices=["default", "hostile"],
            default=None,
            help="full: the scenes; hostile has 35%% tiny objects and more instances (default: hostile with "
            "--crowd hostile, else default). Set it to compare crowds on the same scenes.",
        )
        parser.add_argument(
            "--compare-crowds",
            action="store_true",
            help="Run the scenario with the hostile and the clean crowd on the same seed and scenes (hostile "
            "scenes unless --scenes says otherwise), each on a fresh SQLite database of its own, and print both "
            "summaries side by side (a table on stderr) with the worker-seconds ratio.",
        )
        parser.add_argument(
            "--spammers",
            type=float,
            default=None,
            help="Share of spammers (overrides the crowd's; default crowd 0.1).",
        )
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
            help="verify, multilabel: the estimator, reliability-weighted (default) or dynamic consensus "
            "with per-synset calibration tables; verify also takes a fixed majority of N votes.",
        )
        parser.add_argument(
            "--colluders",
            type=float,
            default=None,
            help="Share of colluding workers (overrides the crowd's; default 0, hostile 0.02).",
        )
        parser.add_argument(
            "--gold-rate",
            type=float,
            default=None,
            help=f"verify, full: share of tasks that are gold (0 = off; default {FULL_GOLD_RATE} for full, 0 for "
            "verify); the organizer seeds gold from a fifth of the images (full: a fifth more images), which it "
            "labeled itself.",
        )
        parser.add_argument(
            "--image-size",
            default=None,
            help="Generated image size as WxH (default: realistic sizes; small is faster).",
        )
        parser.add_argument(
            "--majority",
            default="",
            help="full: also verify the same candidates by a fixed majority of N votes in a dataset of its own "
            "and print its figures beside dynamic consensus (comma-separated, e.g. 3,5,7).",
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
            "--extension-cap",
            type=int,
            default=None,
            help="verify, multilabel, full: the dataset's second vote cap (consensus settings' extension_cap; 0 is "
            "off). Default: the platform's (20).",
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
        parser.add_argument(
            "--provider",
            choices=provider_flows.PROVIDERS,
            default=None,
            help="Bring the crowd through a crowd provider's session flow instead of worker accounts: "
            "mturk-fake (HITs on an in-memory MTurk marketplace, bundles on /mturk/task/, publish_hits and "
            "sync_hits), external (a study link with completion codes) or inhouse (invitations, then the worker "
            "API). The summary gains a `provider` section.",
        )
        parser.add_argument(
            "--organizer-token",
            help="With --server: the API token of an organizer on that server. The run then creates its worker "
            "and reviewer accounts by invitations, uploads its hierarchy and does the operator steps through the "
            "API, so the server keeps its own database.",
        )
        parser.add_argument(
            "--sweep-wait",
            type=float,
            default=0.0,
            help="With --organizer-token (every scenario, not with --crowd-only): when the crowd runs dry with questions still open, wait "
            "up to this many seconds for the server's scheduled sweep to settle them (it waits "
            "CROWDLABEL_STARVED_AFTER_SECONDS, then runs every CROWDLABEL_STUCK_SWEEP_EVERY_SECONDS), as people "
            "would come back later; 0 (the default) does not wait.",
        )
        parser.add_argument(
            "--crowd-only",
            action="store_true",
            help="verify, multilabel and boxes: stop when the crowd runs dry, with no stuck-question sweep and no "
            "in-house reviewer, so the figures show what the crowd alone settled (by default a run goes on as a "
            "deployment would, as full always does: the sweep, then a simulated reviewer deciding every review "
            "item, and the summary counts what was left to a person).",
        )
        parser.add_argument(
            "--dataset",
            type=int,
            default=None,
            help="Run the crowd on this dataset already on the platform (its id): its own images and the "
            "pipelines its organizer started, instead of a dataset the run makes; --scenario, --images, "
            "--synsets, --hierarchy and --gold-rate are not used. In-process the run acts as the dataset's "
            "organizer; with --server and --organizer-token, as the token's organizer, who must organize it. "
            "The simulated accounts are scoped to the dataset. Answers come from a seeded made-up truth "
            "(docs/simulator.md), so the summary reports what the platform did, not precision or recall.",
        )
        parser.add_argument(
            "--draw-mode",
            choices=("corners", "extreme"),
            default="corners",
            help="boxes: how the dataset's workers draw (extreme: extreme clicking, docs/boxes.md).",
        )
        parser.add_argument(
            "--detector-recall",
            type=float,
            default=None,
            help="full: a simulated detector of this recall at IoU 0.7 (simulator/detector.py) proposes boxes; the "
            "organizer pushes them as a prediction set and the box jobs start from them (docs/boxes.md). Default: "
            "no detector.",
        )
        parser.add_argument(
            "--proposal-threshold",
            type=float,
            default=0.5,
            help="full, with --detector-recall: the lowest score of a proposal asked (default 0.5).",
        )
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, **opts):
        scenario_name = opts["scenario"]
        if opts["extension_cap"] is not None and scenario_name not in ("verify", *HIERARCHY_SCENARIOS):
            raise CommandError(f"--extension-cap applies to verify, multilabel and full, not {scenario_name}")
        if opts["synsets"] is None:
            opts["synsets"] = 0 if scenario_name in HIERARCHY_SCENARIOS else 10
        self.validate(opts)
        if not opts["compare_crowds"]:
            summary = self.run_one(opts, opts["crowd"])
            self.stdout.write(dumps(summary))
            return
        summaries = self.compare_crowds(opts)
        clean = summaries["clean"].get("worker_seconds_per_image")
        hostile = summaries["hostile"].get("worker_seconds_per_image")
        ratio = round(hostile / clean, 3) if hostile is not None and clean else None
        sys.stderr.write(side_by_side(summaries) + "\n")
        sys.stderr.write(f"worker-seconds per image, hostile / clean: {ratio}\n")
        self.stdout.write(dumps({**summaries, "worker_seconds_ratio": ratio}))

    def compare_crowds(self, opts) -> dict[str, dict]:
        """Each crowd in a run of its own on a fresh, migrated SQLite database and media folder (calibration
        tables are shared by every dataset of a database, so a second run in the same one would start from
        the first run's tables); same seed, same scenes."""
        args: list[str] = []
        for name in FORWARDED:
            value = opts[name]
            if value is None or value == () or value is False:
                continue
            if name == "majority":
                value = ",".join(map(str, value))
            args += [f"--{name.replace('_', '-')}", str(value)]
        if opts["image_size"] is not None:
            args += ["--image-size", "x".join(map(str, opts["image_size"]))]
        args += ["--no-progress"] if opts["no_progress"] else []
        args += ["--crowd-only"] if opts["crowd_only"] else []
        manage = str(Path(settings.BASE_DIR) / "manage.py")
        summaries = {}
        with tempfile.TemporaryDirectory(prefix="crowdlabel-compare-") as tmp:
            for name in ("hostile", "clean"):
                env = {
                    **os.environ,
                    "DATABASE_URL": f"sqlite:///{tmp}/{name}.sqlite3",
                    "CROWDLABEL_MEDIA_ROOT": f"{tmp}/media-{name}",
                }
                report = ["--report", str(opts["report"] / name)] if opts["report"] else []
                for command in (
                    ["migrate", "-v", "0"],
                    ["simulate", *args, "--crowd", name, *report],
                ):
                    run = subprocess.run(
                        [sys.executable, manage, *command], env=env, stdout=subprocess.PIPE, text=True
                    )
                    if run.returncode:
                        raise CommandError(f"the {name} crowd's run failed ({' '.join(command[:1])})")
                summaries[name] = json.loads(run.stdout)
        return summaries

    def run_one(self, opts, crowd_name: str) -> dict:
        if opts["dataset"] is not None:
            return self.run_existing(opts, crowd_name)
        scenario_name = opts["scenario"]
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
        keys = [c.key for c in classes]
        hostile = crowd_name == "hostile"

        run_id = uuid.uuid4().hex[:8]
        remote = server_setup_for(opts, hierarchy)
        accounts = (
            remote.accounts(run_id, opts["workers"])
            if remote
            else self.make_accounts(run_id, opts["workers"], nodes)
        )
        crowd = Crowd.build(
            self.crowd_spec(opts, crowd_name),
            class_keys=keys,
            confusable_pairs=confusable_pairs(sibling_groups(hierarchy, keys), opts["seed"])
            if hostile
            else (),
        )
        extra = {"draw_mode": opts["draw_mode"]} if scenario_name == "boxes" else {}
        if scenario_name == "verify":
            extra = {
                "consensus": opts["consensus"],
                "image_size": opts["image_size"],
                "gold_rate": opts["gold_rate"] or 0.0,
            }
        if scenario_name in HIERARCHY_SCENARIOS:
            if not remote:  # a server with its own database gets it by upload (RemoteSetup.accounts)
                self.load_hierarchy(hierarchy)
            extra = {
                "hierarchy_path": hierarchy,
                "order": opts["order"],
                "engine": opts["engine"],
                "consensus": opts["consensus"],
                "image_size": opts["image_size"],
            }
        if scenario_name in ("verify", *HIERARCHY_SCENARIOS):
            extra["extension_cap"] = opts["extension_cap"]  # None: the platform's default
        if scenario_name == "full" or not opts["crowd_only"]:
            extra |= {
                "operator": remote.operator() if remote else ShellOperator(),
                "reviewer_token": accounts.reviewer_token,
                "log": None if opts["no_progress"] else self.log,
            }
        if scenario_name == "full":
            extra |= {
                "scene_overrides": HOSTILE_SCENES if (opts["scenes"] or crowd_name) == "hostile" else None,
                "background": bool(opts["server"]),
                "majorities": opts["majority"],
                "gold_rate": FULL_GOLD_RATE if opts["gold_rate"] is None else opts["gold_rate"],
                "detector": None
                if opts["detector_recall"] is None
                else DetectorSpec(recall=opts["detector_recall"], seed=opts["seed"]),
                "proposal_threshold": opts["proposal_threshold"],
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
        with provider_edge(opts["provider"]) as fake:
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
                flow=provider_flow(opts["provider"], transport, scenario, crowd, opts["seed"], fake),
            )
        summary["crowd"] = crowd_name
        if not opts["no_progress"]:
            sys.stderr.write("\n")
        if opts["report"]:
            from simulator.report import write_report

            directory = opts["report"] / crowd_name if opts["compare_crowds"] else opts["report"]
            path = write_report(summary, directory)
            sys.stderr.write(f"report written to {path}\n")
        return summary

    @staticmethod
    def crowd_spec(opts, crowd_name: str):
        """The simulated crowd the options describe (`--crowd`, `--workers`, `--seed`, `--spammers`...)."""
        return crowd_spec(
            crowd_name,
            n_workers=opts["workers"],
            seed=opts["seed"],
            spammers=opts["spammers"],
            colluders=opts["colluders"],
        )

    def run_existing(self, opts, crowd_name: str) -> dict:
        """`--dataset ID`: the crowd works the dataset's own open work (simulator.scenarios.existing)."""
        run_id = uuid.uuid4().hex[:8]
        crowd = Crowd.build(self.crowd_spec(opts, crowd_name))
        scenario = ExistingDatasetScenario(
            crowd=crowd, seed=opts["seed"], dataset_id=opts["dataset"], positive_rate=opts["positive_rate"]
        )
        transport = HttpTransport(opts["server"]) if opts["server"] else InProcessTransport()
        remote = server_setup_for(opts, Path("."))
        try:
            if remote:  # refused before any invitation is made
                scenario.open_dataset(OrganizerApi(transport, opts["organizer_token"]))
                accounts = remote.accounts(run_id, opts["workers"], dataset_id=opts["dataset"])
            else:
                accounts = dataset_accounts(run_id, opts["workers"], opts["dataset"])
            summary = simulate(
                transport,
                scenario,
                crowd,
                accounts,
                dataset_name="",
                seed=opts["seed"],
                concurrency=opts["concurrency"],
                max_tasks=opts["max_tasks"],
                progress=None if opts["no_progress"] else self.progress,
            )
        except DatasetUnavailable as exc:
            raise CommandError(f"--dataset {opts['dataset']}: {exc}") from None
        summary["crowd"] = crowd_name
        if not opts["no_progress"]:
            sys.stderr.write("\n")
        return summary

    def validate(self, opts) -> None:
        problems = []
        if opts["images"] < 1:
            problems.append("--images must be at least 1")
        if opts["workers"] < 2:
            problems.append("--workers must be at least 2")
        spammers, colluders = opts["spammers"] or 0.0, opts["colluders"] or 0.0
        if not 0 <= spammers < 1:
            problems.append("--spammers must be in [0, 1)")
        if not 0 <= colluders < 1 or spammers + colluders >= 1:
            problems.append("--colluders must be in [0, 1) and leave room for honest workers")
        crowds = ("hostile", "clean") if opts["compare_crowds"] else (opts["crowd"],)
        for name in crowds:
            try:
                crowd_spec(name, n_workers=2, seed=0, spammers=opts["spammers"], colluders=opts["colluders"])
            except ValueError as exc:
                problems.append(f"--crowd {name}: {exc}")
        if opts["compare_crowds"] and opts["server"]:
            problems.append(
                "--compare-crowds runs each crowd on a fresh database of its own: not with --server"
            )
        if opts["compare_crowds"] and opts["scenes"] is None:
            opts["scenes"] = "hostile"  # the same scenes for both crowds
        if opts["gold_rate"] is not None and not 0 <= opts["gold_rate"] < 1:
            problems.append("--gold-rate must be in [0, 1)")
        if opts["gold_rate"] and (
            opts["scenario"] not in ("verify", "full") or opts["consensus"].startswith("majority")
        ):
            problems.append(
                "--gold-rate needs the verify or full scenario with dynamic or weighted consensus"
            )
        try:
            opts["majority"] = tuple(int(n) for n in opts["majority"].split(",") if n.strip())
        except ValueError:
            problems.append("--majority takes vote counts separated by commas, e.g. 3,5")
            opts["majority"] = ()
        if any(n < 1 for n in opts["majority"]):
            problems.append("--majority vote counts must be at least 1")
        if opts["provider"] == "mturk-fake" and opts["server"]:
            problems.append(
                "--provider mturk-fake runs in-process: the fake marketplace lives in this process"
            )
        if opts["provider"] and opts["concurrency"] > 1:
            problems.append("--provider runs the crowd in one thread (--concurrency 1)")
        if opts["provider"] and opts["compare_crowds"]:
            problems.append("--provider runs one crowd: not with --compare-crowds")
        if opts["detector_recall"] is not None and (
            opts["scenario"] != "full" or not 0 <= opts["detector_recall"] <= 1
        ):
            problems.append("--detector-recall is a recall in [0, 1] for the full scenario")
        if not 0 <= opts["proposal_threshold"] <= 1:
            problems.append("--proposal-threshold must be in [0, 1]")
        if opts["concurrency"] < 1:
            problems.append("--concurrency must be at least 1")
        if opts["dataset"] is not None and (opts["compare_crowds"] or opts["provider"] or opts["report"]):
            problems.append(
                "--dataset runs one crowd on that dataset's own work: not with --compare-crowds, --provider "
                "or --report"
            )
        if opts["dataset"] is not None and opts["dataset"] < 1:
            problems.append("--dataset takes a dataset id (1 or more)")
        if opts["organizer_token"] and not opts["server"]:
            problems.append("--organizer-token needs --server (a server with its own database)")
        if opts["sweep_wait"] < 0 or (opts["sweep_wait"] and not opts["organizer_token"]):
            problems.append(
                "--sweep-wait is seconds (0 or more) to wait for the sweep of a server with its own database "
                "(--organizer-token)"
            )
        if (
            opts["organizer_token"]
            and opts["dataset"] is None
            and opts["hierarchy"] is None
            and not (
                Path(settings.BASE_DIR)
                / DEFAULT_HIERARCHY.get(opts["scenario"], "fixtures/hierarchies/voc20.json")
            ).exists()
        ):
            problems.append(
                "--organizer-token needs a hierarchy file (--hierarchy): its leaves are the classes"
            )
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
            reviewer = user_create(username=f"sim-{run_id}-reviewer", password=None, roles=(REVIEWERS,))
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
            return Accounts(
                organizer_token=token_for(organizer), worker_tokens=tokens, reviewer_token=token_for(reviewer)
            )

    def log(self, message: str) -> None:
        sys.stderr.write(f"\n{message}\n")
        sys.stderr.flush()

    def progress(self, what: str, count: int) -> None:
        if count % 50 == 0:
            sys.stderr.write(f"\r{what}: {count}")
            sys.stderr.flush()
