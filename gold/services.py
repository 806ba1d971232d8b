"""State changes of gold: check a gold answer and update the worker's score in the same transaction,
qualify, score drawers from the quality verdicts on their boxes, test workers on every answer (gold.sprt, after a
gold answer and after a question they voted on is decided), block a worker from a whole dataset and repair
(void their votes through consensus), and pay recommendations."""

from __future__ import annotations

from dataclasses import asdict
from datetime import timedelta
from typing import Any

from celery import current_app
from django.db import connection, transaction
from django.utils import timezone

from annotation import kinds, queue
from annotation.models import Assignment, AssignmentState, Box
from annotation.queue import sqlrows
from consensus.calibration import ConfidenceTable
from consensus.estimates import table_in_use
from consensus.models import ConsensusSettings, Question, Vote
from consensus.voiding import votes_void
from outbox.services import message_record_later

from . import events, quality, scoring
from .models import (
    Block,
    BlockAction,
    BlockRule,
    DrawVerdict,
    GoldAnswer,
    GoldItem,
    GoldServing,
    GoldSettings,
    PaymentDecision,
    Purpose,
    Recommendation,
    ScoreKind,
    WorkerScore,
)
from .serving import GOLD_POOL, lease_purpose

SCORE_TASK = "gold.tasks.gold_score_update"


def gold_submit_intercept(assignment: Assignment, writes: sqlrows.Writes) -> queue.TaskChange | None:
    """Queue submit interceptor: the answer to a gold pool task is checked by gold and never becomes a consensus
    vote; the task stays in the pool for other workers (the queue never gives it to this one again). Runs inside
    the submit transaction with the task row locked. Any other task costs no query.

    The answer is recorded here (a `GoldServing` and its `GoldAnswer`, like the question lookup and the vote a
    real answer costs). A qualification answer is scored here too (its feedback is in the response; those items
    are announced as training). An embedded item's score is updated after the response, by a background task
    the outbox's relay delivers (`gold_score_update`), so a submit takes no longer for gold than for a real
    question (issue 35). Without a broker every background task runs in-process, and this one runs here. The
    answer row and the outbox message go with the submit's `writes`."""
    task = assignment.task
    if task.pool != GOLD_POOL:
        return None
    purpose, attempt = lease_purpose(assignment.lease_note) or (Purpose.EMBEDDED, None)
    item_id, kind, expected, concept_id, calibration_min, served = _item_of(task, assignment.worker_id)
    if served:
        return queue.TaskChange()  # answered again after an undo: the first answer is the one scored
    # The statements a real answer runs, in kind: the subject looked up (the question), the answer recorded
    # (the vote), and the calibration table of its (kind, concept) read and applied to the answer (the vote's
    # estimate). The last serves only to make a gold submit cost what a real one costs.
    serving = GoldServing(
        item_id=item_id,
        worker=assignment.worker,
        task=task,
        assignment=assignment,
        purpose=purpose,
        attempt=attempt,
    )
    sqlrows.insert(connection, serving)
    writes.insert(
        GoldAnswer(
            serving=serving,
            assignment=assignment,
            worker=assignment.worker,
            dataset_id=task.dataset_id,
            kind=kind,
            correct=bool(assignment.answer["answer"]) == expected,
        ),
    )
    table = table_in_use(kind, concept_id, calibration_min)
    if table is not None:
        yes = bool(assignment.answer["answer"])
        ConfidenceTable.from_dict(table.table).p_positive(int(yes), int(not yes))
    if purpose == Purpose.EMBEDDED and not current_app.conf.task_always_eager:
        # Written with the submit's own writes and left to the relay: no round trip to the database or broker.
        message_record_later(writes, SCORE_TASK, (serving.pk,), dataset_id=task.dataset_id)
    else:
        writes.send()  # the score is counted from the recorded answers, this one included
        score_update(worker=assignment.worker, dataset_id=task.dataset_id, kind=kind, serving=serving)
    return queue.TaskChange()


