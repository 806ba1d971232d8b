"""Serving gold through the queue: the lease policy that withholds what a worker may not take (every task of a
dataset they are blocked in, production tasks of a kind they have not qualified for) and draws gold items into
their stream (qualification first, then at the dataset's rate), and the pool tasks gold items are served as.

A gold item is one ordinary `question` task in the queue's reserved `gold` pool, made when the item is added by
the same code as every question's task (same id sequence, timestamps, columns, payload and wording) and leased
by the same statement as any task. The queue never hands it out but through this policy's draw, and never to
one worker twice. Nothing a worker receives says gold.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from annotation import queue
from annotation.models import Assignment
from annotation.queue import sqlrows
from boxes.services import accepted_boxes
from consensus.creation import TASK_KIND, question_task
from consensus.models import ConsensusSettings, Question, QuestionKind, QuestionState
from consensus.question_kind import BOX_KINDS, SHOWN_BOXES_KEY
from consensus.wording import question_text

from .models import Block, BlockAction, GoldAnswer, GoldItem, GoldSettings, GoldTally, Purpose, WorkerScore

GOLD_POOL = "gold"
_GOLD_STREAM = 0x601D
LIVE_QUESTION_STATES = (QuestionState.WAITING, QuestionState.OPEN)
# How many candidate items a draw names: the queue leases the first free one, so an item another worker holds
# right now costs nothing but the next candidate.
DRAW_SIZE = 16


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
    # to answer. Rows are ("item", dataset, kind, number of items) and ("block", dataset, "", 0). The items are
    # counted from the tally kept with them (gold.tally): one row per (dataset, kind) with gold, however many
    # items every tenant has.
    qn = connection.ops.quote_name
    with sqlrows.cursor(connection) as cursor:
        cursor.execute(
            f"SELECT 'item', dataset_id, kind, items FROM {qn(GoldTally._meta.db_table)} WHERE items > 0 "
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


def lease_policy(worker, request: queue.LeaseRequest, now: datetime) -> queue.LeaseTerms:
    """Queue lease policy: the terms of one lease of `worker`.

    Withheld: every dataset they are blocked in (drawing and box checks included: a block covers every kind),
    and the (dataset, kind) pairs they must qualify for first. Drawn: looking at the question the worker would
    get next (ignoring gating), a pair they must qualify for gets the next item of their qualification attempt
    (none while they rest after a failed one); a qualified pair gets gold with probability `rate`, drawn from
    a generator seeded by (dataset seed, worker, number of the worker's leases in the dataset) so runs are
    reproducible. The candidates are looked up, and handed to the queue as a draw it only looks up when the
    lease is not gold, whether or not this lease is gold, so a gold lease costs what an ordinary one costs.

    A lease of several tasks (`request.count`) draws each of its places as that many single leases in a row
    would (the draw's `slots`); while the worker qualifies it holds one task (`most`), as an attempt is
    balanced item by item."""
    ctx = gold_context(worker, now)
    terms = queue.LeaseTerms(withheld_datasets=ctx.blocked, withheld_topics=ctx.withheld)
    if not ctx.has_gold or (request.kinds_wanted and TASK_KIND not in request.kinds_wanted):
        return terms
    nxt = (
        queue.available_tasks(
            worker=worker,
            kinds_wanted=list(request.kinds_wanted or ()),
            dataset_id=request.dataset_id,
            datasets=request.datasets,
            now=now,
            terms=queue.LeaseTerms(),
        )
        .order_by("-priority", "id")
        .values("dataset_id", "kind", "topic")
        .first()
    )
    if nxt is None or nxt["kind"] != TASK_KIND or not nxt["topic"]:
        return terms
    pair = (nxt["dataset_id"], nxt["topic"])
    if pair[0] in ctx.blocked:
        return terms
    settings = GoldSettings.for_dataset(pair[0])
    n = Assignment.objects.filter(worker=worker, task__dataset_id=pair[0]).count()
    if pair in ctx.gated and pair not in ctx.qualified:
        if pair in ctx.resting:
            return terms
        attempt, wanted = _qualification_slot(worker, pair, settings)
        ids = _candidates(worker, pair, settings, n, wanted=wanted, fallback=True)
        note = f"{Purpose.QUALIFICATION}:{attempt}"
        due, slots = True, (0,)
        # An attempt is balanced item by item as it is answered, so it is served one task at a time.
        terms = replace(terms, most=1)
    else:
        if settings.rate <= 0:
            return terms
        ids = _candidates(worker, pair, settings, n, wanted=None, fallback=False)
        # Lease number n + i of the worker in the dataset is place i of a lease of several tasks: each place
        # is drawn as a single lease with that number would be, so the share is the rate whatever the count.
        slots = tuple(
            i
            for i in range(max(1, request.count))
            if gold_due(settings.seed, worker.pk, n + i, settings.rate)
        )
        due = bool(slots)
        note = str(Purpose.EMBEDDED) if due else ""
    if not ids:
        return terms
    # Not due: the draw is only looked up, so this lease runs the statements a gold lease runs.
    return replace(terms, draw=queue.Draw(pool=GOLD_POOL, task_ids=ids, note=note, lease=due, slots=slots))


def lease_purpose(note: str) -> tuple[str, int | None] | None:
    """(purpose, qualification attempt) of a gold lease from its note, or None for any other lease."""
    if not note:
        return None
    purpose, _, attempt = note.partition(":")
    if purpose not in Purpose.values:
        return None
    return purpose, int(attempt) if attempt else None


def gold_due(seed: int, worker_id: int, n_leases: int, rate: float) -> bool:
    """Whether the worker's lease number `n_leases` in a dataset is gold: an independent draw per lease, seeded
    so it is reproducible yet not guessable from the count alone (no fixed "every 10th")."""
    return bool(np.random.default_rng([seed, _GOLD_STREAM, worker_id, n_leases]).random() < rate)


def _candidates(worker, pair, settings: GoldSettings, n: int, *, wanted: bool | None, fallback: bool):
    """Ids of up to DRAW_SIZE pool tasks of the pair's items this worker never had, in a seeded random order.

    Only items on images with no question of their kind at all, else with no live one: a worker who met the
    same image and question twice would know one of them is gold. A qualification attempt (announced as
    training anyway) falls back to any unseen item. Qualification wants a balanced set, so answering "yes" to
    everything scores half: items of the wanted answer while any is left."""
    dataset_id, kind = pair
    unseen = GoldItem.objects.filter(dataset_id=dataset_id, kind=kind, task__isnull=False).exclude(
        Exists(Assignment.objects.filter(task_id=OuterRef("task_id"), worker=worker))
    )
    if wanted is not None and unseen.filter(answer=wanted).exists():
        unseen = unseen.filter(answer=wanted)
    asked = Question.objects.filter(dataset_id=dataset_id, kind=kind, image_id=OuterRef("image_id"))
    tiers = [
        unseen.exclude(Exists(asked)),
        unseen.exclude(Exists(asked.filter(state__in=LIVE_QUESTION_STATES))),
    ]
    if fallback:
        tiers.append(unseen)
    for tier in tiers:
        ids = list(tier.order_by("id").values_list("task_id", flat=True))
        if ids:
            rng = np.random.default_rng([settings.seed, _GOLD_STREAM, worker.pk, n, 1])
            return tuple(int(ids[i]) for i in rng.permutation(len(ids))[:DRAW_SIZE])
    return ()


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


def gold_pool_fill(*, dataset_id: int) -> int:
    """Make the pool task of every gold item of the dataset that has none yet; returns how many were made.

    The task is what a real question of the item's kind would be given (`consensus.creation.question_task`):
    its wording, priority 0 and the dataset's vote cap, and for box questions the accepted boxes of the image
    that a real one would show beside the judged box. Runs when items are added and when the gold settings
    change; items are taken in id order, so their tasks' ids follow the items'."""
    with transaction.atomic():
        items = list(
            GoldItem.objects.select_for_update(no_key=True)
            .filter(dataset_id=dataset_id, task__isnull=True)
            .select_related("concept")
            .order_by("id")
        )
        if not items:
            return 0
        vote_cap = ConsensusSettings.for_dataset(dataset_id).vote_cap
        tasks = []
        for item in items:
            task = question_task(
                dataset_id=dataset_id,
                kind=item.kind,
                image_id=item.image_id,
                concept_id=item.concept_id,
                box_id=item.box_id,
                text=question_text(item.kind, item.concept, dataset_id),
                priority=0,
                answers_wanted=vote_cap,
                pool=GOLD_POOL,
            )
            if item.kind in BOX_KINDS:
                task.payload[SHOWN_BOXES_KEY] = [
                    b.pk for b in accepted_boxes(item.image_id, item.concept_id) if b.pk != item.box_id
                ]
            tasks.append(task)
        queue.tasks_create(tasks)
        for item, task in zip(items, tasks, strict=True):
            item.task = task
        GoldItem.objects.bulk_update(items, ["task"])
        return len(items)
