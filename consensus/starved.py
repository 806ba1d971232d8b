"""Questions nobody left can answer. An open question whose task every worker of its dataset's crowd has
answered, is barred from (the box's drawer), or may not take (blocked, not qualified for the kind, resting after
a failed qualification) gets no further vote however long it waits: a small crowd, a crowd thinned by blocking,
or a vote cap above the number of eligible workers. The sweep settles such a question with the votes it has, as
at the vote cap (`stopping.settle_at_cap`: accepted or rejected only where the decided set keeps its guarantee),
or sends it to review, so no image's labelling stops for good on one question.

"Nobody can take it" is asked of the queue itself (`annotation.queue.tasks_reachable`: the lease statement's
condition under every registered lease policy's terms), for every worker who has worked in the dataset; a question is only considered once its task
has gone untouched for `STARVED_AFTER_SECONDS` (a crowd that is merely offline is given time to come back, and
a worker who just joined is given time to qualify). Settling follows `services.question_settle`."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings as django_settings
from django.db import transaction
from django.utils import timezone

from annotation import counters, queue
from annotation.models import Task

from .models import ConsensusSettings, Question, QuestionState
from .services import COUNTED, _estimate, _finalize, question_settle
from .stopping import Decision


@dataclass
class StarvedReport:
    examined: int = 0
    settled: dict[str, int] = field(default_factory=dict)  # decision value -> questions

    @property
    def total(self) -> int:
        return sum(self.settled.values())


def starved_after() -> timedelta:
    return timedelta(seconds=django_settings.CROWDLABEL["STARVED_AFTER_SECONDS"])


def _idle_questions(dataset_id: int | None, idle_since: datetime):
    """Open questions whose task is waiting in the queue (`queue.waiting`) and untouched since `idle_since`."""
    tasks = Task.objects.filter(queue.waiting(), updated_at__lte=idle_since)
    qs = Question.objects.filter(state=QuestionState.OPEN, task__in=tasks)
    if dataset_id is not None:
        qs = qs.filter(dataset_id=dataset_id)
    return qs


def questions_starved(*, dataset_id: int | None = None, idle_seconds: float | None = None) -> list[Question]:
    """The open questions of the dataset (every dataset when None) that no worker of their dataset's crowd
    can take now (`queue.tasks_reachable`: the lease's own condition), among those idle for `idle_seconds`
    (the setting when None)."""
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
        task = Task.objects.select_for_update().get(pk=question.task_id)
        question = Question.objects.select_for_update().get(pk=question.pk)
        if question.state != QuestionState.OPEN or not queue.task_waiting(task):
            return None
        settings = ConsensusSettings.for_dataset(question.dataset_id)
        if question.rule:
            # A count rule has no P to settle on: undecided with nobody left to ask is its REVIEW (which the
            # plain vote's rule closes unanswered).
            decision, estimate = Decision.REVIEW, COUNTED
        else:
            estimate = _estimate(question, settings)
            p = float("nan") if estimate.p is None or question.n_votes == 0 else estimate.p
            decision = question_settle(question, p, settings)
        _finalize(question, task, decision, estimate, settings)
        queue.task_save(task, ["state", "result"])
        return decision


def starved_settle(*, dataset_id: int | None = None, idle_seconds: float | None = None) -> StarvedReport:
    """Find the starved questions and settle each (one transaction per question)."""
    found = questions_starved(dataset_id=dataset_id, idle_seconds=idle_seconds)
    report = StarvedReport(examined=len(found))
    for question in found:
        decision = question_settle_starved(question)
        if decision is not None:
            report.settled[decision.value] = report.settled.get(decision.value, 0) + 1
    return report
