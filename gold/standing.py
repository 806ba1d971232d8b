"""What a worker is told about their own standing: the qualification attempts they failed (and when they may try
again, or that they may not), the datasets they are blocked in, and the question kinds the good-standing lease
policy offers them less of (consensus/standing_lease.py). Without it, tasks of that kind simply
stopped coming and the worker page said "No tasks are waiting", whatever the reason."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from consensus import standing_lease
from consensus.models import QuestionKind

from .models import Block, GoldSettings, ScoreKind, WorkerScore

# What each question kind asks, as a worker reads it (the kinds' labels carry a CONCEPT placeholder).
KIND_WORDS = {
    QuestionKind.IMAGE_VERIFY: "image checks (does this image show ...?)",
    QuestionKind.BOX_QUALITY: "box checks (is this box right and tight?)",
    QuestionKind.BOX_COVERAGE: "coverage checks (is every instance boxed?)",
    QuestionKind.HIERARCHY: "hierarchy questions (is there a ... in this image?)",
    QuestionKind.BINARY_VOTE: "yes/no votes",
}


@dataclass(frozen=True)
class FailedQualification:
    dataset_id: int
    dataset: str
    kind: str
    what: str
    failed_attempts: int
    attempts_allowed: int
    retry_at: datetime | None  # None: no attempt left

    @property
    def message(self) -> str:
        head = (
            f"You did not pass the qualification for {self.what} in {self.dataset} "
            f"({self.failed_attempts} of {self.attempts_allowed} attempts used)"
        )
        if self.retry_at is None:
            return f"{head}: no attempt is left, so these tasks are not offered to you any more."
        return f"{head}: you may try again from {self.retry_at.isoformat(timespec='minutes')}."


@dataclass(frozen=True)
class DatasetBlock:
    dataset_id: int
    dataset: str
    kind: str = ""  # the evidence that blocked them (a ScoreKind)

    @property
    def message(self) -> str:
        if self.kind == ScoreKind.SEQUENTIAL:
            return (
                f"Your answers in {self.dataset} too often disagreed with check questions and with what other "
                "workers agreed on: its tasks are not offered to you any more."
            )
        return (
            f"Your answers to check questions in {self.dataset} were too often wrong: its tasks are not "
            "offered to you any more."
        )


@dataclass(frozen=True)
class HeldBack:
    kind: str

    @property
    def message(self) -> str:
        return (
            f"Fewer {KIND_WORDS[self.kind]} are offered to you for now: your answers to them have agreed too little with "
            "what other workers agreed on. Answer the ones you are given with care, and more will come."
        )


def worker_standing(
    worker, now: datetime | None = None
) -> tuple[list[FailedQualification], list[DatasetBlock], list[HeldBack]]:
    """The failed qualifications still holding `worker` back (resting, or out of attempts), their blocks, and
    the question kinds held back from them for their standing on it."""
    now = now or timezone.now()
    rows = list(
        WorkerScore.objects.filter(
            worker=worker, qualified=False, qualification_failed__gt=0, kind__in=QuestionKind.values
        )
        .select_related("dataset")
        .order_by("dataset_id", "kind")
    )
    settings = {
        s.dataset_id: s for s in GoldSettings.objects.filter(dataset_id__in={r.dataset_id for r in rows})
    }
    failed = []
    for row in rows:
        allowed = settings.get(row.dataset_id, GoldSettings()).qualification_attempts
        out = row.qualification_failed >= allowed
        if not out and (row.qualification_retry_at is None or row.qualification_retry_at <= now):
            continue  # free to start the next attempt
        failed.append(
            FailedQualification(
                dataset_id=row.dataset_id,
                dataset=row.dataset.name,
                kind=row.kind,
                what=KIND_WORDS.get(row.kind, row.kind),
                failed_attempts=row.qualification_failed,
                attempts_allowed=allowed,
                retry_at=None if out else row.qualification_retry_at,
            )
        )
    blocks = [
        DatasetBlock(dataset_id=b.dataset_id, dataset=b.dataset.name, kind=b.kind)
        for b in Block.objects.filter(worker=worker).select_related("dataset").order_by("dataset_id")
    ]
    unique_blocks = list({b.dataset_id: b for b in blocks}.values())
    held = [HeldBack(kind=standing_lease.WITHHELD_KIND)] if standing_lease.held_back(worker) else []
    return failed, unique_blocks, held
