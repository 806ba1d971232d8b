"""The crowd simulator's driver: simulated workers take tasks and submit answers through the HTTP API until
the pipelines finish, then the platform's final labels are compared with the ground truth.

Workers see only API responses; the ground truth stays in the scenario object. The driver never imports the
platform's models (a test checks), so what it measures is what a real crowd would get.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np

from simulator.simulated import Crowd, SimulatedWorker
from simulator.transport import Reply, Transport

SUMMARY_KEYS = (
    "precision",
    "recall",
    "votes_per_image",
    "questions_per_image",
    "box_coverage",
    "box_accuracy",
    "tasks_per_second",
    "worker_seconds_per_image",
)
# Keys measured with the wall clock: they describe the machine, not the crowd, so they are the only ones that
# differ between two runs with the same seed.
WALL_CLOCK_KEYS = ("tasks_per_second", "wall_seconds")


@dataclass
class Accounts:
    organizer_token: str
    worker_tokens: list[str]
    reviewer_token: str | None = None


@dataclass
class Stats:
    tasks_answered: int = 0
    tasks_skipped: int = 0
    worker_seconds: float = 0.0
    by_kind: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    submit_retries: int = 0  # submits sent again after a 5xx or no answer (same Idempotency-Key)
    # time.monotonic() when the platform last confirmed an answer (a submit answered 200 or 201): what a scenario
    # measures its later steps from (e.g. how long after the crowd's last answer an export was requested).
    last_answer_at: float | None = None


# A submit goes as the provider session page sends it (frontend/bundle.js through config/static/shared/api.js,
# submitAnswer): an attempt answered 5xx, or not answered at all, is sent again with the same Idempotency-Key, up
# to 3 attempts in all, after a pause of 0.5 s times the attempt. (The worker page keeps an unsaved answer and
# sends it again with its key after 1, 2, 4, 8 s until it is stored: frontend/worker/delivery.js.) A retry of an
# answer the platform did store is answered with it (200).
SUBMIT_ATTEMPTS = 3
SUBMIT_RETRY_PAUSE = 0.5


def submit_with_retries(send: Callable[[], Reply], stats: Stats, lock: threading.Lock | None = None) -> Reply:
    """`send()` the submit like the worker page, counting each retry in `stats.submit_retries`; the last
    reply (status 0 when the last attempt got none)."""
    reply = Reply(0, None)
    for attempt in range(1, SUBMIT_ATTEMPTS + 1):
        if attempt > 1:
            with lock if lock is not None else contextlib.nullcontext():
                stats.submit_retries += 1
            time.sleep(SUBMIT_RETRY_PAUSE * (attempt - 1))
        try:
            reply = send()
        except (OSError, http.client.HTTPException) as exc:  # the connection failed: no answer came back
            reply = Reply(0, f"no answer: {exc}")
            continue
        if reply.status < 500:
            return reply
    return reply


class Scenario(Protocol):
    name: str
    kinds: tuple[str, ...]

    def setup(self, api: OrganizerApi) -> None: ...

    def answer(self, worker: SimulatedWorker, assignment: dict) -> tuple[dict | None, float]: ...

    def summarize(self, api: OrganizerApi, stats: Stats) -> dict[str, Any]: ...


# How long the crowd waits, when no task is available, for background work (e.g. a calibration table being
# built by a Celery worker) that a scenario says is still pending.
PENDING_WAIT_SECONDS = 30.0
PENDING_POLL_SECONDS = 0.5
# How often a thread of a concurrent crowd whose workers found nothing looks whether another one took a task.
CROWD_POLL_SECONDS = 0.05


class OrganizerApi:
    """The organizer's side of the API, as a scenario uses it for setup and for reading final labels."""

    def __init__(self, transport: Transport, token: str) -> None:
        self.transport = transport
        self.token = token
        self.dataset_id: int | None = None
        self.dataset_name: str | None = None
        # What a worker's lease names an uploaded image by (task.image.ref: an opaque reference, never the id).
        self.image_of_ref: dict[str, int] = {}

    def call(self, method: str, path: str, **kwargs) -> Reply:
        """A 503 says nothing was kept (the database connection was lost, or the server is restarting), and no
        answer at all says nothing either way: the request is sent again after a pause, as an organizer would,
        up to SUBMIT_ATTEMPTS in all (an upload sent again is answered with what the first stored)."""
        reply = Reply(0, None)
        for attempt in range(1, SUBMIT_ATTEMPTS + 1):
            if attempt > 1:
                time.sleep(SUBMIT_RETRY_PAUSE * (attempt - 1))
            try:
                reply = self.transport.call(method, path, token=self.token, **kwargs)
            except (OSError, http.client.HTTPException) as exc:  # no answer (a server process killed)
                if attempt == SUBMIT_ATTEMPTS:
                    raise
                reply = Reply(0, f"no answer: {exc}")
                continue
            if reply.status != 503:
                break
        return reply

    def create_dataset(self, name: str, description: str = "") -> int:
        data = self.call(
            "POST", "/api/v1/datasets/", json_body={"name": name, "description": description}
        ).expect(201)
        self.dataset_id, self.dataset_name = data["id"], name
        return self.dataset_id

    def upload(
        self, files: list[tuple[str, bytes]], batch: int = 50, progress: Callable | None = None
    ) -> dict[str, int]:
        """Upload images in batches; returns {file name: image id}. Every file must be stored."""
        ids: dict[str, int] = {}
        for start in range(0, len(files), batch):
            chunk = files[start : start + batch]
            # A retried chunk (its first answer lost) is answered with what the first attempt stored: 200
            # when all of it was there already.
            report = self.call("POST", f"/api/v1/datasets/{self.dataset_id}/images/", files=chunk).expect(
                200, 201
            )
            if report["rejected"]:
                raise RuntimeError(f"the platform rejected generated images: {report['rejected']}")
            ids.update({item["name"]: item["id"] for item in report["stored"]})
            self.image_of_ref.update({item["ref"]: item["id"] for item in report["stored"]})
            if progress:
                progress(len(ids))
        return ids

    def paged(self, path: str, params: dict | None = None) -> list[dict]:
        items: list[dict] = []
        page = 1
        while True:
            data = self.call("GET", path, params={**(params or {}), "page": page}).expect(200)
            items.extend(data["results"])
            if not data.get("next"):
                return items
            page += 1


