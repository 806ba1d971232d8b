"""The `question` task kind: how the queue serves a consensus question to a worker and hands back the vote.

The worker sees the question's wording, the concept (name and gloss) and the image, and for box questions the
box judged and the accepted boxes; never the votes so far, P, the question's role (calibration or production) or anything gold-related.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from annotation import kinds
from annotation.models import Assignment, Box, Task
from annotation.questions import shown_box_ids
from annotation.queue import TaskChange, sqlrows
from hierarchy.graph import graph_for
from hierarchy.models import QuestionNode

from . import engine, voiding
from .creation import TASK_KIND
from .models import Question, QuestionKind

BOX_KINDS = (QuestionKind.BOX_QUALITY, QuestionKind.BOX_COVERAGE)
# The payload key of a task that is not a consensus question but shows boxes like one (gold box questions).
SHOWN_BOXES_KEY = "shown_box_ids"


def on_submit(assignment: Assignment, writes: sqlrows.Writes) -> TaskChange:
    """The vote goes to consensus; what its stopping rule decided about the task comes back as the change, and
    what it changes on the question (a verdict's rows with it) goes with the submit's writes."""
    voted = engine.vote_apply(
        task=assignment.task,
        worker=assignment.worker,
        answer=bool(assignment.answer["answer"]),
        assignment=assignment,
        writes=writes,
    )
    return voted.change


def on_withdraw(assignment: Assignment) -> TaskChange:
    """The worker takes the answer back in the undo window: the vote leaves its open question's tally (and a
    count-rule task's running tally in its result)."""
    question = voiding.vote_withdraw(assignment=assignment)
    if question.rule:
        return TaskChange(result={"yes": question.yes_count, "no": question.no_count})
    return TaskChange()


def on_submit_adopting(
    adopt: Callable[[Assignment], Question],
) -> Callable[[Assignment, sqlrows.Writes], TaskChange]:
    """The submit of a count-rule task kind (`binary_vote`, the fixed `box_quality`/`box_coverage`,
    `hierarchy_question`): the same vote path as `question` tasks. A task of such a kind queued before its
    kind's tasks were consensus questions has none: `adopt` creates it (the task's earlier answers become its
    votes),
    then the vote goes in. The one engine decides both."""

    def submit(assignment: Assignment, writes: sqlrows.Writes) -> TaskChange:
        try:
            return on_submit(assignment, writes)
        except Question.DoesNotExist:
            # Raised by the question lookup, before anything was written.
            adopt(assignment)
            return on_submit(assignment, writes)

    submit.engine = on_submit  # type: ignore[attr-defined]  # what it routes to (tests/consensus/test_one_engine.py)
    return submit


def public_payload(task: Task) -> dict[str, Any]:
    concept = task.concept
    payload: dict[str, Any] = {
        "question": task.payload.get("question", ""),
        "concept": {"wnid": concept.wnid, "name": concept.name, "gloss": concept.gloss} if concept else None,
    }
    box = task.box
    if box is not None:
        payload["box"] = _coords(box)
    if task.topic not in BOX_KINDS and SHOWN_BOXES_KEY not in task.payload:
        # The topic is the question's kind (consensus/migrations/0006 for older tasks): a question that shows
        # no boxes needs nothing more, real or gold, so neither reads the question row on the hot path; only a
        # hierarchy question looks up the examples of its inner node (worked out from the concept alone).
        examples = _examples(task) if task.topic == QuestionKind.HIERARCHY else []
        if examples:
            payload["examples"] = examples
        return payload
    question = getattr(task, "question", None)
    if question is not None:
        shows_boxes = question.kind in BOX_KINDS
        shown = shown_box_ids(question.subject)
    else:
        # A task serving no consensus question (a gold item, served by a higher app) names the boxes it shows
        # in its payload, so its public payload has the same keys as a real question of its kind.
        shows_boxes = SHOWN_BOXES_KEY in task.payload
        shown = [int(b) for b in task.payload.get(SHOWN_BOXES_KEY, ())]
    examples = [] if shows_boxes else _examples(task)
    if examples:
        payload["examples"] = examples
    if shows_boxes:
        # Box questions show the accepted boxes too: coverage judges them all, and a quality verifier can see
        # a box that repeats one of them.
        found = {b.pk: b for b in Box.objects.filter(pk__in=shown)}
        payload["boxes"] = [_coords(found[b]) for b in shown if b in found]
    return payload


def _examples(task: Task) -> list[str]:
    """What counts as a yes to a question about a hierarchy's inner node ("Is there ANY animal?"): names of
    leaves below it ("such as dog, domestic cat"), as the hierarchy's own `hierarchy_question` kind shows them.
    Worked out from the task's concept alone (the newest hierarchy with it as an inner node), so a gold item
    about the same concept shows the very same list."""
    if task.concept_id is None:
        return []
    node = (
        QuestionNode.objects.filter(concept_id=task.concept_id, leaf=False)
        .order_by("-hierarchy_id")
        .values_list("hierarchy_id", "node_id")
        .first()
    )
    if node is None:
        return []
    return graph_for(node[0]).examples(node[1])


def _coords(box: Box) -> dict[str, float]:
    return {"x1": box.x1, "y1": box.y1, "x2": box.x2, "y2": box.y2}


KIND_SPEC = kinds.register(
    kinds.TaskKind(
        name=TASK_KIND,
        title="Yes/no question about an image",
        clean_answer=kinds.yes_no_answer,
        on_submit=on_submit,
        public_payload=public_payload,
        on_withdraw=on_withdraw,
    )
)