def _item_of(task, worker_id: int) -> tuple[int, str, bool, int, int, bool]:
    """(id, kind, answer, concept, the dataset's calibration_min, whether this worker answered it before) of
    the gold item a pool task serves: one prepared statement, as a real answer's question lookup is."""
    qn = connection.ops.quote_name
    with sqlrows.cursor(connection) as cursor:
        cursor.execute(
            f"SELECT i.id, i.kind, i.answer, i.concept_id, COALESCE(c.calibration_min, %s), "
            f"EXISTS (SELECT 1 FROM {qn(GoldServing._meta.db_table)} s WHERE s.item_id = i.id AND s.worker_id = %s) "
            f"FROM {qn(GoldItem._meta.db_table)} i LEFT JOIN {qn(ConsensusSettings._meta.db_table)} c "
            "ON c.dataset_id = i.dataset_id WHERE i.task_id = %s",
            [_CALIBRATION_MIN, worker_id, task.pk],
        )
        return cursor.fetchone()


_CALIBRATION_MIN = ConsensusSettings._meta.get_field("calibration_min").default


def gold_score_update(serving_id: int) -> None:
    """The background half of an embedded gold answer: update the worker's score with it (and block them when
    their answers say so). Safe to run again: the score is recounted from the recorded answers."""
    serving = GoldServing.objects.select_related("item", "worker", "task").get(pk=serving_id)
    with transaction.atomic():
        score_update(
            worker=serving.worker, dataset_id=serving.item.dataset_id, kind=serving.item.kind, serving=serving
        )


def gold_withdraw_intercept(assignment: Assignment) -> queue.TaskChange | None:
    """Queue undo interceptor: an embedded gold item's answer is taken back as any undecided question's is, as
    far as the worker can tell (a new lease on the same task), so an undo tells no gold item apart; its score
    keeps the answer first given (a gold answer is never rewritten) and the answer given again is not scored.
    A training (qualification) answer stands: those items are announced and their feedback already shown."""
    if assignment.task.pool != GOLD_POOL:
        return None
    found = lease_purpose(assignment.lease_note)
    if found is not None and found[0] == Purpose.QUALIFICATION:
        raise kinds.AnswerStands("a training answer stands: the right answer has been shown")
    return queue.TaskChange()


def qualification_feedback(assignment: Assignment) -> dict[str, Any]:
    """Submit-response extras (fresh or replayed submit): after a wrong answer to a qualification item, what
    the right answer was (the training of Su et al. 2012). Nothing for embedded gold or ordinary tasks; only a
    gold pool task costs a query."""
    if assignment.task.pool != GOLD_POOL:
        return {}
    found = lease_purpose(assignment.lease_note)
    if found is not None and found[0] != Purpose.QUALIFICATION:
        return {}  # embedded gold: no query, as for an ordinary task (and it may not be scored yet)
    answer = GoldAnswer.objects.select_related("serving__item").filter(assignment_id=assignment.pk).first()
    if answer is None or answer.correct or answer.serving.purpose != Purpose.QUALIFICATION:
        return {}
    item = answer.serving.item
    return {
        "feedback": {
            "correct": False,
            "expected": {"answer": item.answer},
            "explanation": item.explanation or "Look again at the concept's description before answering.",
        }
    }


def training_progress(assignment: Assignment) -> dict[str, Any]:
    """Lease extras: a qualification item is announced as a training question with its place in the attempt
    ("question 3 of 8"). Only qualification items: while a worker takes an attempt of a (dataset, kind), every
    question of that pair they are given is one, so this says nothing the worker does not know; embedded gold
    gets nothing, like any ordinary task, and no lease but a qualification one costs a query."""
    if assignment.task.pool != GOLD_POOL:
        return {}
    found = lease_purpose(assignment.lease_note)
    if found is None or found[0] != Purpose.QUALIFICATION:
        return {}
    dataset_id = assignment.task.dataset_id
    answered = GoldAnswer.objects.filter(
        worker_id=assignment.worker_id,
        dataset_id=dataset_id,
        kind=assignment.task.topic,
        serving__attempt=found[1],
    ).count()
    size = GoldSettings.for_dataset(dataset_id).qualification_size
    return {"training": {"number": min(answered + 1, size), "size": size}}


def _score_row(*, worker, dataset_id: int, kind: str, correct: int, answered: int, settings, rule):
    """Lock and rewrite the worker's score row of (dataset, kind) from these counts."""
    row, _ = WorkerScore.objects.select_for_update(no_key=True).get_or_create(
        worker=worker, dataset_id=dataset_id, kind=kind, defaults={"mean": 0.0, "lower": 0.0, "p_below": 0.0}
    )
    s = scoring.score(correct, answered, settings.prior, rule)
    row.answered, row.correct = answered, correct
    row.mean, row.lower, row.p_below = s.mean, s.lower, s.p_below
    return row, s


