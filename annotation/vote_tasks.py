"""Plain vote tasks: "does this image show CONCEPT?" asked of several workers, queued per image.

This module only queues them (the queue's business); the consensus engine decides them
(`consensus/binary_vote.py`, a fixed majority of `answers_wanted` votes with early stop, a policy of
`consensus/stopping.py`).
"""

from __future__ import annotations

from django.db import transaction

from . import queue
from .models import Dataset, Image, Task, TaskState

KIND = "binary_vote"


def question_text(concept_name: str) -> str:
    article = "an" if concept_name[:1].lower() in "aeiou" else "a"
    return f"Does this image show {article} {concept_name}?"


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
        tasks = [
            Task(
                kind=KIND,
                dataset=dataset,
                image=image,
                concept=concept,
                payload={"question": question_text(concept.name)},
                answers_wanted=answers_wanted,
                priority=priority,
            )
            for image in image_qs.order_by("id")
            if image.pk not in already
        ]
        return queue.tasks_create(tasks, batch_size=1000)
