"""How `simulate` operates the platform besides its crowd: an operator's shell commands (overlap scan, stuck sweep,
splits) in-process, the provider steps (bundle sizes, MTurk HIT types, publishing and syncing HITs) against the
fake marketplace, the provider flow a run's crowd arrives through, and the API-only setup of a server with its own
database (`--server URL --organizer-token TOKEN`)."""

from __future__ import annotations

import io
import json
import time
from contextlib import contextmanager
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction
from django.test import override_settings

from annotation.models import Dataset, DatasetGrant, ReviewerGrant
from config.roles import REVIEWERS, WORKERS
from crowd.models import BundleSize, MturkBudget, MturkHitType, WorkerSource
from crowd.providers import mturk
from crowd.services import token_for, user_create
from gold import quality as gold_quality
from gold import services as gold_services
from outbox import services as outbox_services
from outbox.models import Message, MessageState
from review import stuck
from simulator import provider_flows, server_setup
from simulator.driver import Accounts
from simulator.mturk_fake import FakeMturk
from simulator.transport import HttpTransport

# Splits of the full scenario: no test split, so the export API returns every label (test labels are withheld).
FULL_SPLITS = {"train": 0.8, "val": 0.2, "test": 0.0}
# A simulated MTurk run's budget cap: ample for a small scenario (each HIT's estimate counts against it).
SIMULATED_MTURK_BUDGET = Decimal("1000.00")


class ShellOperator:
    """The steps of the full scenario that have no API: what an operator runs from the shell."""

    def scan_overlaps(self, dataset_name: str) -> None:
        call_command("scan_overlaps", dataset=dataset_name, stdout=io.StringIO())

    def sweep_stuck(self, dataset_name: str) -> int:
        dataset_id = Dataset.objects.get(name=dataset_name).pk
        # What the schedule runs; the simulated crowd has just run dry, so nothing is waited for.
        report = stuck.stuck_enqueue(dataset_id=dataset_id, starved_after=0)
        return sum(report.starved_settled.values()) + report.box_jobs_stranded + report.table_waits_ended

    def background_awaited(self, dataset_name: str) -> int:
        """After the sweep: the background work the dataset's answers owe, relayed and waited for
        (`background_awaited`); returns how many jobs ran."""
        return background_awaited(Dataset.objects.get(name=dataset_name).pk, relay=True)

    def make_splits(self, dataset_name: str, seed: int) -> None:
        call_command(
            "make_splits",
            dataset=dataset_name,
            seed=seed,
            freeze=True,
            stdout=io.StringIO(),
            stderr=io.StringIO(),
            **FULL_SPLITS,
        )


REBUILD_TASK = "consensus.tasks.calibration_rebuild"
# The background work that changes what the crowd is asked after its answers: a calibration rebuild serves the
# questions waiting for its table; a worker's quality test (gold's score, the sequential test over every answer)
# may block them, and a block voids their votes and reopens the questions those votes decided.
OWED_TASKS = (REBUILD_TASK, gold_quality.QUALITY_TASK, gold_services.SCORE_TASK)
# Handed to the broker or running on a worker: what a worker will finish. A pending message is the relay's to
# send, so it is owed too when the relay runs apart from this process; inside an open transaction (a test's) it
# waits for a commit that may never come, and is not waited for.
OWED_STATES = (MessageState.SENT, MessageState.RUNNING)
# How long the operator waits, once the crowd ran dry, for the background work the platform owes the dataset.
REBUILD_WAIT_SECONDS = 120.0