def score_update(*, worker, dataset_id: int, kind: str, serving: GoldServing) -> WorkerScore:
    """Recount the worker's gold answers of (dataset, kind) and of the whole dataset, settle a finished
    qualification attempt, and block the worker from the dataset when all their gold answers say so."""
    settings = GoldSettings.for_dataset(dataset_id)
    everything = GoldAnswer.objects.filter(worker=worker, dataset_id=dataset_id)
    # The dataset row first: it serializes blocking decisions of one worker in one dataset.
    total, s_all = _score_row(
        worker=worker,
        dataset_id=dataset_id,
        kind=ScoreKind.ALL,
        correct=everything.filter(correct=True).count(),
        answered=everything.count(),
        settings=settings,
        rule=settings.rule,
    )
    total.save()
    answers = everything.filter(kind=kind)
    row, _ = _score_row(
        worker=worker,
        dataset_id=dataset_id,
        kind=kind,
        correct=answers.filter(correct=True).count(),
        answered=answers.count(),
        settings=settings,
        rule=settings.rule,
    )
    passed = False
    if serving.purpose == Purpose.QUALIFICATION and not row.qualified:
        row.qualification_answered += 1
        _qualification_settle(row, answers.filter(serving__attempt=serving.attempt), settings)
        passed = row.qualified
    row.save()
    if passed:  # once per worker and (dataset, kind): a qualified row takes no more qualification items
        events.qualification_passed(worker, dataset_id, kind, serving.task.kind)
    if settings.block_rule == BlockRule.SEQUENTIAL:
        worker_quality_check(worker=worker, dataset_id=dataset_id, settings=settings, locked=True)
    elif s_all.blocked and not Block.objects.filter(worker=worker, dataset_id=dataset_id).exists():
        worker_block(worker=worker, dataset_id=dataset_id, kind=ScoreKind.ALL, score=s_all)
    return row


def worker_quality_check(
    *, worker, dataset_id: int, settings: GoldSettings | None = None, locked: bool = False
) -> bool:
    """Run the sequential test (gold.sprt) over everything the worker answered in the dataset, rewrite their
    `sequential` score row and block them when it says so. Nothing in a dataset that blocks by the posterior
    rule, or for a worker blocked there already. `locked`: the caller holds the worker's dataset score row
    (score_update); otherwise it is locked here first, as score_update does, so that blocking decisions of one
    worker in one dataset are serialized. Returns whether this call blocked them."""
    settings = settings or GoldSettings.for_dataset(dataset_id)
    if settings.block_rule != BlockRule.SEQUENTIAL:
        return False
    with transaction.atomic():
        if not locked:
            WorkerScore.objects.select_for_update(no_key=True).get_or_create(
                worker=worker,
                dataset_id=dataset_id,
                kind=ScoreKind.ALL,
                defaults={"mean": 0.0, "lower": 0.0, "p_below": 0.0},
            )
        if Block.objects.filter(worker=worker, dataset_id=dataset_id).exists():
            return False
        verdict = quality.sequential_score_write(worker=worker, dataset_id=dataset_id)
        if not verdict.blocked:
            return False
        evidence = verdict.gold + verdict.agreement
        share = evidence.right / evidence.answers if evidence.answers else 0.0
        score = scoring.Score(
            answered=evidence.answers,
            correct=evidence.right,
            mean=share,
            lower=share,
            p_below=quality.p_uninformative(verdict.llr),
            blocked=True,
        )
        worker_block(
            worker=worker, dataset_id=dataset_id, kind=ScoreKind.SEQUENTIAL, score=score, llr=verdict.llr
        )
        return True


def voters_quality_check(question_id: int) -> int:
    """The background half of a decision (gold.quality.question_decided): test again every worker with a valid
    vote on the question, one transaction each, in worker order. Returns how many were blocked."""
    question = Question.objects.filter(pk=question_id).only("pk", "dataset_id").first()
    if question is None:
        return 0
    settings = GoldSettings.for_dataset(question.dataset_id)
    if settings.block_rule != BlockRule.SEQUENTIAL:
        return 0
    votes = Vote.objects.filter(question_id=question_id, void__isnull=True, withdrawn=False).select_related(
        "worker"
    )
    workers = sorted({v.worker_id: v.worker for v in votes}.items())
    return sum(
        worker_quality_check(worker=worker, dataset_id=question.dataset_id, settings=settings)
        for _, worker in workers
    )


