"""The per-(image, synset) box job state machine: DRAW -> QUALITY -> COVERAGE, repeated until every instance is
boxed (ILSVRC §3.2.1; Su, Deng, Fei-Fei 2012). Pure: transitions return a new state and the effects to execute."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

# The vocabulary (statuses, events, effects) lives in pipeline_events; callers keep saying pipeline.X.
from .pipeline_events import (  # noqa: F401
    EVENT_TYPES,
    REVIEW_EXTRA_ROUNDS,
    TERMINAL_STATUSES,
    AcceptBox,
    BoxDrawn,
    CoverageDecided,
    CoverageUndecidable,
    DiscardBox,
    DrawSkipped,
    Effect,
    Event,
    Finish,
    JobStatus,
    ProposalsQueued,
    QualityDecided,
    QualityUndecidable,
    QueueCoverage,
    QueueDraw,
    QueueQuality,
    ReviewDecided,
    ReviewOutcome,
    ReviewReason,
    SendToReview,
    TransitionError,
)

# How a job moves (Su, Deng, Fei-Fei 2012, "Crowdsourcing annotations for visual object detection"):
#
#   needs_draw --box_drawn--> awaiting_quality --accepted--> awaiting_coverage --all covered--> done
#       ^   |                       |                              |
#       |   +--draw_skipped---------|----------------------------->+
#       +-------- rejected ---------+<-------- not covered --------+
#
# Every draw attempt (a box or a "nothing left" skip) is one round. Before a new DRAW is queued the caps are
# checked: max_boxes accepted boxes or max_rounds rounds send the job to review instead of looping forever.
# Each round yields at most one QUALITY and one COVERAGE question, so a job costs at most 3 * max_rounds
# micro-tasks. A consensus that hits its own vote cap ("undecidable") also sends the job to review. A job a
# coverage "yes" finished goes back to drawing (or to review) when consensus revises that "yes" to "no" (or to
# undecidable) after voiding an unreliable worker's votes.
#
# A job in review comes back through a reviewer (ILSVRC Appendix E): the verdict on the undecidable QUALITY or
# COVERAGE question arrives as that question's decision (`quality_decided` / `coverage_decided` accept a job in
# review for that very question), and a job sent to review for another reason is resolved by
# `review_decided`: accept (the boxes are complete), redraw (more drawing, with room under the caps) or close.
#
# A job may start from a model's box proposals instead of a DRAW (`proposals_queued`): each proposal is asked
# QUALITY in turn (one pending box at a time, as for drawn boxes; the rest wait in `proposals`), accepted ones
# join the accepted boxes, rejected ones are discarded, and after the last one the ordinary loop takes over:
# COVERAGE if any was accepted, else a DRAW. Proposals use no draw round. A proposal has no drawer (None), so
# it excludes nobody from its questions. Proposals are verified, never trusted.

SCHEMA_VERSION = 1

DEFAULT_MAX_BOXES = 25
DEFAULT_MAX_ROUNDS = 30


# --- state ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DrawnBox:
    box_id: int
    drawer: int | None  # None: a model's proposal (`proposals_queued`)

    @property
    def is_proposal(self) -> bool:
        return self.drawer is None


@dataclass(frozen=True, slots=True)
class Transition:
    event: Event
    source: JobStatus
    target: JobStatus


@dataclass(frozen=True, slots=True)
class BoxJob:
    """State of the box job for one (image, synset) pair known to contain the synset."""

    status: JobStatus = JobStatus.NEEDS_DRAW
    accepted: tuple[DrawnBox, ...] = ()
    pending: DrawnBox | None = None  # the box awaiting QUALITY (kept in review if quality was undecidable)
    coverage_exclude: tuple[int, ...] = ()  # who may not answer the open COVERAGE question
    rounds: int = 0  # draw attempts answered: boxes drawn plus skips
    boxes_drawn: int = 0
    boxes_rejected: int = 0
    proposals: tuple[int, ...] = ()  # proposals waiting for QUALITY after the pending one, in asking order
    proposed: int = 0  # proposals the job started with
    proposals_rejected: int = 0  # rejected by QUALITY, or dropped unasked when a reviewer ended the job
    max_boxes: int = DEFAULT_MAX_BOXES
    max_rounds: int = DEFAULT_MAX_ROUNDS
    history: tuple[Transition, ...] = field(default=())

    def __post_init__(self) -> None:
        problems = _invariant_problems(self)
        if problems:
            raise ValueError("inconsistent box job: " + "; ".join(problems))

    @property
    def accepted_ids(self) -> tuple[int, ...]:
        return tuple(b.box_id for b in self.accepted)

    @property
    def pending_box_id(self) -> int | None:
        return self.pending.box_id if self.pending else None

    @property
    def pending_drawer(self) -> int | None:
        return self.pending.drawer if self.pending else None

    @property
    def is_finished(self) -> bool:
        return self.status in TERMINAL_STATUSES

    def to_dict(self) -> dict[str, Any]:
        return job_to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BoxJob:
        return job_from_dict(data)


def _invariant_problems(job: BoxJob) -> list[str]:
    problems = []
    if job.max_boxes < 1 or job.max_rounds < 1:
        problems.append("max_boxes and max_rounds must be at least 1")
    if job.status == JobStatus.AWAITING_QUALITY and job.pending is None:
        problems.append("awaiting_quality needs a pending box")
    if job.status not in (JobStatus.AWAITING_QUALITY, JobStatus.REVIEW) and job.pending is not None:
        problems.append(f"{job.status} cannot have a pending box")
    if job.status != JobStatus.AWAITING_COVERAGE and job.coverage_exclude:
        problems.append("coverage exclusions only exist while awaiting coverage")
    if job.proposals and (job.pending is None or not job.pending.is_proposal):
        problems.append("waiting proposals need a pending proposal")
    ids = (
        [b.box_id for b in job.accepted] + ([job.pending.box_id] if job.pending else []) + list(job.proposals)
    )
    if len(ids) != len(set(ids)):
        problems.append("box ids must be unique")
    if len(job.accepted) > job.max_boxes:
        problems.append("more accepted boxes than max_boxes")
    if not 0 <= job.rounds <= job.max_rounds:
        problems.append("rounds must lie between 0 and max_rounds")
    if job.proposed > job.max_boxes:
        problems.append("more proposals than max_boxes")
    if not 0 <= job.boxes_rejected <= job.boxes_drawn <= job.rounds:
        problems.append("counters must satisfy 0 <= boxes_rejected <= boxes_drawn <= rounds")
    elif not 0 <= job.proposals_rejected <= job.proposed:
        problems.append("counters must satisfy 0 <= proposals_rejected <= proposed")
    elif len(job.accepted) > job.boxes_drawn - job.boxes_rejected + job.proposed - job.proposals_rejected:
        problems.append("more accepted boxes than drawn or proposed and not rejected")
    return problems


# --- transitions ----------------------------------------------------------------------------------------

Result = tuple[BoxJob, list[Effect]]


def new_job(max_boxes: int = DEFAULT_MAX_BOXES, max_rounds: int = DEFAULT_MAX_ROUNDS) -> Result:
    """Start the job for a verified (image, synset) pair: the first DRAW is queued."""
    job = BoxJob(max_boxes=max_boxes, max_rounds=max_rounds)
    return job, [QueueDraw(round=1, shown_box_ids=())]


def _require(job: BoxJob, event: Event, *allowed: JobStatus) -> None:
    if job.status not in allowed:
        expected = " or ".join(s.value for s in allowed)
        raise TransitionError(
            f"cannot apply {event.kind} to a job in status {job.status.value} (needs {expected})"
        )


def _move(job: BoxJob, event: Event, **changes: Any) -> BoxJob:
    target = changes.get("status", job.status)
    return replace(job, history=(*job.history, Transition(event, job.status, target)), **changes)


def _next_draw_or_review(job: BoxJob, event: Event, effects: list[Effect], **changes: Any) -> Result:
    """Queue another DRAW unless a cap is reached, in which case the job goes to review."""
    n_accepted = len(changes.get("accepted", job.accepted))
    rounds = changes.get("rounds", job.rounds)
    if n_accepted >= job.max_boxes:
        reason, detail = ReviewReason.BOX_CAP, f"{n_accepted} boxes accepted, the cap is {job.max_boxes}"
    elif rounds >= job.max_rounds:
        reason, detail = ReviewReason.ROUND_CAP, f"{rounds} draw rounds used, the cap is {job.max_rounds}"
    else:
        new = _move(job, event, status=JobStatus.NEEDS_DRAW, coverage_exclude=(), **changes)
        return new, [*effects, QueueDraw(round=new.rounds + 1, shown_box_ids=new.accepted_ids)]
    new = _move(job, event, status=JobStatus.REVIEW, coverage_exclude=(), **changes)
    return new, [*effects, SendToReview(reason, detail)]


def _queue_coverage(
    job: BoxJob, event: Event, effects: list[Effect], extra_exclude: int | None = None, **changes: Any
) -> Result:
    # The coverage verifier must not be anyone who drew one of the boxes being judged (nor the drawer who has
    # just claimed nothing is left): "a different worker answers" (issue #5, after ILSVRC §3.2.1).
    accepted: tuple[DrawnBox, ...] = changes.get("accepted", job.accepted)
    exclude = {b.drawer for b in accepted if b.drawer is not None}
    if extra_exclude is not None:
        exclude.add(extra_exclude)
    excluded = tuple(sorted(exclude))
    new = _move(job, event, status=JobStatus.AWAITING_COVERAGE, coverage_exclude=excluded, **changes)
    return new, [*effects, QueueCoverage(box_ids=new.accepted_ids, exclude_workers=excluded)]


def _in_review_for(job: BoxJob, cause: type[Event]) -> tuple[JobStatus, ...]:
    """(REVIEW,) when the job is in review because of its latest event of type `cause`, else ()."""
    if job.status == JobStatus.REVIEW and job.history and isinstance(job.history[-1].event, cause):
        return (JobStatus.REVIEW,)
    return ()


def box_drawn(job: BoxJob, box_id: int, worker: int) -> Result:
    """A worker drew one box (already checked by `geometry.validate_box` and the 5 px rule): ask QUALITY."""
    event = BoxDrawn(box_id, worker)
    _require(job, event, JobStatus.NEEDS_DRAW)
    if box_id in job.accepted_ids:
        raise TransitionError(f"box {box_id} is already an accepted box of this job")
    pending = DrawnBox(box_id, worker)
    new = _move(
        job,
        event,
        status=JobStatus.AWAITING_QUALITY,
        pending=pending,
        rounds=job.rounds + 1,
        boxes_drawn=job.boxes_drawn + 1,
    )
    return new, [QueueQuality(box_id=box_id, exclude_worker=worker)]


def proposals_queued(job: BoxJob, box_ids: tuple[int, ...] | list[int]) -> Result:
    """A new job starts from a model's proposals (boxes of provenance "model", at most `max_boxes`, in the
    order to ask them) instead of a DRAW: the first is asked QUALITY, the others wait their turn."""
    event = ProposalsQueued(tuple(box_ids))
    _require(job, event, JobStatus.NEEDS_DRAW)
    if job.history or job.rounds:
        raise TransitionError("proposals can only start a new job")
    if not event.box_ids:
        raise TransitionError("no proposals to queue")
    if len(event.box_ids) > job.max_boxes:
        raise TransitionError(f"{len(event.box_ids)} proposals, the cap is {job.max_boxes} boxes")
    first, *rest = event.box_ids
    new = _move(
        job,
        event,
        status=JobStatus.AWAITING_QUALITY,
        pending=DrawnBox(first, None),
        proposals=tuple(rest),
        proposed=len(event.box_ids),
    )
    return new, [QueueQuality(box_id=first, exclude_worker=None)]


def _proposal_decided(job: BoxJob, event: Event, accepted: bool) -> Result:
    """QUALITY decided a proposal: keep or discard it, then ask the next proposal, or (after the last) go on
    as the loop does: COVERAGE over the accepted boxes, or a DRAW when none was accepted."""
    assert job.pending is not None and job.pending.is_proposal
    pending = job.pending
    effects: list[Effect] = [AcceptBox(pending.box_id)] if accepted else [DiscardBox(pending.box_id)]
    changes: dict[str, Any] = {
        "pending": None,
        "accepted": (*job.accepted, pending) if accepted else job.accepted,
        "proposals_rejected": job.proposals_rejected + (not accepted),
    }
    if job.proposals:
        following, *rest = job.proposals
        new = _move(
            job,
            event,
            **{**changes, "pending": DrawnBox(following, None), "proposals": tuple(rest)},
            status=JobStatus.AWAITING_QUALITY,
        )
        return new, [*effects, QueueQuality(box_id=following, exclude_worker=None)]
    if changes["accepted"]:
        return _queue_coverage(job, event, effects, **changes)
    return _next_draw_or_review(job, event, effects, **changes)


def draw_skipped(job: BoxJob, worker: int, reason: str = "no more instances") -> Result:
    """The drawer claims every instance is already boxed. That claim is not trusted on its own: it uses up a
    round and queues a COVERAGE question (the skipper excluded), whose "yes" finishes the job and whose "no"
    queues another DRAW. A drawer who skips because the task is too hard thus costs a round, never a result."""
    event = DrawSkipped(worker, reason)
    _require(job, event, JobStatus.NEEDS_DRAW)
    return _queue_coverage(job, event, [], extra_exclude=worker, rounds=job.rounds + 1)


def quality_decided(job: BoxJob, box_id: int, accepted: bool) -> Result:
    """Consensus decided the QUALITY question: accept the box and ask COVERAGE, or discard it and redraw.

    Also taken by a job in review because this box's QUALITY was undecidable: the reviewer's verdict on that
    question is its decision, and the job goes on from there."""
    event = QualityDecided(box_id, accepted)
    _require(job, event, JobStatus.AWAITING_QUALITY, *_in_review_for(job, QualityUndecidable))
    assert job.pending is not None  # guaranteed by the invariants (and by _in_review_for)
    if box_id != job.pending.box_id:
        raise TransitionError(
            f"quality decision for box {box_id}, but the pending box is {job.pending.box_id}"
        )
    if job.pending.is_proposal:
        return _proposal_decided(job, event, accepted)
    if accepted:
        return _queue_coverage(
            job, event, [AcceptBox(box_id)], pending=None, accepted=(*job.accepted, job.pending)
        )
    return _next_draw_or_review(
        job, event, [DiscardBox(box_id)], pending=None, boxes_rejected=job.boxes_rejected + 1
    )


def quality_undecidable(job: BoxJob, box_id: int) -> Result:
    """The QUALITY consensus reached its vote cap: a person decides (the box stays pending for them)."""
    event = QualityUndecidable(box_id)
    _require(job, event, JobStatus.AWAITING_QUALITY)
    assert job.pending is not None
    if box_id != job.pending.box_id:
        raise TransitionError(f"quality result for box {box_id}, but the pending box is {job.pending.box_id}")
    new = _move(job, event, status=JobStatus.REVIEW)
    return new, [
        SendToReview(ReviewReason.QUALITY_UNDECIDABLE, f"no consensus on the quality of box {box_id}")
    ]


def _finished_by_coverage(job: BoxJob) -> tuple[JobStatus, ...]:
    """(DONE,) when a COVERAGE "yes" finished the job, else ().

    Consensus may revise that verdict: when a voter turns out unreliable (gold, drawer scores) their votes are
    voided and the question is decided again from the rest. A "yes" carried by spammers' votes that becomes
    "no" (or undecidable) means an instance is still unboxed, so the finished job takes the revised verdict
    and goes back to drawing (or to review) instead of losing the instance for good."""
    last = job.history[-1].event if job.history else None
    if job.status == JobStatus.DONE and isinstance(last, CoverageDecided) and last.all_covered:
        return (JobStatus.DONE,)
    return ()


def coverage_decided(job: BoxJob, all_covered: bool) -> Result:
    """Consensus decided the COVERAGE question: finish, or queue another DRAW (caps permitting).

    Also taken by a job in review because its COVERAGE was undecidable (the reviewer's verdict), and, as a
    "no", by a job a COVERAGE "yes" finished when consensus revises that verdict (`_finished_by_coverage`)."""
    event = CoverageDecided(all_covered)
    revisable = _finished_by_coverage(job) if not all_covered else ()
    _require(job, event, JobStatus.AWAITING_COVERAGE, *_in_review_for(job, CoverageUndecidable), *revisable)
    if not all_covered:
        return _next_draw_or_review(job, event, [])
    if not job.accepted:
        new = _move(job, event, status=JobStatus.REVIEW, coverage_exclude=())
        return new, [
            SendToReview(
                ReviewReason.NO_BOXES,
                "coverage confirmed with no box accepted: does the image show the class at all?",
            )
        ]
    new = _move(job, event, status=JobStatus.DONE, coverage_exclude=())
    return new, [Finish(new.accepted_ids)]


def coverage_undecidable(job: BoxJob) -> Result:
    """The COVERAGE consensus reached its vote cap: a person decides. Also taken by a job a COVERAGE "yes"
    finished when consensus revises that verdict to undecidable (`_finished_by_coverage`)."""
    event = CoverageUndecidable()
    _require(job, event, JobStatus.AWAITING_COVERAGE, *_finished_by_coverage(job))
    new = _move(job, event, status=JobStatus.REVIEW, coverage_exclude=())
    return new, [
        SendToReview(ReviewReason.COVERAGE_UNDECIDABLE, "no consensus on whether every instance is boxed")
    ]


def review_decided(
    job: BoxJob, outcome: ReviewOutcome | str, extra_rounds: int = REVIEW_EXTRA_ROUNDS
) -> Result:
    """A reviewer resolved a job in review (a cap reached, coverage with no box, or an undecidable question of
    a backend without its own review path):

    - ACCEPT: the pending box, if any, is accepted and the job is done with every accepted box.
    - REDRAW: the pending box, if any, is discarded and another DRAW is queued; both caps are raised so that
      `extra_rounds` more rounds (and boxes) fit.
    - CLOSE: the pending box, if any, is discarded and the job is done with the boxes accepted so far.

    Proposals still waiting for QUALITY are dropped unasked whatever the verdict: a proposal is never kept
    without a verdict."""
    outcome = ReviewOutcome(outcome)
    if extra_rounds < 1:
        raise ValueError("extra_rounds must be at least 1")
    event = ReviewDecided(outcome.value, extra_rounds)
    _require(job, event, JobStatus.REVIEW)
    pending = job.pending
    dropped: list[Effect] = [DiscardBox(b) for b in job.proposals]
    unasked: dict[str, Any] = {
        "proposals": (),
        "proposals_rejected": job.proposals_rejected + len(job.proposals),
    }
    if outcome == ReviewOutcome.ACCEPT:
        accepted = job.accepted if pending is None else (*job.accepted, pending)
        effects: list[Effect] = [] if pending is None else [AcceptBox(pending.box_id)]
        new = _move(job, event, status=JobStatus.DONE, pending=None, accepted=accepted, **unasked)
        return new, [*effects, *dropped, Finish(new.accepted_ids)]
    effects = [] if pending is None else [DiscardBox(pending.box_id)]
    effects += dropped
    drawn_rejected = pending is not None and not pending.is_proposal
    rejected = job.boxes_rejected + drawn_rejected
    if pending is not None and pending.is_proposal:
        unasked["proposals_rejected"] += 1
    if outcome == ReviewOutcome.CLOSE:
        new = _move(job, event, status=JobStatus.DONE, pending=None, boxes_rejected=rejected, **unasked)
        return new, [*effects, Finish(new.accepted_ids)]
    new = _move(
        job,
        event,
        status=JobStatus.NEEDS_DRAW,
        pending=None,
        boxes_rejected=rejected,
        **unasked,
        max_rounds=max(job.max_rounds, job.rounds + extra_rounds),
        max_boxes=max(job.max_boxes, len(job.accepted) + extra_rounds),
    )
    return new, [*effects, QueueDraw(round=new.rounds + 1, shown_box_ids=new.accepted_ids)]


def apply(job: BoxJob, event: Event) -> Result:
    """Apply a recorded event; `replay` builds on this to derive state from the append-only event log."""
    match event:
        case BoxDrawn(box_id=box_id, worker=worker):
            return box_drawn(job, box_id, worker)
        case DrawSkipped(worker=worker, reason=reason):
            return draw_skipped(job, worker, reason)
        case ProposalsQueued(box_ids=box_ids):
            return proposals_queued(job, box_ids)
        case QualityDecided(box_id=box_id, accepted=accepted):
            return quality_decided(job, box_id, accepted)
        case QualityUndecidable(box_id=box_id):
            return quality_undecidable(job, box_id)
        case CoverageDecided(all_covered=all_covered):
            return coverage_decided(job, all_covered)
        case CoverageUndecidable():
            return coverage_undecidable(job)
        case ReviewDecided(outcome=outcome, extra_rounds=extra_rounds):
            return review_decided(job, outcome, extra_rounds)
    raise TypeError(f"not a box job event: {event!r}")


def replay(
    events: list[Event], max_boxes: int = DEFAULT_MAX_BOXES, max_rounds: int = DEFAULT_MAX_ROUNDS
) -> BoxJob:
    """Rebuild a job's state from its event log (raises `TransitionError` if the log is inconsistent)."""
    job, _ = new_job(max_boxes, max_rounds)
    for event in events:
        job, _ = apply(job, event)
    return job


# --- who may answer -------------------------------------------------------------------------------------


def excluded_workers(job: BoxJob) -> frozenset[int]:
    """Workers who may not answer the job's open verification question (empty when none is open)."""
    if job.status == JobStatus.AWAITING_QUALITY and job.pending is not None:
        return frozenset() if job.pending.drawer is None else frozenset({job.pending.drawer})
    if job.status == JobStatus.AWAITING_COVERAGE:
        return frozenset(job.coverage_exclude)
    return frozenset()


def can_verify(job: BoxJob, worker: int, box_id: int | None = None) -> bool:
    """May `worker` answer the job's open verification question now?

    QUALITY: `box_id` must be the pending box (None means "the pending box") and the worker must not be its
    drawer; a worker never verifies a box they drew. COVERAGE: `box_id` is ignored; the worker must not be
    among the drawers of the accepted boxes (nor the drawer whose skip triggered the question).
    """
    if job.status == JobStatus.AWAITING_QUALITY:
        assert job.pending is not None
        if box_id is not None and box_id != job.pending.box_id:
            return False
        return worker != job.pending.drawer
    if job.status == JobStatus.AWAITING_COVERAGE:
        return worker not in job.coverage_exclude
    return False


# --- serialization --------------------------------------------------------------------------------------


def _event_to_dict(event: Event) -> dict[str, Any]:
    return {"type": event.kind, **{f.name: getattr(event, f.name) for f in fields(event)}}


def _event_from_dict(data: Mapping[str, Any]) -> Event:
    kind = data.get("type")
    cls = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown box job event type {kind!r}")
    return cls(**{k: v for k, v in data.items() if k != "type"})


def job_to_dict(job: BoxJob) -> dict[str, Any]:
    """A JSON-ready dict of the whole state, history included."""
    return {
        "version": SCHEMA_VERSION,
        "status": job.status.value,
        "accepted": [[b.box_id, b.drawer] for b in job.accepted],
        "proposals": list(job.proposals),
        "proposed": job.proposed,
        "proposals_rejected": job.proposals_rejected,
        "pending": [job.pending.box_id, job.pending.drawer] if job.pending else None,
        "coverage_exclude": list(job.coverage_exclude),
        "rounds": job.rounds,
        "boxes_drawn": job.boxes_drawn,
        "boxes_rejected": job.boxes_rejected,
        "max_boxes": job.max_boxes,
        "max_rounds": job.max_rounds,
        "history": [
            {"event": _event_to_dict(t.event), "source": t.source.value, "target": t.target.value}
            for t in job.history
        ],
    }


def job_from_dict(data: Mapping[str, Any]) -> BoxJob:
    """Inverse of `job_to_dict`; raises `ValueError` on an unknown version or an inconsistent state."""
    if data.get("version") != SCHEMA_VERSION:
        raise ValueError(f"unsupported box job version {data.get('version')!r} (expected {SCHEMA_VERSION})")
    try:
        pending = data["pending"]
        return BoxJob(
            status=JobStatus(data["status"]),
            accepted=tuple(DrawnBox(int(b), _drawer(w)) for b, w in data["accepted"]),
            pending=DrawnBox(int(pending[0]), _drawer(pending[1])) if pending is not None else None,
            # Jobs stored before proposals existed have none of these keys.
            proposals=tuple(int(b) for b in data.get("proposals", ())),
            proposed=int(data.get("proposed", 0)),
            proposals_rejected=int(data.get("proposals_rejected", 0)),
            coverage_exclude=tuple(int(w) for w in data["coverage_exclude"]),
            rounds=int(data["rounds"]),
            boxes_drawn=int(data["boxes_drawn"]),
            boxes_rejected=int(data["boxes_rejected"]),
            max_boxes=int(data["max_boxes"]),
            max_rounds=int(data["max_rounds"]),
            history=tuple(
                Transition(_event_from_dict(t["event"]), JobStatus(t["source"]), JobStatus(t["target"]))
                for t in data["history"]
            ),
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"malformed box job: {exc!r}") from exc


def _drawer(value: Any) -> int | None:
    return None if value is None else int(value)