def background_awaited(dataset_id: int, *, timeout: float = REBUILD_WAIT_SECONDS, relay: bool = False) -> int:
    """The background work the dataset's answers have owed (`OWED_TASKS`: outbox messages not yet done) when
    the crowd ran dry, waited for: the last calibration vote's rebuild runs on a Celery worker after its commit,
    and the questions waiting for that table are served only then; the last decisions' quality tests run there
    too, and one that blocks a spammer reopens the questions their votes decided (the soak: a run that stopped
    first left 23 questions open with nobody to answer them). A crowd that saw no task for those seconds is not
    done (people come back later), and the sweep leaves such questions alone since someone can take them.
    `relay` (outside a transaction only) first runs the schedule's outbox relay, as the operator runs the
    schedule's sweep: `simulate` in process has no beat (and, with eager Celery, no worker), so work recorded
    with a submit's writes (a quality test, sent only by the relay) was waited for until `timeout` at every
    sweep (a CI run's in-process boxes scenario never ended). With a beat elsewhere it is one more run of a
    relay that is safe to run in several processes. The crowd has run dry, so every on-commit send has
    happened: the grace the relay leaves them is not waited out; the relay runs again until none of the owed is
    pending (each run sends at most its batch limit).
    Returns how many of those messages ran within `timeout` (the crowd then looks for work again); 0 when none
    was owed or none ran (what is still owed is left, as at the end of a real run)."""
    in_transaction = transaction.get_connection().in_atomic_block
    states = OWED_STATES if in_transaction else (MessageState.PENDING, *OWED_STATES)
    owed = Message.objects.filter(dataset_id=dataset_id, task_name__in=OWED_TASKS, state__in=states)
    ids = set(owed.values_list("pk", flat=True))
    if not ids:
        return 0
    deadline = time.monotonic() + timeout
    if relay and not in_transaction:
        # One relay sends at most its `limit` (500) of what is due: relay again while it sends and some of
        # the owed are still pending (a DET-200 run owed more than 500 quality tests, and the rest were
        # waited for until the timeout; none of them would ever have been sent).
        pending = Message.objects.filter(pk__in=ids, state=MessageState.PENDING)
        while outbox_services.relay(grace=timedelta(0))["sent"] and pending.exists():
            if time.monotonic() >= deadline:
                break
    while True:
        left = Message.objects.filter(pk__in=ids, state__in=states).count()
        if not left or time.monotonic() >= deadline:
            return len(ids) - left
        time.sleep(0.5)


class ProviderOperator:
    """The shell side of `--provider mturk-fake`: what an organizer sets up in the admin (a HIT type and a
    budget, the bundle size) and the commands they run (`publish_hits`, `sync_hits`)."""

    def bundle_size(self, dataset_name: str, kind: str, size: int) -> None:
        BundleSize.objects.update_or_create(
            dataset=Dataset.objects.get(name=dataset_name), kind=kind, defaults={"size": size}
        )

    def mturk_setup(self, dataset_name: str, kind: str) -> None:
        dataset = Dataset.objects.get(name=dataset_name)
        MturkHitType.objects.update_or_create(
            dataset=dataset,
            kind=kind,
            defaults={
                "title": "Simulated: does the image show it?",
                "description": "Answer yes or no about a few images.",
                "keywords": "image, yes/no",
                "reward": Decimal("0.20"),
                "bonus": Decimal("0.05"),
                "min_approval_rate": 95,
            },
        )
        MturkBudget.objects.update_or_create(dataset=dataset, defaults={"cap": SIMULATED_MTURK_BUDGET})

    def publish_hits(self, dataset_name: str, kind: str, count: int, max_assignments: int) -> None:
        call_command(
            "publish_hits",
            dataset=dataset_name,
            kind=kind,
            count=count,
            max_assignments=max_assignments,
            stdout=io.StringIO(),
        )

    def sync_hits(self) -> dict:
        out = io.StringIO()
        call_command("sync_hits", dispose_finished=True, stdout=out)
        return json.loads(out.getvalue())


@contextmanager
def provider_edge(provider: str | None):
    """`mturk-fake`: the fake marketplace as this process's MTurk client, and a public https address for the
    ExternalQuestion (MTurk frames only HTTPS pages) unless one is configured."""
    if provider != "mturk-fake":
        yield None
        return
    public = settings.CROWDLABEL["MTURK_PUBLIC_URL"] or "https://crowdlabel.example"
    with (
        override_settings(CROWDLABEL={**settings.CROWDLABEL, "MTURK_PUBLIC_URL": public}),
        mturk.client_replaced(FakeMturk()) as fake,
    ):
        yield fake


