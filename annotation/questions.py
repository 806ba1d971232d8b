"""The box pipeline's binary questions as data ("is this box tight?", "is every instance boxed?"): their kinds,
wording and the `BinaryQuestion` a box job asks, stored in the consensus question's subject under `SUBJECT_KEY`.

The `boxes` app asks them of consensus (`boxes.questions`) and takes their decisions back; they live here, below
consensus, because consensus words and shows them too (`consensus.wording`, `consensus.question_kind`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

QUALITY = "box_quality"
COVERAGE = "box_coverage"
KINDS = (QUALITY, COVERAGE)
# The key of a consensus question's subject that holds the `BinaryQuestion` a box job asked.
SUBJECT_KEY = "box_pipeline"


@dataclass(frozen=True)
class BinaryQuestion:
    """One question the pipeline needs decided. `box_id` is the box judged (QUALITY only); `box_ids` are the
    accepted boxes shown with it; none of `exclude_workers` (crowd Worker ids) may answer it: a worker never
    verifies a box they drew (ILSVRC §3.2.1)."""

    kind: str
    job_id: int
    dataset_id: int
    image_id: int
    concept_id: int
    box_id: int | None
    box_ids: tuple[int, ...]
    exclude_workers: tuple[int, ...]
    text: str

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["box_ids"] = list(self.box_ids)
        data["exclude_workers"] = list(self.exclude_workers)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BinaryQuestion:
        return cls(
            kind=data["kind"],
            job_id=int(data["job_id"]),
            dataset_id=int(data["dataset_id"]),
            image_id=int(data["image_id"]),
            concept_id=int(data["concept_id"]),
            box_id=None if data.get("box_id") is None else int(data["box_id"]),
            box_ids=tuple(int(b) for b in data.get("box_ids", ())),
            exclude_workers=tuple(int(w) for w in data.get("exclude_workers", ())),
            text=str(data.get("text", "")),
        )


def shown_box_ids(subject: dict | None) -> list[int]:
    """The accepted boxes a box question shows besides the judged one (the worker page draws them)."""
    asked = (subject or {}).get(SUBJECT_KEY) or {}
    return [int(b) for b in asked.get("box_ids", ())]


def text_for(kind: str, concept_name: str) -> str:
    article = "an" if concept_name[:1].lower() in "aeiou" else "a"
    if kind == QUALITY:
        return f"Is this box tight around one whole visible {concept_name}, not boxed already?"
    return f"Is every {concept_name} in this image inside a box? (Answer no if {article} {concept_name} is missing one.)"
