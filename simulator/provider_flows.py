"""The simulated crowd arriving through a crowd provider's own session flow (`simulate --provider`), over the
same HTTP API and pages real workers use:

- mturk-fake: a worker accepts an assignment on the fake MTurk marketplace (simulator.mturk_fake, the
  only stand-in, at the network edge), opens `/mturk/task/` with MTurk's URL parameters, answers the bundle
  through the bundle API, and the page's form goes to MTurk's externalSubmit; the operator publishes HITs
  with `publish_hits` when the marketplace runs dry and settles them with `sync_hits`.
- external: a participant opens the study link with their id, answers the bundle, and the marketplace
  reports the completion code, which the organizer redeems (once: a replay is refused).
- inhouse: the organizer invites each worker to the dataset, each accepts the one-time link (creating an
  account) and works on the plain worker API.

Like the driver, nothing here reads the platform's models: what the operator does from the shell (no API
for it) comes in as an `Operator`.
"""

from __future__ import annotations

import html
import re
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from simulator.driver import OrganizerApi, Stats, pending_waiter, run_crowd, submit_with_retries
from simulator.mturk_fake import FakeMturk
from simulator.simulated import Crowd, SimulatedWorker
from simulator.transport import Transport

PROVIDERS = ("mturk-fake", "external", "inhouse")
SESSION = re.compile(rb'data-session="([^"]*)"')
SANDBOX_WORKER_SITE = "https://workersandbox.mturk.com"
# HITs published whenever the marketplace has none left for a worker; each HIT takes at most this many
# workers (under 10, so MTurk's fee stays at 20%).
HITS_PER_BATCH = 5
ASSIGNMENTS_PER_HIT = 3
# Micro-tasks per session: ILSVRC's verification HITs carried 20 images or so.
BUNDLE_SIZE = 20


class Operator(Protocol):
    """What an organizer does from the shell for a provider (admin-only setup, management commands)."""

    def bundle_size(self, dataset_name: str, kind: str, size: int) -> None: ...

    def mturk_setup(self, dataset_name: str, kind: str) -> None: ...

    def publish_hits(self, dataset_name: str, kind: str, count: int, max_assignments: int) -> None: ...

    def sync_hits(self) -> dict[str, Any]: ...


@dataclass
class Session:
    token: str
    ref: str  # the MTurk AssignmentId, or the participant id


