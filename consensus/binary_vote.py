"""The plain vote as consensus questions: "does this image show CONCEPT?" asked of a fixed number of workers
(`vote_tasks_create` below queues them on the images not asked yet), each a `binary_vote` question carrying a fixed
majority of `answers_wanted` as its rule (`consensus.stopping.MajorityPolicy`, early stop), decided by the one
engine (`consensus.engine.vote_apply`). A tie at the cap closes the question unanswered (the rule's
``on_review: close``), not sent to a person. The verdict becomes a final label (`consensus.final_labels`,
source `binary_vote`). The task kind stays `binary_vote`: the page, HITs and bundles its workers know.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from annotation import kinds
from annotation.models import Assignment, Dataset, Image, Task, TaskState
from annotation.vote_tasks import KIND, question_text
from hierarchy.models import Concept

from . import question_kind
from .count_questions import count_questions_create, question_adopt
from .creation import Target
from .models import Question, QuestionKind
from .stopping import MajorityPolicy, rule_of


def rule_for(answers_wanted: int) -> dict:
    return rule_of(MajorityPolicy(answers_wanted), on_review="close")


def votes_ask(
    *, dataset: Dataset, concept: Concept, images: list[Image], answers_wanted: int, priority: int
) -> list[Task]:
    """One plain-vote question (and its `binary_vote` task) per image. An image asked again after its earlier
    task was cancelled gets the next round."""
    rounds: dict[int, int] = {}
    for image_id in Question.objects.filter(
        dataset=dataset, kind=QuestionKind.BINARY_VOTE, concept=concept, image__in=images
    ).values_list("image_id", flat=True):
        rounds[image_id] = rounds.get(image_id, 0) + 1
    text = question_text(concept.name)
    created = count_questions_create(
        dataset=dataset,
        kind=QuestionKind.BINARY_VOTE,
        concept=concept,
        targets=[Target(image=image, round=rounds.get(image.pk, 0)) for image in images],
        text=text,
        priority=priority,
        rule=rule_for(answers_wanted),
        task_kind=KIND,
    )
    return [q.task for q in created]


def vote_tasks_create(
    *,
    dataset: Dataset,
    concept,
    images: list[Image] | None = None,
    answers_wanted: int = 3,
    priority: int = 0,
) -> list[Task]:
    """Queue one binary vote task per image (all of the dataset's images by default). Images that already
    have an open or done vote task for the concept are skipped, so calling this twice queues nothing twice."""
    if answers_wanted < 1:
        raise ValueError("answers_wanted must be at least 1")
    with transaction.atomic():
        image_qs = (
            dataset.images.all() if images is None else Image.objects.filter(pk__in=[i.pk for i in images])
        )
        already = set(
            Task.objects.filter(kind=KIND, dataset=dataset, concept=concept)
            .exclude(state=TaskState.CANCELLED)
            .values_list("image_id", flat=True)
        )
        fresh = [image for image in image_qs.order_by("id") if image.pk not in already]
        return votes_ask(
            dataset=dataset, concept=concept, images=fresh, answers_wanted=answers_wanted, priority=priority
        )


def adopt(assignment: Assignment) -> Question:
    """A `binary_vote` task queued without a question (before plain votes were consensus questions)."""
    task = assignment.task
    earlier = Question.objects.filter(
        dataset_id=task.dataset_id,
        kind=QuestionKind.BINARY_VOTE,
        concept_id=task.concept_id,
        image=task.image_id,
    ).count()
    return question_adopt(
        task=task,
        current=assignment,
        kind=QuestionKind.BINARY_VOTE,
        rule=rule_for(task.answers_wanted),
        round=earlier,
    )


def public_payload(task: Task) -> dict[str, Any]:
    concept = task.concept
    return {
        "question": task.payload.get("question") or question_text(concept.name if concept else "this"),
        "concept": {"wnid": concept.wnid, "name": concept.name, "gloss": concept.gloss} if concept else None,
    }


KIND_SPEC = kinds.register(
    kinds.TaskKind(
        name=KIND,
        title="Yes/no question about an image",
        clean_answer=kinds.yes_no_answer,
        on_submit=question_kind.on_submit_adopting(adopt),
        public_payload=public_payload,
        on_withdraw=question_kind.on_withdraw,  # an answer taken back leaves its question's tally
    )
)
