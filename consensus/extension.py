"""Caps that adapt before a person is asked (issue 33): an image question still undecided at the dataset's vote
cap asks on, up to its `extension_cap`, offered only to the workers most reliable on its kind, before it is
settled at the cap or sent to review. Hard candidates get more votes, easy ones stop early, as ILSVRC's dynamic
consensus intends; a reviewer is asked only what the crowd's best cannot settle."""

from __future__ import annotations

from annotation import queue
from annotation.models import Task, TaskExclusion

from .estimates import EVIDENCE_KINDS
from .models import ConsensusSettings, Question, Vote
from .reliability_fits import fit_with_standing


def extends(question: Question, settings: ConsensusSettings) -> bool:
    """Whether a question undecided at the vote cap asks on, up to the dataset's `extension_cap`, before it is
    settled or sent to a person (issue 33: a reviewer's minute costs far more than a crowd vote). Image
    questions only: a box question's crowd is narrowed by its drawers already."""
    return (
        not question.rule
        and question.kind in EVIDENCE_KINDS
        and settings.vote_cap <= question.n_votes < settings.extension_cap
    )


def reliable_left(question: Question) -> bool:
    """Whether one of the kind's most reliable workers has not voted on the question yet (True while the kind has
    no fit: nobody is known to be excluded). A question whose most reliable workers have all voted is settled or
    sent to review at once, rather than left open for votes nobody may give until the starved sweep finds it
    (`CROWDLABEL_STARVED_AFTER_SECONDS` later): a crowd of 30 with 11 blocked, under a second cap of 20, sent 65
    questions down that path."""
    fitted = fit_with_standing(question.kind)
    if fitted is None:
        return True
    voted = set(Vote.objects.filter(question_id=question.pk).values_list("worker_id", flat=True))
    return bool(fitted[1].most_reliable() - voted)


def extension_open(question: Question, task: Task, settings: ConsensusSettings) -> None:
    """Called with every vote that leaves a question open; acts on the one that reaches the vote cap when the
    question extends: its task asks for `extension_cap` votes, offered
    only to the most reliable share of the kind's fitted workers (consensus/standing.py, `most_reliable`): the
    others are excluded from the task like a box's drawer from its quality question. Workers the fit has not
    seen yet are not excluded (they stand at the crowd's average). Written at once: the queue's submit saves
    only its own fields of the locked task row."""
    if question.n_votes != settings.vote_cap or not extends(question, settings):
        return
    fitted = fit_with_standing(question.kind)
    queue.tasks_update([task.pk], answers_wanted=settings.extension_cap)
    if fitted is None:
        return
    standing = fitted[1]
    reliable = standing.most_reliable()
    TaskExclusion.objects.bulk_create(
        [
            TaskExclusion(task_id=task.pk, worker_id=int(w))
            for w in standing.worker_ids
            if int(w) not in reliable
        ],
        ignore_conflicts=True,
    )
