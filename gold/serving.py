"""Serving gold through the queue: the lease hook that mixes gold items into a worker's stream (qualification
first, then at the dataset's rate) and the task filter that keeps gold tasks private and withholds production
tasks of kinds a worker is blocked from or not yet qualified for (hooks registered in gold.apps).

A gold item is served as a fresh `question` task leased to that one worker: the same kind, the same payload
(the question's wording), the same URLs as an ordinary question. Nothing about it says gold.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from annotation import queue
from annotation.boxes import accepted_boxes
from annotation.models import Assignment, Task, TaskState
from config import sqlrows
from consensus.models import Question, QuestionKind, QuestionState
from consensus.question_kind import BOX_KINDS, SHOWN_BOXES_KEY
from consensus.services import TASK_KIND, question_text

from .models import Block, BlockAction, GoldAnswer, GoldItem, GoldServing, GoldSettings, Purpose, WorkerScore

_GOLD_STREAM = 0x601D
LIVE_QUESTION_STATES = (QuestionState.WAITING, QuestionState.OPEN)


@dataclass(frozen=True)
class GoldContext:
    """What gating needs to know for one lease: the pairs that need qualification, the datasets this worker is
    blocked in, the pairs they qualified for and those where they may not start an attempt now (cooling down
    after a failed one, or out of attempts). One query when no dataset has gold (the common hot path), three
    otherwise."""

    gated: frozenset[tuple[int, str]] = frozenset()
    blocked: frozenset[int] = frozenset()  # dataset ids: a block covers every kind of the dataset
    qualified: frozenset[tuple[int, str]] = frozenset()
    resting: frozenset[tuple[int, str]] = frozenset()
    has_gold: bool = False

    @property
    def withheld(self) -> frozenset[tuple[int, str]]:
        return self.gated - self.qualified


def gold_context(worker, now: datetime | None = None) -> GoldContext:
    # Plain SQL, one statement: this runs on every lease and the ORM took longer to build it than the database
    # to answer. Rows are ("item", dataset, kind, number of items) and ("block", dataset, "", 0).
    qn = connection.ops.quote_name
    with sqlrows.cursor(connection) as cursor:
        cursor.execute(
            f"SELECT 'item', dataset_id, kind, COUNT(*) FROM {qn(GoldItem._meta.db_table)} "
            "GROUP BY dataset_id, kind "
            f"UNION ALL SELECT DISTINCT 'block', dataset_id, '', 0 FROM {qn(Block._meta.db_table)} "
            "WHERE worker_id = %s "
            # An organizer's block stands while it is the latest action on the (worker, dataset).
            f"UNION ALL SELECT 'block', a.dataset_id, '', 0 FROM {qn(BlockAction._meta.db_table)} a "
            "WHERE a.worker_id = %s AND a.blocked = %s AND a.id = "
            f"(SELECT MAX(b.id) FROM {qn(BlockAction._meta.db_table)} b "
            "WHERE b.worker_id = a.worker_id AND b.dataset_id = a.dataset_id)",
            [worker.pk, worker.pk, True],
        )
        rows = cursor.fetchall()
    counts = [(d, k, n) for what, d, k, n in rows if what == "item"]
    blocked = frozenset(d for what, d, _, _ in rows if what == "block")
    if not counts:
        return GoldContext(blocked=blocked)
    settings = {
        s.dataset_id: s for s in GoldSettings.objects.filter(dataset_id__in={d for d, _, _ in counts})
    }
    gated = set()
    for dataset_id, kind, n in counts:
        size = settings.get(dataset_id, GoldSettings()).qualification_size
        if size and n >= size:
            gated.add((dataset_id, kind))
    now = now or timezone.now()
    qualified, resting = set(), set()
    for dataset_id, kind, ok, failed, retry_at in WorkerScore.objects.filter(
        worker=worker, kind__in=QuestionKind.values
    ).values_list("dataset_id", "kind", "qualified", "qualification_failed", "qualification_retry_at"):
        if ok:
            qualified.add((dataset_id, kind))
        elif failed >= settings.get(dataset_id, GoldSettings()).qualification_attempts or (
            retry_at is not None and retry_at > now
        ):
            resting.add((dataset_id, kind))
    return GoldContext(
        gated=frozenset(gated),
        blocked=blocked,
        qualified=frozenset(qualified),
        resting=frozenset(resting),
        has_gold=True,
    )


def task_filter(worker, connection) -> list[tuple[str, list]]:
    """SQL conditions on the queue's task alias `t`: never a gold task of anyone else; no task at all of a
    dataset the worker is blocked in (drawing and box checks included: they have no gold of their own); no
    production task of a pair not yet qualified for. Uses the context the lease hook just computed for this
    lease, if any."""
    ctx = getattr(worker, "_gold_context", None)
    if ctx is None:
        ctx = gold_context(worker)
    else:
        del worker._gold_context  # one lease only: a block or qualification may change it before the next
    qn = connection.ops.quote_name
    conditions = [
        (f"NOT EXISTS (SELECT 1 FROM {qn(GoldServing._meta.db_table)} gs WHERE gs.task_id = t.id)", [])
    ]
    if ctx.blocked:
        datasets = sorted(ctx.blocked)
        conditions.append((f"t.dataset_id NOT IN ({', '.join(['%s'] * len(datasets))})", datasets))
    if ctx.withheld:
        pairs = sorted(ctx.withheld)
        matches = " OR ".join(["(t.dataset_id = %s AND q.kind = %s)"] * len(pairs))
        conditions.append(
            (
                f"NOT EXISTS (SELECT 1 FROM {qn(Question._meta.db_table)} q WHERE q.task_id = t.id AND ({matches}))",
                [value for pair in pairs for value in pair],
            )
        )
    return conditions


def lease_hook(worker, kinds_wanted, dataset_id, now: datetime) -> Assignment | None:
    """Lease a gold task instead of the worker's next ordinary question, or return None for the normal path.

    Looks at the question the worker would get next (ignoring gating): a pair they must qualify for gets the
    next item of their qualification attempt (none while they rest after a failed one); a qualified pair gets
    gold with probability `rate`, drawn from a generator seeded by (dataset seed, worker, number of the
    worker's leases in the dataset) so runs are reproducible."""
    if kinds_wanted and TASK_KIND not in kinds_wanted:
        return None
    ctx = gold_context(worker, now)
    worker._gold_context = ctx
    if not ctx.has_gold:
        return None
    nxt = (
        queue.available_tasks(
            worker=worker, kinds_wanted=kinds_wanted, dataset_id=dataset_id, now=now, apply_filters=False
        )
        .filter(~Exists(GoldServing.objects.filter(task=OuterRef("pk"))))
        .order_by("-priority", "id")
        .values("dataset_id", "kind", "question__kind", "priority")
        .first()
    )
    if nxt is None or nxt["kind"] != TASK_KIND or nxt["question__kind"] is None:
        return None
    pair = (nxt["dataset_id"], nxt["question__kind"])
    if pair[0] in ctx.blocked:
        return None
    settings = GoldSettings.for_dataset(pair[0])
    if pair in ctx.gated and pair not in ctx.qualified:
        if pair in ctx.resting:
            return None
        return _serve(worker, pair, Purpose.QUALIFICATION, nxt["priority"], now, settings)
    if settings.rate <= 0:
        return None
    n = Assignment.objects.filter(worker=worker, task__dataset_id=pair[0]).count()
    if not gold_due(settings.seed, worker.pk, n, settings.rate):
        return None
    return _serve(worker, pair, Purpose.EMBEDDED, nxt["priority"], now, settings)


def gold_due(seed: int, worker_id: int, n_leases: int, rate: float) -> bool:
    """Whether the worker's lease number `n_leases` in a dataset is gold: an independent draw per lease, seeded
    so it is reproducible yet not guessable from the count alone (no fixed "every 10th")."""
    return bool(np.random.default_rng([seed, _GOLD_STREAM, worker_id, n_leases]).random() < rate)


def _serve(
    worker, pair, purpose: str, priority: int, now: datetime, settings: GoldSettings
) -> Assignment | None:
    dataset_id, kind = pair
    unseen = GoldItem.objects.filter(dataset_id=dataset_id, kind=kind).exclude(
        Exists(GoldServing.objects.filter(item=OuterRef("pk"), worker=worker))
    )
    attempt = None
    if purpose == Purpose.QUALIFICATION:
        attempt, wanted = _qualification_slot(worker, pair, settings)
        # A balanced set, so answering "yes" to everything scores half; any unseen item when one side ran out.
        if unseen.filter(answer=wanted).exists():
            unseen = unseen.filter(answer=wanted)
    # Where possible, an item on an image with no question of its kind at all, else with no live one: a worker
    # who met the same image and question twice would know one of them is gold.
    asked = Question.objects.filter(dataset_id=dataset_id, kind=kind, image_id=OuterRef("image_id"))
    candidates: list[int] = []
    for tier in (
        unseen.exclude(Exists(asked)),
        unseen.exclude(Exists(asked.filter(state__in=LIVE_QUESTION_STATES))),
        unseen,
    ):
        candidates = list(tier.order_by("id").values_list("pk", flat=True))
        if candidates:
            break
    if not candidates:
        return None
    n_served = GoldServing.objects.filter(worker=worker).count()
    rng = np.random.default_rng([settings.seed, _GOLD_STREAM, worker.pk, n_served, 1])
    item = GoldItem.objects.select_related("concept", "image", "box").get(
        pk=candidates[int(rng.integers(len(candidates)))]
    )
    with transaction.atomic():  # the task, its serving record and the lease exist together or not at all
        task = Task.objects.create(
            kind=TASK_KIND,
            dataset_id=dataset_id,
            image=item.image,
            concept=item.concept,
            box=item.box,
            payload=_payload(kind, item),
            priority=priority,
            answers_wanted=1,
        )
        GoldServing.objects.create(item=item, worker=worker, task=task, purpose=purpose, attempt=attempt)
        # Leased by the queue's own statement: the same stamps (leased_at = now, expiry = now + lease) and the
        # same columns read back as any lease.
        return queue.task_lease(task_id=task.pk, worker=worker, now=now)


def _qualification_slot(worker, pair, settings: GoldSettings) -> tuple[int, bool]:
    """The worker's current qualification attempt of the pair and the answer its next item should have: each
    attempt is a seeded shuffle of size // 2 "no" and the rest "yes" items, filled in answer order."""
    dataset_id, kind = pair
    failed = (
        WorkerScore.objects.filter(worker=worker, dataset_id=dataset_id, kind=kind)
        .values_list("qualification_failed", flat=True)
        .first()
    ) or 0
    attempt = failed + 1
    answered = GoldAnswer.objects.filter(
        worker=worker, dataset_id=dataset_id, kind=kind, serving__attempt=attempt
    ).count()
    size = max(1, settings.qualification_size)
    slots = np.arange(size) >= size // 2
    order = np.random.default_rng(
        [settings.seed, _GOLD_STREAM, worker.pk, QuestionKind.values.index(kind), attempt]
    ).permutation(slots)
    return attempt, bool(order[min(answered, size - 1)])


def _payload(kind: str, item: GoldItem) -> dict:
    """What a real question of this kind stores: its wording (the same function words both), and for box
    questions the accepted boxes of the image that a real one would show beside the judged box."""
    payload: dict = {"question": question_text(kind, item.concept)}
    if kind in BOX_KINDS:
        payload[SHOWN_BOXES_KEY] = [
            b.pk for b in accepted_boxes(item.image_id, item.concept_id) if b.pk != item.box_id
        ]
    return payload


def unanswered_gold_close(task_ids: list[int]) -> None:
    """Queue hook: a gold task whose lease expired or was skipped is cancelled, not left open. Nobody else may
    take it (it was served to one worker), so open it would only sit in the queue's counts forever. Other workers can
    still be served the item."""
    Task.objects.filter(pk__in=task_ids, gold_serving__isnull=False).update(state=TaskState.CANCELLED)
