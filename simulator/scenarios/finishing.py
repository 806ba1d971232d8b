"""A scenario run the way a deployment runs it, to the end: after the crowd runs dry the schedule's sweep
settles the questions nobody left can answer (and the crowd works on what that opened), then rounds of review: the
operator's overlap scan, a simulated in-house reviewer deciding every review item of the dataset from the ground
truth (with a small error rate), and the crowd working on what the decisions sent back, until a round finds
nothing to decide.

Every scenario uses it (`full`, `verify`, `multilabel`, `boxes`), so each ends with nothing left open that the
platform could still settle, and what was left to a person is counted (`Finisher.summary`). Steps with no API
(the scan and the sweep in process, the server's schedule against `--server`) are the `Operator`'s. Nothing here
imports the platform.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import numpy as np

from simulator import reviewer
from simulator.driver import OrganizerApi, Stats, latest, submit_with_retries
from simulator.scenes import Scene

REVIEWER_ERROR_RATE = 0.02
# Review rounds at most: a round is an overlap scan, the reviewer working the queue empty, and the crowd working
# on what the decisions sent back. The operator goes on until a round finds nothing to decide (every accepted box
# then passed a scan, so it is final); the cap only bounds a run that never settles.
REVIEW_ROUNDS = 12
# Sweeps for starved questions after the crowd runs dry, at most, per phase (each may open new questions).
SWEEPS_PER_PHASE = 10
# A box job the reviewer sent back to the crowd this many times that comes back again is closed with the boxes
# it has, as a person does when the crowd cannot find what is missing (a tiny or hidden instance; the hostile
# crowd's soak run had one job loop 120 draw rounds through 9 redraws, past the last review round): the image
# stays partly covered, which the export's completeness report counts.
REDRAWS_BEFORE_CLOSE = 2


class Operator(Protocol):
    """What an operator does from the shell where the platform has no API."""

    def scan_overlaps(self, dataset_name: str) -> None: ...

    def make_splits(self, dataset_name: str, seed: int) -> None: ...

    def sweep_stuck(self, dataset_name: str) -> int:
        """The periodic sweep, now (`review_stuck`): settle the questions nobody left can answer, queue what
        is in review without an item; returns how many questions it settled or sent to review."""
        ...

    def background_awaited(self, dataset_name: str) -> int:
        """Wait for the background work the dataset's answers owe (a calibration rebuild, a quality test that
        may block a spammer and reopen questions); returns how many jobs ran (the crowd looks for work again)."""
        ...


def decide_item(
    item: dict, image_scene: Mapping[int, Scene], leaves_under: Mapping[str, frozenset[str]]
) -> str | None:
    """The right decision for a review item, from what it shows (its image, boxes, and for an ambiguous item the
    context: what is asked, the concept, the other boxes) and the ground truth of its image (`image_scene`: image
    id -> scene); `leaves_under` names the leaf classes below a hierarchy question (a class stands for itself).
    None when the item shows too little to decide (no image, an image the crowd never saw, no concept, an unknown
    kind of question)."""
    scene = image_scene.get((item.get("image") or {}).get("id"))
    if scene is None:
        return None
    by_class = scene.boxes_by_class()
    empty = np.zeros((0, 4))
    box_a, box_b = item.get("box_a"), item.get("box_b")
    if item["kind"] == "duplicate" and box_a and box_b:
        return reviewer.decide_duplicate(box_a, box_b, by_class.get(box_a["concept"]["wnid"], empty))
    if item["kind"] == "cross_class" and box_a and box_b:
        return reviewer.decide_cross_class(box_a, box_b, by_class)
    context = item.get("context") or {}
    if item["kind"] != "ambiguous" or not context:
        return None
    concept = _wnid(context.get("concept")) or (_wnid(box_a["concept"]) if box_a else None)
    if concept is None:
        return None
    truth = by_class.get(concept, empty)
    judged = box_a["id"] if box_a else None
    others = [b for b in context.get("boxes") or [] if b["id"] != judged]
    asks = context.get("kind")
    if asks == "box_job":
        accepted = [b for b in others if b.get("state") == "accepted"]
        return reviewer.decide_job(box_a, accepted, truth, tuple(c["value"] for c in item["decisions"]))
    if asks == "box_quality" and box_a:
        return reviewer.decide_box(box_a, truth, others)
    if asks == "box_coverage":
        return reviewer.decide_coverage(others, truth)
    if asks in ("image_verify", "hierarchy"):
        present = bool(leaves_under.get(concept, frozenset({concept})) & scene.class_keys)
        return reviewer.decide_presence(present)
    return None


class Finisher:
    """Works a scenario's dataset to the end (see the module): `work_out` after each phase of crowd work,
    `review_rounds` once the crowd's phases are done. `decide(item)` gives the right decision for a review item
    (usually `decide_item` with the scenario's scenes), None when it cannot tell. Without an operator (a run
    that only measures the crowd) nothing is swept or reviewed."""

    def __init__(
        self,
        operator: Operator | None,
        reviewer_token: str | None,
        decide: Callable[[dict], str | None],
        rng: np.random.Generator,
        *,
        error_rate: float = REVIEWER_ERROR_RATE,
        rounds: int = REVIEW_ROUNDS,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.operator, self.reviewer_token = operator, reviewer_token
        self.decide, self.rng = decide, rng
        self.error_rate, self.rounds = error_rate, rounds
        self.log = log or (lambda message: None)
        self.review: dict[str, int] = {
            "decided": 0,
            "conflicts": 0,
            "undecidable": 0,
            "errors_made": 0,
            "retries": 0,  # decisions sent again after a 5xx or no answer (same Idempotency-Key)
            "closed_after_redraws": 0,  # box jobs closed after REDRAWS_BEFORE_CLOSE redraws came back
        }
        self.redraws: dict[int, int] = {}  # box job id -> times the reviewer sent it back to the crowd
        self.conflicts: dict[str, int] = {}  # refused decisions by the error code the API gave
        self.decided_by_asks: dict[
            str, int
        ] = {}  # decisions by what the item asked (image_verify, duplicate...)
        self.swept = 0  # questions the sweep settled or sent to review
        # When the platform last confirmed a crowd answer and a reviewer decision (time.monotonic()).
        self.last_answer_at: float | None = None
        self.last_decision_at: float | None = None

    def work(self, work: Callable[[], Stats]) -> int:
        run = work()
        self.last_answer_at = latest(self.last_answer_at, run.last_answer_at)
        return run.tasks_answered

    def work_out(self, api: OrganizerApi, work: Callable[[], Stats]) -> int:
        """The crowd works until no task is left; then the schedule's sweep runs (a simulated crowd does in
        minutes what takes people days, so the sweep's wait is not waited out) and, when it settled questions
        nobody could answer, the crowd works on what they opened. Returns the tasks answered."""
        answered = self.work(work)
        if self.operator is None:
            return answered
        for _ in range(SWEEPS_PER_PHASE):
            started = time.monotonic()
            settled = self.operator.sweep_stuck(api.dataset_name)
            ran = self.operator.background_awaited(api.dataset_name)
            self.swept += settled
            self.log(
                f"sweep: {settled} questions nobody could answer settled or sent to review, {ran} background "
                f"jobs waited for ({time.monotonic() - started:.1f} s)"
            )
            if not settled and not ran:
                break
            answered += self.work(work)
        return answered

    def finish(self, api: OrganizerApi, work: Callable[[], Stats]) -> None:
        """A one-phase scenario's run: the crowd works until no task is left (with the sweeps), then the review
        rounds."""
        self.work_out(api, work)
        self.review_rounds(api, work)

    def review_rounds(self, api: OrganizerApi, work: Callable[[], Stats]) -> None:
        """Review rounds until one finds nothing to decide, the crowd working out what each round sent back;
        the boxes of the last round's work are scanned too."""
        if self.operator is None or self.reviewer_token is None:
            return
        for round_no in range(1, self.rounds + 1):
            started = time.monotonic()
            self.operator.scan_overlaps(api.dataset_name)
            scanned = time.monotonic()
            decided = self.review_all(api)
            self.log(
                f"review round {round_no}: {decided} decisions (overlap scan request {scanned - started:.1f} s, "
                f"review {time.monotonic() - scanned:.1f} s)"
            )
            if not decided:
                return
            self.work_out(api, work)
        self.operator.scan_overlaps(api.dataset_name)

    def review_all(self, api: OrganizerApi) -> int:
        """Lease and decide review items of the dataset until the queue is empty; returns the decisions."""
        decided, skip = 0, []
        call = functools.partial(api.transport.call, token=self.reviewer_token)
        while True:
            params = {"dataset": api.dataset_id}
            if skip:
                params["skip"] = ",".join(map(str, skip))
            reply = submit_with_retries(
                functools.partial(call, "GET", "/api/v1/review/next", params=params), Stats()
            )
            if reply.status == 204:
                return decided
            item = reply.expect(200)
            decision = self.decide(item)
            if decision is None:
                self.review["undecidable"] += 1
                # 409: a retried release whose first attempt went through (the item is no longer held).
                release = functools.partial(call, "POST", f"/api/v1/review/items/{item['id']}/release")
                submit_with_retries(release, Stats()).expect(200, 409)
                skip.append(item["id"])
                continue
            choices = tuple(c["value"] for c in item["decisions"])
            decision = self._give_up_redrawing(item, decision, choices)
            final = reviewer.with_error(decision, choices, self.rng, self.error_rate)
            self.review["errors_made"] += final != decision
            # Sent as the review page sends it: with an Idempotency-Key, again after a 5xx or no answer (a
            # retry of a decision the platform recorded is answered 200 with it).
            sent = Stats()
            decide = functools.partial(
                call,
                "POST",
                f"/api/v1/review/items/{item['id']}/decide",
                json_body={"decision": final},
                headers={"Idempotency-Key": uuid.uuid4().hex},
            )
            result = submit_with_retries(decide, sent)
            self.review["retries"] += sent.submit_retries
            if result.status in (200, 201):
                self.last_decision_at = time.monotonic()
                decided += 1
                self.review["decided"] += 1
                asks = (item.get("context") or {}).get("kind") or item["kind"]
                self.decided_by_asks[asks] = self.decided_by_asks.get(asks, 0) + 1
            else:
                code = _error_code(result)
                self.review["conflicts"] += 1
                self.conflicts[code] = self.conflicts.get(code, 0) + 1
                self.log(f"review item {item['id']} ({item['kind']}, {item.get('reason', '')}): {code}")
                skip.append(item["id"])

    def _give_up_redrawing(self, item: dict, decision: str, choices: tuple[str, ...]) -> str:
        """`decision`, or "close" for a box job already sent back to the crowd `REDRAWS_BEFORE_CLOSE` times."""
        subject = item.get("subject") or {}
        if decision != "redraw" or subject.get("type") != "box_job" or "close" not in choices:
            return decision
        key = int(subject["id"])
        if self.redraws.get(key, 0) >= REDRAWS_BEFORE_CLOSE:
            self.review["closed_after_redraws"] += 1
            return "close"
        self.redraws[key] = self.redraws.get(key, 0) + 1
        return decision

    def summary(self) -> dict[str, Any]:
        """What was left to people: the reviewer's decisions (by what they asked), conflicts, the sweep."""
        return {
            **self.review,
            "by_asks": dict(sorted(self.decided_by_asks.items())),
            "conflict_codes": self.conflicts,
            "swept": self.swept,
        }


def _wnid(concept: Any) -> str | None:
    """A concept as the API may show it: a wnid, or an object with one."""
    if isinstance(concept, dict):
        return concept.get("wnid")
    return concept if isinstance(concept, str) else None


def _error_code(reply: Any) -> str:
    """A refused request, as the API explains it: its status and the start of its message."""
    body = reply.data
    detail = body.get("detail", body) if isinstance(body, dict) else body
    return f"{reply.status} {str(detail)[:70]}"
