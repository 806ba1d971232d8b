"""The box pipeline's outbound hook for binary questions ("is this box tight?", "is every instance boxed?").

Annotation sits below consensus, so it never imports it: a higher app registers a `QuestionBackend` for the
question kinds it takes over (in its `AppConfig.ready`) and reports each decision back through
`annotation.boxes.on_question_decided`. Kinds no backend took go to the default backend, which consensus also
registers: the fixed first-to-k vote of `consensus.fixed_box_questions`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Protocol

QUALITY = "box_quality"
COVERAGE = "box_coverage"
KINDS = (QUALITY, COVERAGE)


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


class QuestionBackend(Protocol):
    """Asks a binary question of the crowd, inside the caller's transaction. Returns a handle naming what was
    created (e.g. "task:12"), for logs and the job's audit trail. When the question is decided the backend
    calls `annotation.boxes.on_question_decided(question, outcome)` with True, False, or None for
    "undecidable" (its vote cap reached without a decision)."""

    name: str

    def ask(self, question: BinaryQuestion) -> str: ...


_backends: dict[str, QuestionBackend] = {}
_default: QuestionBackend | None = None


def register(backend: QuestionBackend, kinds: tuple[str, ...] = KINDS) -> None:
    """Route `kinds` to `backend` (a later registration for a kind replaces the earlier one)."""
    unknown = set(kinds) - set(KINDS)
    if unknown:
        raise ValueError(f"unknown question kinds {sorted(unknown)}; known: {list(KINDS)}")
    for kind in kinds:
        _backends[kind] = backend


def unregister(kinds: tuple[str, ...] = KINDS) -> None:
    for kind in kinds:
        _backends.pop(kind, None)


def register_default(backend: QuestionBackend) -> None:
    global _default
    _default = backend


def backend_for(kind: str) -> QuestionBackend:
    backend = _backends.get(kind) or _default
    if backend is None:
        raise LookupError(f"no question backend for {kind!r} (is the annotation app ready?)")
    return backend


def ask(question: BinaryQuestion) -> str:
    return backend_for(question.kind).ask(question)


def text_for(kind: str, concept_name: str) -> str:
    article = "an" if concept_name[:1].lower() in "aeiou" else "a"
    if kind == QUALITY:
        return f"Is this box tight around one whole visible {concept_name}, not boxed already?"
    return f"Is every {concept_name} in this image inside a box? (Answer no if {article} {concept_name} is missing one.)"