@dataclass
class FlowReport:
    sessions_opened: int = 0
    bundles_completed: int = 0
    sessions_abandoned: int = 0  # opened, nothing to answer: given back (MTurk) or left (study)
    handed_back: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class BundleFlow:
    """Common loop of the bundle providers: the crowd works round by round in a seeded order (as the driver's
    single-threaded mode), each worker answering one item of their current session per round."""

    name = ""

    def __init__(
        self, transport: Transport, scenario, crowd: Crowd, *, seed: int, operator: Operator
    ) -> None:
        self.transport, self.scenario, self.crowd, self.seed = transport, scenario, crowd, seed
        self.operator = operator
        self.sessions: dict[int, Session] = {}
        self.report = FlowReport()

    def prepare(self, api: OrganizerApi) -> None:
        (kind,) = self.scenario.kinds
        self.operator.bundle_size(api.dataset_name or "", kind, BUNDLE_SIZE)
        self.setup(api, kind)

    # Provider-specific steps.
    def setup(self, api: OrganizerApi, kind: str) -> None: ...

    def open(self, index: int) -> Session | None:
        raise NotImplementedError

    def hand_back(self, session: Session, completion: dict) -> None:
        raise NotImplementedError

    def abandon(self, session: Session) -> None: ...

    def finish(self, api: OrganizerApi) -> dict[str, Any]:
        return {}

    # The loop.
    def page_session(self, path: str, params: dict) -> str:
        reply = self.transport.call("GET", path, token="", params=params, binary=True)
        if reply.status != 200:
            raise RuntimeError(f"{path} answered {reply.status}: {reply.data!r}")
        found = SESSION.search(reply.data)
        if not found or not found.group(1):
            raise RuntimeError(f"{path} opened no session")
        return html.unescape(found.group(1).decode())

    def bundle_call(self, session: Session, method: str, path: str, **kwargs):
        headers = {"Authorization": f"Bundle {session.token}", **kwargs.pop("headers", {})}
        return self.transport.call(method, path, token="", headers=headers, **kwargs)

    def _close(self, index: int, completion: dict) -> None:
        session = self.sessions.pop(index)
        self.hand_back(session, completion)
        self.report.bundles_completed += 1
        self.report.handed_back += 1

    def one_task(self, index: int, worker: SimulatedWorker, stats: Stats) -> bool:
        session = self.sessions.get(index)
        if session is None:
            session = self.open(index)
            if session is None:
                return False
            self.sessions[index] = session
            self.report.sessions_opened += 1
        step = self.bundle_call(session, "GET", "/api/v1/bundle/next").expect(200)
        if step["completion"] is not None:  # completed short on an earlier round
            self._close(index, step["completion"])
            return True
        assignment = step["assignment"]
        if assignment is None:  # nothing for this worker now, nothing answered: the session is given up
            self.sessions.pop(index)
            self.abandon(session)
            self.report.sessions_abandoned += 1
            return False
        answer, seconds = self.scenario.answer(worker, assignment)
        if answer is None:  # a bundle has no skip: the worker leaves the session (its lease runs out)
            self.sessions.pop(index)
            self.abandon(session)
            self.report.sessions_abandoned += 1
            stats.tasks_skipped += 1
            return True
        key = uuid.UUID(int=int(np.random.default_rng([self.seed, assignment["id"]]).integers(0, 2**63))).hex
        result = submit_with_retries(
            lambda: self.bundle_call(
                session,
                "POST",
                f"/api/v1/bundle/assignments/{assignment['id']}/submit",
                json_body={"answer": answer},
                headers={"Idempotency-Key": key},
            ),
            stats,
        )
        if result.status not in (200, 201):
            stats.errors.append(f"{result.status}: {result.data}")
            return True
        stats.last_answer_at = time.monotonic()
        stats.tasks_answered += 1
        stats.worker_seconds += seconds
        kind = assignment["task"]["kind"]
        stats.by_kind[kind] = stats.by_kind.get(kind, 0) + 1
        if result.data["completion"] is not None:
            self._close(index, result.data["completion"])
        return True

    def work(
        self,
        *,
        dataset_id: int,
        stats: Stats,
        max_tasks: int | None,
        pending: Callable[[], bool] | None,
        progress: Callable[[int], None] | None,
    ) -> Stats:
        """Rounds until a whole round finds no work (and no background work is pending)."""
        order = np.random.default_rng([self.seed, 0x0DE5])
        members = list(enumerate(self.crowd.workers))
        wait = pending_waiter(pending)

        def budget_left() -> bool:
            return max_tasks is None or stats.tasks_answered + stats.tasks_skipped < max_tasks

        while budget_left():
            worked = False
            for i in order.permutation(len(members)):
                if not budget_left():
                    break
                worked |= self.one_task(*members[i], stats)
                if progress:
                    progress(stats.tasks_answered)
            if worked:
                wait.reset()  # type: ignore[attr-defined]
            elif not wait():
                break
        return stats

    def summary(self, api: OrganizerApi) -> dict[str, Any]:
        body = {
            "provider": self.name,
            "sessions_opened": self.report.sessions_opened,
            "bundles_completed": self.report.bundles_completed,
            "sessions_abandoned": self.report.sessions_abandoned,
            "sessions_open_at_end": len(self.sessions),
        }
        return body | self.finish(api)


def mturk_worker_id(index: int) -> str:
    return f"SIMWORKER{index:05d}"


class MturkFlow(BundleFlow):
    name = "mturk-fake"

    def __init__(self, transport, scenario, crowd, *, seed: int, fake: FakeMturk, operator: Operator):
        super().__init__(transport, scenario, crowd, seed=seed, operator=operator)
        self.fake = fake
        self.dataset_name = ""
        self.kind = ""
        self.batches = 0

    def setup(self, api: OrganizerApi, kind: str) -> None:
        self.kind, self.dataset_name = kind, api.dataset_name or ""
        self.operator.mturk_setup(self.dataset_name, self.kind)

    def _publish(self) -> None:
        self.operator.publish_hits(self.dataset_name, self.kind, HITS_PER_BATCH, ASSIGNMENTS_PER_HIT)
        self.batches += 1

    def open(self, index: int) -> Session | None:
        accepted = self.fake.accept(mturk_worker_id(index))
        if accepted is None:  # no HIT open to this worker: publish another batch
            self._publish()
            accepted = self.fake.accept(mturk_worker_id(index))
            if accepted is None:
                return None
        token = self.page_session(
            "/mturk/task/",
            {
                "assignmentId": accepted.assignment_id,
                "hitId": accepted.hit_id,
                "workerId": accepted.worker_id,
                "turkSubmitTo": SANDBOX_WORKER_SITE,
            },
        )
        return Session(token, accepted.assignment_id)

    def hand_back(self, session: Session, completion: dict) -> None:
        self.fake.external_submit(completion["submit_to"], completion["fields"])

    def abandon(self, session: Session) -> None:
        self.fake.give_back(session.ref)

    def finish(self, api: OrganizerApi) -> dict[str, Any]:
        """Settle with `sync_hits` (ending the finished work's HITs), then once more: the second run must pay
        nothing."""
        first = self.operator.sync_hits()
        paid = self.fake.report()
        second = self.operator.sync_hits()
        market = self.fake.report()
        ledger = api.call("GET", f"/api/v1/datasets/{api.dataset_id}/cost").expect(200)
        return {
            "hit_batches": self.batches,
            "sync": first,
            "second_sync": {k: second[k] for k in ("approved", "rejected", "bonuses")},
            "marketplace": market,
            "paid_again_by_second_sync": {
                k: market[k] - paid[k] for k in ("approve_calls", "reject_calls", "bonus_calls")
            },
            "spend": ledger["spend"],
        }