def provider_flow(provider: str | None, transport, scenario, crowd, seed: int, fake):
    if provider is None:
        return None
    if provider == "inhouse":
        return provider_flows.InhouseFlow(transport, scenario, crowd, seed=seed)
    if len(scenario.kinds) != 1:
        raise CommandError(
            f"--provider {provider} runs scenarios of one task kind (verify); not {scenario.name}"
        )
    if provider == "external":
        return provider_flows.StudyFlow(transport, scenario, crowd, seed=seed, operator=ProviderOperator())
    return provider_flows.MturkFlow(
        transport, scenario, crowd, seed=seed, fake=fake, operator=ProviderOperator()
    )


class RemoteSetup:
    """`--server` with `--organizer-token`: what `make_accounts`, `load_hierarchy` and `ShellOperator` do in
    process, done through the server's API (`simulator.server_setup`)."""

    def __init__(self, server: str, token: str, hierarchy: Path, sweep_wait: float = 0.0) -> None:
        self.transport = HttpTransport(server)
        self.token = token
        self.hierarchy = hierarchy
        self.sweep_wait = sweep_wait

    def accounts(self, run_id: str, n_workers: int, dataset_id: int | None = None) -> Accounts:
        """With `dataset_id` (`--dataset`): accounts scoped to that dataset, and no hierarchy upload (the
        dataset's classes are on the server already)."""
        try:
            if dataset_id is None:
                server_setup.hierarchy_upload(self.transport, self.token, self.hierarchy)
            return server_setup.api_accounts(self.transport, self.token, run_id, n_workers, dataset_id)
        except server_setup.ServerSetupError as exc:
            raise CommandError(str(exc)) from None

    def operator(self) -> server_setup.ApiOperator:
        return server_setup.ApiOperator(self.transport, self.token, FULL_SPLITS, sweep_wait=self.sweep_wait)


def server_setup_for(opts, hierarchy: Path) -> RemoteSetup | None:
    if not opts["organizer_token"]:
        return None
    return RemoteSetup(opts["server"], opts["organizer_token"], hierarchy, opts["sweep_wait"])


def dataset_accounts(run_id: str, n_workers: int, dataset_id: int) -> Accounts:
    """`simulate --dataset ID` in-process or against a server sharing the database: the run acts as the
    dataset's (first) organizer, and its workers and reviewer are granted that dataset only (scoped), so they
    never take another dataset's tasks. An unknown or archived dataset is refused, saying which."""
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None:
        raise CommandError(f"--dataset {dataset_id}: no dataset has this id")
    if dataset.archived_at is not None:
        raise CommandError(
            f"--dataset {dataset_id} ({dataset.name}) is archived: it hands out no task; restore it first"
        )
    organizer = dataset.organizers.order_by("pk").first()
    if organizer is None:
        raise CommandError(f"--dataset {dataset_id} ({dataset.name}) has no organizer to run it as")
    with transaction.atomic():
        tokens = []
        for i in range(n_workers):
            user = user_create(
                username=f"sim-{run_id}-w{i:04d}",
                password=None,
                roles=(WORKERS,),
                source=WorkerSource.SIMULATED,
                external_id=f"{run_id}-{i}",
            )
            DatasetGrant.objects.create(worker=user.worker, dataset=dataset)
            tokens.append(token_for(user))
        reviewer = user_create(username=f"sim-{run_id}-reviewer", password=None, roles=(REVIEWERS,))
        ReviewerGrant.objects.create(user=reviewer, dataset=dataset)
        return Accounts(
            organizer_token=token_for(organizer), worker_tokens=tokens, reviewer_token=token_for(reviewer)
        )
