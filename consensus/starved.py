"""Questions nobody left can answer. An open question whose task every worker of its dataset's crowd has
answered, is barred from (the box's drawer), or may not take (blocked, not qualified for the kind, resting after
a failed qualification) gets no further vote however long it waits: a small crowd, a crowd thinned by blocking,
or a vote cap above the number of eligible workers. The sweep settles such a question with the votes it has, as
at the vote cap (`stopping.settle_at_cap`: accepted or rejected only where the decided set keeps its guarantee),
or sends it to review, so no image's labelling stops for good on one question.

"Nobody can take it" is asked of the queue itself (`annotation.queue.tasks_reachable`: the lease statement's
condition under every registered lease policy's terms), for every worker who has worked in the dataset; a question is only considered once its task
has gone untouched for `STARVED_AFTER_SECONDS` (a crowd that is merely offline is given time to come back, and
a worker who just joined is given time to qualify). Settling follows `engine.question_settle`."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings as django_settings
from django.db import connections, transaction
from django.db.models import Q
from django.utils import timezone

from annotation import counters, queue
from annotation.models import Task, TaskState

from . import statements
from .creation import questions_serve
from .engine import question_decide, question_finalize, question_settle, table_coming, task_change_apply
from .estimates import COUNTED, estimate_for, table_in_use
from .models import ConsensusSettings, Question, QuestionRole, QuestionState
from .reliability_fits import fit_with_standing
from .standing_lease import WITHHELD_KIND
from .stopping import Decision


@dataclass
class StarvedReport:
    examined: int = 0
    settled: dict[str, int] = field(default_factory=dict)  # decision value -> questions
    table_waits_ended: int = 0  # questions held for a table that cannot come, served or decided

    @property
    def total(self) -> int:
        return sum(self.settled.values())


def starved_after() -> timedelta:
    return timedelta(seconds=django_settings.CROWDLABEL["STARVED_AFTER_SECONDS"])


def _idle_questions(dataset_id: int | None, idle_since: datetime):
    """Open questions whose task is waiting in the queue (`queue.waiting`) and untouched since `idle_since`.
    Questions about an excluded image are not starved: they wait until it is included again
    (organize/image_exclusion.py), and the sweep must not settle them meanwhile."""
    tasks = Task.objects.filter(queue.waiting(), updated_at__lte=idle_since)
    qs = Question.objects.filter(state=QuestionState.OPEN, task__in=tasks).exclude(
        task__image__excluded_at__isnull=False
    )
    if dataset_id is not None:
        qs = qs.filter(dataset_id=dataset_id)
    return qs


def questions_starved(*, dataset_id: int | None = None, idle_seconds: float | None = None) -> list[Question]:
    """The open questions of the dataset (every dataset when None) that no worker of their dataset's crowd
    can take now (`queue.tasks_reachable`: the lease's own condition), among those idle for `idle_seconds`
    (the setting when None). The kind-wide fit of the kind the good-standing lease policy withholds is brought
    up to date first, once: the policy reads the workers' standing from this process's kept fit, and the
    sweep's process (a Celery worker, a command) submits no vote that would keep one
    (consensus/standing_lease.py)."""
    fit_with_standing(str(WITHHELD_KIND))
    idle = starved_after() if idle_seconds is None else timedelta(seconds=idle_seconds)
    candidates = list(_idle_questions(dataset_id, timezone.now() - idle).order_by("id"))
    by_dataset: dict[int, list[Question]] = {}
    for question in candidates:
        by_dataset.setdefault(question.dataset_id, []).append(question)
    starved: list[Question] = []
    for ds, questions in sorted(by_dataset.items()):
        takeable = queue.tasks_reachable(dataset_id=ds, task_ids={q.task_id for q in questions})
        starved += [q for q in questions if q.task_id not in takeable]
    return starved


def question_settle_starved(question: Question) -> Decision | None:
    """Decide a starved question with the votes it has, as at the vote cap: accept or reject where the decided
    set keeps the dataset's guarantee (and the pipeline's stricter bar, e.g. a leaf's), else review. Locks the
    task, then the question (the queue's order); returns None when the question moved on meanwhile."""
    with transaction.atomic(), counters.held():
        task = Task.objects.select_for_update(no_key=True).get(pk=question.task_id)
        question = Question.objects.select_for_update(no_key=True).get(pk=question.pk)
        if question.state != QuestionState.OPEN or not queue.task_waiting(task):
            return None
        settings = ConsensusSettings.for_dataset(question.dataset_id)
        if question.rule:
            # A count rule has no P to settle on: undecided with nobody left to ask is its REVIEW (which the
            # plain vote's rule closes unanswered).
            decision, estimate = Decision.REVIEW, COUNTED
        else:
            estimate = estimate_for(question, settings)
            p = float("nan") if estimate.p is None or question.n_votes == 0 else estimate.p
            decision = question_settle(question, p, settings)
        task_change_apply(task, question_finalize(question, decision, estimate))
        queue.task_save(task, ["state", "result"])
        return decision


def starved_settle(*, dataset_id: int | None = None, idle_seconds: float | None = None) -> StarvedReport:
    """Find the starved questions and settle each (one transaction per question), then release the questions
    held for a calibration table that can no longer come (`table_waits_end`)."""
    found = questions_starved(dataset_id=dataset_id, idle_seconds=idle_seconds)
    report = StarvedReport(examined=len(found))
    for question in found:
        decision = question_settle_starved(question)
        if decision is not None:
            report.settled[decision.value] = report.settled.get(decision.value, 0) + 1
    report.table_waits_ended = table_waits_end(dataset_id=dataset_id)
    return report


def table_waits_end(*, dataset_id: int | None = None) -> int:
    """Questions held for their (kind, concept)'s calibration table when that table can no longer come (its
    batch lost a question nobody could answer, settled short of its calibration votes): production questions
    waiting unserved are served (decided by the fallbacks of `estimate_for`, as a rare concept's are), and paused
    calibration questions are decided or asked on (`question_decide`). Such questions are open, but no task of
    theirs is in the queue, so no starved check sees them: an image's labelling stopped on them for good.
    Returns how many were served, decided or reopened."""
    held = Question.objects.filter(
        Q(state=QuestionState.WAITING)
        | Q(state=QuestionState.OPEN, role=QuestionRole.CALIBRATION, task__state=TaskState.DONE)
    )
    if dataset_id is not None:
        held = held.filter(dataset_id=dataset_id)
    groups = sorted(set(held.values_list("dataset_id", "kind", "concept_id")))
    moved = 0
    for ds, kind, concept_id in groups:
        settings = ConsensusSettings.for_dataset(ds)
        probe = Question(dataset_id=ds, kind=kind, concept_id=concept_id)
        if table_coming(probe, settings) or table_in_use(kind, concept_id, settings.calibration_min):
            continue  # its table is on the way (or here: the rebuild that serves them is due)
        moved += _waiting_serve(ds, kind, concept_id, settings)
        for question in held.filter(
            dataset_id=ds, kind=kind, concept_id=concept_id, state=QuestionState.OPEN
        ):
            if question.n_votes >= question.min_votes:
                decided = question_decide(question) != Decision.ASK_MORE
                moved += decided or Task.objects.filter(pk=question.task_id, state=TaskState.OPEN).exists()
    return moved


def _waiting_serve(dataset_id: int, kind: str, concept_id: int, settings: ConsensusSettings) -> int:
    """Serve the (dataset, kind, concept) questions still waiting, as production; under the concept's share lock
    (as `questions_create` decides that a question waits), re-checking that no table is coming."""
    with transaction.atomic(), counters.held():
        statements.concept_share_lock(connections[Question.objects.db], concept_id)
        probe = Question(dataset_id=dataset_id, kind=kind, concept_id=concept_id)
        if table_coming(probe, settings):
            return 0
        waiting = list(
            Question.objects.select_for_update(no_key=True)
            .filter(dataset_id=dataset_id, kind=kind, concept_id=concept_id, state=QuestionState.WAITING)
            .order_by("id")
        )
        for question in waiting:
            question.state = QuestionState.OPEN
        questions_serve(waiting, None, settings, 0)
        return len(waiting)