class StudyFlow(BundleFlow):
    name = "external"

    def __init__(self, transport, scenario, crowd, *, seed: int, operator: Operator):
        super().__init__(transport, scenario, crowd, seed=seed, operator=operator)
        self.study: dict[str, Any] = {}
        self.api: OrganizerApi | None = None
        self.done: set[int] = set()
        self.redeemed = self.replays_refused = 0

    def setup(self, api: OrganizerApi, kind: str) -> None:
        self.api = api
        self.study = api.call(
            "POST", "/api/v1/studies", json_body={"dataset": api.dataset_id, "kind": kind}
        ).expect(201)

    def participant(self, index: int) -> str:
        return f"sim-participant-{self.seed}-{index}"

    def open(self, index: int) -> Session | None:
        if index in self.done:  # a participant takes a study once
            return None
        token = self.page_session(
            self.study["url"], {self.study["participant_param"]: self.participant(index)}
        )
        return Session(token, str(index))

    def hand_back(self, session: Session, completion: dict) -> None:
        """The participant pastes the code at the marketplace, which reports it; the organizer redeems it."""
        assert self.api is not None
        index = int(session.ref)
        self.done.add(index)
        body = {"participant": self.participant(index), "code": completion["code"]}
        path = f"/api/v1/studies/{self.study['id']}/redeem"
        self.api.call("POST", path, json_body=body).expect(200)
        self.redeemed += 1
        if self.api.call("POST", path, json_body=body).status == 409:  # a replayed code is refused
            self.replays_refused += 1

    def finish(self, api: OrganizerApi) -> dict[str, Any]:
        rows = api.call("GET", f"/api/v1/studies/{self.study['id']}/completions").expect(200)
        return {
            "codes_redeemed": self.redeemed,
            "replays_refused": self.replays_refused,
            "completions_listed": len(rows),
            "completions_redeemed": sum(1 for r in rows if r["redeemed"]),
            "recommendations": {
                r: sum(1 for x in rows if x["recommendation"] == r)
                for r in sorted({x["recommendation"] for x in rows})
            },
        }


class InhouseFlow:
    """In-house: invitations, then the plain worker API (no bundles, no payment)."""

    name = "inhouse"

    def __init__(self, transport: Transport, scenario, crowd: Crowd, *, seed: int) -> None:
        self.transport, self.scenario, self.crowd, self.seed = transport, scenario, crowd, seed
        self.tokens: list[str] = []
        self.invited = 0

    def prepare(self, api: OrganizerApi) -> None:
        for i in range(len(self.crowd.workers)):
            issued = api.call(
                "POST", f"/api/v1/datasets/{api.dataset_id}/invitations", json_body={"role": "workers"}
            ).expect(201)
            self.invited += 1
            accepted = self.transport.call(
                "POST",
                "/api/v1/invitations/accept",
                token="",
                json_body={
                    "token": issued["token"],
                    "username": f"sim-inhouse-{api.dataset_id}-{i}",
                    "password": secrets.token_urlsafe(16),
                },
            ).expect(201)
            self.tokens.append(accepted["api_token"])

    def work(self, *, dataset_id: int, stats: Stats, max_tasks, pending, progress) -> Stats:
        return run_crowd(
            self.transport,
            self.scenario,
            self.crowd,
            self.tokens,
            dataset_id=dataset_id,
            seed=self.seed,
            max_tasks=max_tasks,
            progress=progress,
            pending=pending,
            stats=stats,
        )

    def summary(self, api: OrganizerApi) -> dict[str, Any]:
        people = api.call("GET", f"/api/v1/datasets/{api.dataset_id}/invitations").expect(200)
        return {
            "provider": self.name,
            "invited": self.invited,
            "accepted": sum(1 for p in people if p["status"] == "accepted"),
        }