def run_crowd(
    transport: Transport,
    scenario: Scenario,
    crowd: Crowd,
    tokens: list[str],
    *,
    dataset_id: int,
    seed: int,
    concurrency: int = 1,
    max_tasks: int | None = None,
    progress: Callable[[int], None] | None = None,
    pending: Callable[[], bool] | None = None,
    stats: Stats | None = None,
) -> Stats:
    """Let the crowd work until no worker gets a task in a whole round (or `max_tasks` is spent).

    Single-threaded mode is deterministic: each round the workers come in a seeded random order and each takes
    at most one task. With `concurrency` > 1, that many threads share the crowd (for load against a server).
    A round without work ends the run unless `pending()` says background work will release more tasks soon.
    Counts add to `stats` when given (a scenario in phases), and the returned Stats is this run's alone."""
    total = stats
    stats = Stats()
    lock = threading.Lock()
    members = list(zip(crowd.workers, tokens, strict=True))

    def lease(token: str) -> Reply:
        """The next task, as the worker page takes one: a lease whose answer was lost (no answer, a 5xx) is
        still held by the worker, so after a failed attempt, and when the queue has nothing, the worker's held
        leases are asked for first (the page's resume after a reload) instead of leaving that task locked
        until its lease expires."""
        reply = submit_with_retries(
            lambda: transport.call(
                "GET",
                "/api/v1/tasks/next",
                token=token,
                params={"dataset": dataset_id, "kinds": ",".join(scenario.kinds)},
            ),
            Stats(),
        )
        if reply.status == 200:
            return reply
        held = submit_with_retries(
            lambda: transport.call("GET", "/api/v1/assignments/", token=token, params={"held": "true"}),
            Stats(),
        )
        if held.status == 200:
            mine = [a for a in held.data["results"] if a["task"]["kind"] in scenario.kinds]
            if mine:
                return Reply(200, mine[0])
        return reply

    def one_task(worker: SimulatedWorker, token: str) -> bool:
        reply = lease(token)
        if reply.status == 204:
            return False
        if reply.status != 200:  # the server did not answer the lease at all: the worker tries again later
            time.sleep(SUBMIT_RETRY_PAUSE)
            return True
        assignment = reply.data
        answer, seconds = scenario.answer(worker, assignment)
        if answer is None:
            # 404/409: a retried release whose first attempt went through (the assignment is no longer held).
            submit_with_retries(
                lambda: transport.call(
                    "POST", f"/api/v1/assignments/{assignment['id']}/release", token=token
                ),
                Stats(),
            ).expect(200, 404, 409)
            with lock:
                stats.tasks_skipped += 1
            return True
        key = uuid.UUID(int=int(np.random.default_rng([seed, assignment["id"]]).integers(0, 2**63))).hex
        result = submit_with_retries(
            lambda: transport.call(
                "POST",
                f"/api/v1/assignments/{assignment['id']}/submit",
                token=token,
                json_body={"answer": answer},
                headers={"Idempotency-Key": key},
            ),
            stats,
            lock,
        )
        with lock:
            if result.status in (200, 201):
                stats.last_answer_at = time.monotonic()
                stats.tasks_answered += 1
                stats.worker_seconds += seconds
                kind = assignment["task"]["kind"]
                stats.by_kind[kind] = stats.by_kind.get(kind, 0) + 1
            else:
                stats.errors.append(f"{result.status}: {result.data}")
        if progress:
            progress(stats.tasks_answered)
        return True

    def budget_left() -> bool:
        return max_tasks is None or stats.tasks_answered + stats.tasks_skipped < max_tasks

    idle_since: list[float] = []  # when the current stretch of rounds without work began

    def wait_for_pending() -> bool:
        """After a round without work: True if pending work may release tasks (after a short sleep), False
        when nothing is pending or the crowd has waited PENDING_WAIT_SECONDS in all."""
        if pending is None or not pending():
            return False
        with lock:
            if not idle_since:
                idle_since.append(time.monotonic())
            waited = time.monotonic() - idle_since[0]
        if waited > PENDING_WAIT_SECONDS:
            return False
        time.sleep(PENDING_POLL_SECONDS)
        return True

    order_rng = np.random.default_rng([seed, 0x0DE5])
    if concurrency <= 1:
        while budget_left():
            worked = False
            for index in order_rng.permutation(len(members)):
                if not budget_left():
                    break
                worked |= one_task(*members[index])
            if worked:
                idle_since.clear()
            elif not wait_for_pending():
                break
        return _added(total, stats)

    # Concurrent mode: each thread owns a slice of the crowd and works it round by round. A thread whose
    # workers found nothing waits (without asking the server) until another thread takes a task, then tries
    # again, since that answer may open tasks only its workers can take (every other worker answered them,
    # say); the crowd stops when every thread's last round found nothing since the last task was taken.
    # (Stopping at a thread's own first empty round left such tasks open for good in finished runs.)
    # taken: tasks taken so far; idle: threads whose round since the last one was empty; gone: threads stopped
    crowd_state: dict[str, Any] = {"taken": 0, "idle": set(), "gone": set()}

    def thread_main(index, slice_members):
        try:
            while budget_left():
                with lock:
                    taken_before = crowd_state["taken"]
                if any(one_task(w, t) for w, t in slice_members if budget_left()):
                    with lock:
                        crowd_state["taken"] += 1
                        crowd_state["idle"].clear()  # everyone looks again
                    continue
                if wait_for_pending():
                    continue
                with lock:
                    if crowd_state["taken"] == taken_before:
                        crowd_state["idle"].add(index)
                while True:
                    with lock:
                        if crowd_state["taken"] != taken_before:
                            break  # a task was taken meanwhile: look again
                        if len(crowd_state["idle"] | crowd_state["gone"]) == concurrency:
                            return
                    time.sleep(CROWD_POLL_SECONDS)
        finally:
            with lock:  # a thread that stops (done, budget spent, an error) is never waited for
                crowd_state["gone"].add(index)

    threads = [
        threading.Thread(target=thread_main, args=(i, members[i::concurrency]), daemon=True)
        for i in range(concurrency)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return _added(total, stats)


def pending_waiter(pending: Callable[[], bool] | None) -> Callable[[], bool]:
    """For a loop of rounds: after a round without work, True if background work may release tasks (after a
    short sleep), False when nothing is pending or the crowd has waited PENDING_WAIT_SECONDS since it last
    found work. A round with work should call `.reset()`."""
    idle_since: list[float] = []

    def wait() -> bool:
        if pending is None or not pending():
            return False
        if not idle_since:
            idle_since.append(time.monotonic())
        if time.monotonic() - idle_since[0] > PENDING_WAIT_SECONDS:
            return False
        time.sleep(PENDING_POLL_SECONDS)
        return True

    wait.reset = idle_since.clear  # type: ignore[attr-defined]
    return wait


def _added(total: Stats | None, run: Stats) -> Stats:
    if total is not None:
        total.tasks_answered += run.tasks_answered
        total.tasks_skipped += run.tasks_skipped
        total.submit_retries += run.submit_retries
        total.worker_seconds += run.worker_seconds
        total.last_answer_at = latest(total.last_answer_at, run.last_answer_at)
        for kind, n in run.by_kind.items():
            total.by_kind[kind] = total.by_kind.get(kind, 0) + n
        total.errors.extend(run.errors)
    return run


def simulate(
    transport: Transport,
    scenario: Scenario,
    crowd: Crowd,
    accounts: Accounts,
    *,
    dataset_name: str,
    seed: int,
    concurrency: int = 1,
    max_tasks: int | None = None,
    progress: Callable[[str, int], None] | None = None,
    flow: Any = None,
) -> dict[str, Any]:
    """Set up the scenario through the organizer API, run the crowd, and return the JSON summary. With a
    provider `flow` (simulator.provider_flows) the crowd arrives through that provider's sessions instead of the
    accounts' worker tokens, and the summary gains a `provider` section."""
    api = OrganizerApi(transport, accounts.organizer_token)
    if hasattr(scenario, "open_dataset"):  # a dataset already on the platform (simulator.scenarios.existing)
        scenario.open_dataset(api)
    else:
        api.create_dataset(dataset_name, description=f"simulated {scenario.name} scenario, seed {seed}")
    scenario.setup(api)
    if flow is not None:
        flow.prepare(api)
    started = time.perf_counter()
    stats = Stats()

    def work(dataset_id: int | None = None) -> Stats:
        """The crowd works on the scenario's dataset until no task is left; on another `dataset_id` (a side
        measurement, e.g. a fixed majority beside dynamic consensus) its work is not added to the summary."""
        if flow is not None and not dataset_id:
            return flow.work(
                dataset_id=api.dataset_id,
                stats=stats,
                max_tasks=max_tasks,
                progress=(lambda n: progress("tasks", n)) if progress else None,
                pending=(lambda: scenario.work_pending(api)) if hasattr(scenario, "work_pending") else None,
            )
        return run_crowd(
            transport,
            scenario,
            crowd,
            accounts.worker_tokens,
            dataset_id=dataset_id or api.dataset_id,
            seed=seed,
            concurrency=concurrency,
            max_tasks=None if max_tasks is None else max(max_tasks - stats.tasks_answered, 0),
            progress=(lambda n: progress("tasks", stats.tasks_answered + n)) if progress else None,
            pending=(lambda: scenario.work_pending(api)) if hasattr(scenario, "work_pending") else None,
            stats=None if dataset_id else stats,
        )

    if hasattr(scenario, "run"):
        scenario.run(api, work)  # a scenario in phases calls work() between its own steps
    else:
        work()
    wall = time.perf_counter() - started
    provider = flow.summary(api) if flow is not None else None
    summary: dict[str, Any] = dict.fromkeys(SUMMARY_KEYS)
    summary.update(scenario.summarize(api, stats))
    summary["tasks_per_second"] = round(stats.tasks_answered / wall, 2) if wall > 0 else None
    summary.update(
        {
            "scenario": scenario.name,
            "seed": seed,
            "tasks_answered": stats.tasks_answered,
            "tasks_skipped": stats.tasks_skipped,
            "tasks_by_kind": dict(sorted(stats.by_kind.items())),
            "submit_errors": len(stats.errors),
            "submit_retries": stats.submit_retries,
            "wall_seconds": round(wall, 2),
        }
    )
    if provider is not None:
        summary["provider"] = provider
    return summary


def latest(*moments: float | None) -> float | None:
    """The latest of these monotonic moments, None when none happened."""
    known = [m for m in moments if m is not None]
    return max(known) if known else None


def rounded(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(float(value), digits)


def dumps(summary: dict[str, Any]) -> str:
    return json.dumps(summary, indent=2, sort_keys=False, default=lambda o: asdict(o))
