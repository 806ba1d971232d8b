"""Which pipeline's verdict is the final image-level label of one (image, class): the precedence rule over the
evidence each pipeline recorded. Pure Python, no framework: `annotation.final_labels` stores what it returns.

Precedence, strongest first:
- ``review``: a reviewer who looked at the image said the class is absent (a box job that found nothing to box:
  the crowd judged the class present, yet no drawer could box one);
- ``box``: finalized boxes of the class (each passed a quality check and the review gate) make it present;
- ``consensus``: an image-verification question decided by the calibrated consensus rule, or by a reviewer
  (ILSVRC §3.1.3);
- ``multilabel``: full multi-label annotation (ILSVRC §3.3.3, Algorithm 1), asked or propagated (a "no" on an
  ancestor question makes every leaf below it absent);
- ``binary_vote``: the fixed-majority baseline.
A weaker pipeline speaks only where no stronger one has a verdict; withdrawing a verdict (a reopened or
reviewed question, a removed box) lets the next one speak again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

REVIEW = "review"
BOX = "box"
CONSENSUS = "consensus"
MULTILABEL = "multilabel"
BINARY_VOTE = "binary_vote"
PRECEDENCE: tuple[str, ...] = (REVIEW, BOX, CONSENSUS, MULTILABEL, BINARY_VOTE)


@dataclass(frozen=True)
class Resolved:
    """The final label of one (image, class) and the evidence of the pipeline that decided it."""

    present: bool
    source: str
    probability: float | None
    yes: int
    no: int
    boxes: int


def evidence_entry(
    present: bool, *, yes: int = 0, no: int = 0, p: float | None = None, **ref: Any
) -> dict[str, Any]:
    """One pipeline's verdict as it is stored in the evidence JSON (``ref`` names the facts behind it)."""
    return {"present": bool(present), "yes": int(yes), "no": int(no), "p": p, **ref}


def resolve(evidence: Mapping[str, Mapping[str, Any]]) -> Resolved | None:
    """The verdict of the strongest pipeline with one, or None when no pipeline has a verdict."""
    boxes = int(evidence.get(BOX, {}).get("boxes", 0))
    for source in PRECEDENCE:
        entry = evidence.get(source)
        if entry is None or (source == BOX and boxes <= 0):
            continue
        return Resolved(
            present=bool(entry["present"]),
            source=source,
            probability=entry.get("p"),
            yes=int(entry.get("yes", 0)),
            no=int(entry.get("no", 0)),
            boxes=boxes,
        )
    return None