def _qualification_settle(row: WorkerScore, attempt_answers, settings: GoldSettings) -> None:
    """An attempt is a fixed set of `qualification_size` items, each answered once: scored when complete. A
    failed attempt waits `qualification_cooldown` seconds; the next one is served fresh items."""
    results = list(attempt_answers.values_list("correct", flat=True))
    if len(results) < settings.qualification_size:
        return
    if sum(results) >= settings.qualification_pass:
        row.qualified = True
    else:
        row.qualification_failed += 1
        row.qualification_retry_at = timezone.now() + timedelta(seconds=settings.qualification_cooldown)


def drawer_verdict_record(box_id: int, accepted: bool) -> None:
    """Box pipeline hook: the quality question accepted or rejected a drawn box. The verdict counts for or
    against its drawer, scored and blocked by the same rule as gold answers (with the drawing threshold).
    Runs in the transaction that applied the verdict."""
    box = Box.objects.select_related("image").filter(pk=box_id).first()
    if box is None or box.drawn_by_id is None:
        return
    dataset_id = box.image.dataset_id
    _, created = DrawVerdict.objects.get_or_create(
        box=box, defaults={"worker_id": box.drawn_by_id, "dataset_id": dataset_id, "accepted": accepted}
    )
    if not created:
        return  # the first verdict on a box is the one that counts
    settings = GoldSettings.for_dataset(dataset_id)
    verdicts = DrawVerdict.objects.filter(worker_id=box.drawn_by_id, dataset_id=dataset_id)
    row, s = _score_row(
        worker=box.drawn_by,
        dataset_id=dataset_id,
        kind=ScoreKind.BOX_DRAW,
        correct=verdicts.filter(accepted=True).count(),
        answered=verdicts.count(),
        settings=settings,
        rule=settings.draw_rule,
    )
    row.save()
    if s.blocked and not Block.objects.filter(worker_id=box.drawn_by_id, dataset_id=dataset_id).exists():
        worker_block(worker=box.drawn_by, dataset_id=dataset_id, kind=ScoreKind.BOX_DRAW, score=s)


def worker_block(
    *, worker, dataset_id: int, kind: str, score: scoring.Score, llr: float | None = None
) -> Block:
    """Block the worker from every task of the dataset (`kind` names the evidence; `llr` the sequential test's
    statistic when it blocked), void their votes on
    questions of every kind there and repair the questions they touched (open ones keep collecting votes from
    others, decided ones are re-checked and reopened if undecided), and end the leases they hold there."""
    with transaction.atomic():
        votes = list(
            Vote.objects.filter(worker=worker, question__dataset_id=dataset_id).values_list("pk", flat=True)
        )
        leased = _leases_of(worker, dataset_id)
        # The platform's lock order (docs/architecture.md): every task this block changes, the voided votes'
        # and the ended leases', in id order before any question or labeling. Ending a lease after the repair
        # had moved a labeling on took its task last, and deadlocked with a submit on that task waiting for
        # the labeling (the soak: three a minute once the sequential test blocked spammers).
        held = queue.tasks_lock(
            {lease.task_id for lease in leased}
            | set(Vote.objects.filter(pk__in=votes).values_list("question__task_id", flat=True))
        )
        report = votes_void(votes=votes, reason=f"worker {worker.pk} blocked in dataset {dataset_id}")
        block = Block.objects.create(
            worker=worker,
            dataset_id=dataset_id,
            kind=kind,
            answered=score.answered,
            correct=score.correct,
            p_below=score.p_below,
            llr=llr,
            repair=asdict(report),
        )
        # Leases they still hold there end now, so an answer they were about to send counts for nothing (the
        # answer being submitted, if this runs inside a submit, is stored already and not a lease any more).
        # Read again under the task locks, which every writer of an assignment takes first: a lease submitted
        # meanwhile is not one any more.
        late = []
        for lease in _leases_of(worker, dataset_id):
            if lease.task_id in held:
                queue.assignment_release(assignment=lease)
            else:
                late.append(lease.pk)
        if late:
            # Leased while this block ran (their lease request did not see the uncommitted block): their tasks
            # are not locked, and taking them now, after the repair moved labelings on, deadlocked with a
            # submit on such a task waiting for a labeling (the soak, once in four runs). They end once the
            # block is committed, when no lease is handed to the worker here any more.
            transaction.on_commit(
                lambda: late_leases_end(worker=worker, dataset_id=dataset_id, assignments=late)
            )
        payments_decide(dataset_id=dataset_id, worker=worker)
        return block


