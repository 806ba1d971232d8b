"""The box job state machine's vocabulary (`annotation.pipeline`): statuses, review reasons and outcomes, the
events services record (replayed to rebuild a job) and the effects transitions ask the services to execute.
Pure data, no behaviour: the transitions and the job state live in `annotation.pipeline`."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar


class JobStatus(StrEnum):
    NEEDS_DRAW = "needs_draw"
    AWAITING_QUALITY = "awaiting_quality"
    AWAITING_COVERAGE = "awaiting_coverage"
    DONE = "done"
    REVIEW = "review"


TERMINAL_STATUSES = frozenset({JobStatus.DONE, JobStatus.REVIEW})


class ReviewReason(StrEnum):
    BOX_CAP = "box_cap"
    ROUND_CAP = "round_cap"
    QUALITY_UNDECIDABLE = "quality_undecidable"
    COVERAGE_UNDECIDABLE = "coverage_undecidable"
    # Coverage said "every instance is boxed" while no box was ever accepted: contradicts the verified label
    # that the synset is present, so a person must look.
    NO_BOXES = "no_boxes"


class ReviewOutcome(StrEnum):
    """A reviewer's verdict on a box job in review (`review_decided`)."""

    ACCEPT = "accept"  # the boxes shown (the pending one included) are right and every instance is boxed
    REDRAW = "redraw"  # instances are missing (or the pending box is wrong): back to drawing
    CLOSE = "close"  # stop here with the accepted boxes; the pending box, if any, is discarded


# Draw rounds (and boxes) a REDRAW verdict makes room for above what the job has already used.
REVIEW_EXTRA_ROUNDS = 10


class TransitionError(Exception):
    """An event that the job cannot take in its current state (wrong status, wrong box, reused box id)."""


# --- events ---------------------------------------------------------------------------------------------
# Events are the facts the services record (append-only); replaying them with `apply` rebuilds the state.


@dataclass(frozen=True, slots=True)
class BoxDrawn:
    box_id: int
    worker: int
    kind: ClassVar[str] = "box_drawn"


@dataclass(frozen=True, slots=True)
class DrawSkipped:
    """The drawer answered "no instance is left without a box" instead of drawing."""

    worker: int
    reason: str = "no more instances"
    kind: ClassVar[str] = "draw_skipped"


@dataclass(frozen=True, slots=True)
class ProposalsQueued:
    """A new job starts from a model's box proposals (stored as boxes of provenance "model"): each is asked
    QUALITY in turn, before any DRAW. The boxes are in the order they will be asked."""

    box_ids: tuple[int, ...]
    kind: ClassVar[str] = "proposals_queued"

    def __post_init__(self) -> None:
        # Read back from JSON the ids come as a list; the event stays hashable and comparable either way.
        object.__setattr__(self, "box_ids", tuple(int(b) for b in self.box_ids))


@dataclass(frozen=True, slots=True)
class QualityDecided:
    box_id: int
    accepted: bool
    kind: ClassVar[str] = "quality_decided"


@dataclass(frozen=True, slots=True)
class QualityUndecidable:
    box_id: int
    kind: ClassVar[str] = "quality_undecidable"


@dataclass(frozen=True, slots=True)
class CoverageDecided:
    all_covered: bool
    kind: ClassVar[str] = "coverage_decided"


@dataclass(frozen=True, slots=True)
class CoverageUndecidable:
    kind: ClassVar[str] = "coverage_undecidable"


@dataclass(frozen=True, slots=True)
class ReviewDecided:
    """A reviewer resolved a job in review (`ReviewOutcome` value); `extra_rounds` is the room a redraw adds."""

    outcome: str
    extra_rounds: int = REVIEW_EXTRA_ROUNDS
    kind: ClassVar[str] = "review_decided"


Event = (
    BoxDrawn
    | DrawSkipped
    | ProposalsQueued
    | QualityDecided
    | QualityUndecidable
    | CoverageDecided
    | CoverageUndecidable
    | ReviewDecided
)

EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (
        BoxDrawn,
        DrawSkipped,
        ProposalsQueued,
        QualityDecided,
        QualityUndecidable,
        CoverageDecided,
        CoverageUndecidable,
        ReviewDecided,
    )
}


# --- effects --------------------------------------------------------------------------------------------
# Effects are instructions for the services, executed in list order inside the same transaction.


@dataclass(frozen=True, slots=True)
class QueueDraw:
    """Queue one DRAW micro-task; the page shows the already accepted boxes."""

    round: int  # 1-based number of the draw attempt this task will be
    shown_box_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class QueueQuality:
    """Ask "is this box tight around one whole visible instance?"; the drawer must not answer it (None: a
    model's proposal, which has no drawer)."""

    box_id: int
    exclude_worker: int | None


@dataclass(frozen=True, slots=True)
class QueueCoverage:
    """Ask "is every instance boxed?" over the accepted boxes; none of `exclude_workers` may answer it."""

    box_ids: tuple[int, ...]
    exclude_workers: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class AcceptBox:
    box_id: int


@dataclass(frozen=True, slots=True)
class DiscardBox:
    """Mark the box rejected (a state, not a deletion: facts are kept)."""

    box_id: int


@dataclass(frozen=True, slots=True)
class SendToReview:
    reason: ReviewReason
    detail: str


@dataclass(frozen=True, slots=True)
class Finish:
    """Every instance is boxed; `box_ids` are the job's final boxes."""

    box_ids: tuple[int, ...]


Effect = QueueDraw | QueueQuality | QueueCoverage | AcceptBox | DiscardBox | SendToReview | Finish
