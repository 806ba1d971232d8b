"""Plain vote tasks: "does this image show CONCEPT?" asked of several workers, queued per image.

This module says which images to ask; the consensus engine, a layer above, asks them: each becomes a consensus
question with a fixed majority of `answers_wanted` votes as its rule (`consensus/binary_vote.py`, registered
here with `register_backend` in its `AppConfig.ready`), served as a `binary_vote` task.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction

from .models import Dataset, Image, Task, TaskState

KIND = "binary_vote"

# Asks the votes: (dataset=, concept=, images=, answers_wanted=, priority=) -> the tasks created.
VoteBackend = Callable[..., list[Task]]
_backend: VoteBackend | None = None


def register_backend(backend: VoteBackend) -> None:
    global _backend
    _backend = backend


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
        fresh = [image for image in image_qs.order_by("id") if image.pk not in already]
        if _backend is None:
            raise LookupError("no backend asks plain votes (is the consensus app installed?)")
        return _backend(
            dataset=dataset, concept=concept, images=fresh, answers_wanted=answers_wanted, priority=priority
        )