def late_leases_end(*, worker, dataset_id: int, assignments: list[int]) -> int:
    """End leases a blocked worker took while their block was being written, each in a transaction of its own
    (its task locked first, as every lease's end); one they submitted meanwhile has its vote voided as the block
    voided the others. Returns how many votes were voided."""
    for lease in Assignment.objects.filter(pk__in=assignments, state=AssignmentState.LEASED).order_by(
        "task_id"
    ):
        try:
            queue.assignment_release(assignment=lease)
        except queue.QueueError:
            pass  # submitted or expired since the read: a submitted one's vote is voided below
    votes = Vote.objects.filter(assignment_id__in=assignments, void__isnull=True).values_list("pk", flat=True)
    return votes_void(votes=list(votes), reason=f"worker {worker.pk} blocked in dataset {dataset_id}").voided


def _leases_of(worker, dataset_id: int) -> list[Assignment]:
    return list(
        Assignment.objects.filter(
            worker=worker, task__dataset_id=dataset_id, state=AssignmentState.LEASED
        ).order_by("task_id")
    )


def worker_block_set(*, worker, dataset_id: int, blocked: bool, reason: str, actor) -> BlockAction:
    """An organizer blocks or unblocks a worker in a dataset, with a reason. A block ends the leases they hold
    there (like the evidence's block) but keeps their votes: it says nothing about their answers' quality.
    Unblocking lifts only an organizer's block, never the gold evidence's."""
    if not reason.strip():
        raise ValueError("give a reason")
    with transaction.atomic():
        action = BlockAction.objects.create(
            worker=worker, dataset_id=dataset_id, blocked=blocked, reason=reason.strip(), actor=actor
        )
        if blocked:
            for lease in _leases_of(worker, dataset_id):
                queue.assignment_release(assignment=lease)
        return action


def _recommend(
    assignment: Assignment, gold: GoldAnswer | None, kind: str | None, blocked, bonus
) -> tuple[str, str]:
    if gold is not None and not gold.correct and assignment.worker_id in blocked:
        return Recommendation.REJECT, "wrong answer to a gold item; the worker was blocked in this dataset"
    if (assignment.worker_id, kind) in bonus:
        return Recommendation.BONUS, "gold accuracy's lower bound is above the bonus line"
    return Recommendation.APPROVE, "approved"  # never rejected for a non-gold answer


def payments_decide(*, dataset_id: int, worker=None) -> int:
    """Add a PaymentDecision for every submitted assignment of the dataset (of one worker) whose
    recommendation is new or changed. Returns the number of rows added."""
    settings = GoldSettings.for_dataset(dataset_id)
    with transaction.atomic():
        assignments = Assignment.objects.filter(task__dataset_id=dataset_id, state=AssignmentState.SUBMITTED)
        if worker is not None:
            assignments = assignments.filter(worker=worker)
        assignments = list(assignments.select_related("task__question", "gold__serving__item").order_by("id"))
        blocked = set(Block.objects.filter(dataset_id=dataset_id).values_list("worker_id", flat=True))
        bonus = set()
        for row in WorkerScore.objects.filter(dataset_id=dataset_id):
            s = scoring.score(row.correct, row.answered, settings.prior, settings.rule)
            if row.worker_id not in blocked and scoring.bonus_due(s, settings.bonus_lower):
                bonus.add((row.worker_id, row.kind))
        current: dict[int, str] = {}
        for p in PaymentDecision.objects.filter(assignment__in=assignments).order_by("id"):
            current[p.assignment_id] = p.recommendation
        new = []
        for a in assignments:
            gold = getattr(a, "gold", None)
            question = getattr(a.task, "question", None)
            kind = gold.kind if gold is not None else (question.kind if question is not None else None)
            rec, reason = _recommend(a, gold, kind, blocked, bonus)
            if current.get(a.pk) != rec:
                new.append(
                    PaymentDecision(
                        assignment=a,
                        worker_id=a.worker_id,
                        dataset_id=dataset_id,
                        recommendation=rec,
                        reason=reason,
                    )
                )
        PaymentDecision.objects.bulk_create(new)
        return len(new)
