"""A new dataset's first steps, ticked off from the data (the dataset page's "Getting started" card): a new
dataset's page showed five empty bars and empty tables with no next step.

Upload images -> choose classes -> add gold questions -> start a pipeline -> bring workers. Gold is optional
(the page says so) but without it nobody's answers are checked against a known truth. A step is done when its
rows exist, whichever way they were made (the pages, the API or a command)."""

from __future__ import annotations

from django.urls import reverse

from annotation.models import Assignment, AuditEntry, BoxJob, Dataset
from consensus.models import Question
from crowd.models import Invitation, InvitationRole, StudyLink
from gold.models import GoldItem
from multilabel.models import ImageLabeling

PIPELINE_STARTS = ("verification.start", "multilabel.start", "boxes.start", "vote_tasks.start")


def dataset_checklist(dataset: Dataset) -> list[dict]:
    """The steps in order, each {"key", "label", "done", "optional", "href"}."""
    pk = dataset.pk
    started = (
        AuditEntry.objects.filter(dataset=dataset, action__in=PIPELINE_STARTS).exists()
        or Question.objects.filter(dataset=dataset).exists()
        or BoxJob.objects.filter(dataset=dataset).exists()
        or ImageLabeling.objects.filter(dataset=dataset).exists()
    )
    crowd = (
        Invitation.objects.filter(dataset=dataset, role=InvitationRole.WORKER).exists()
        or StudyLink.objects.filter(dataset=dataset).exists()
        or Assignment.objects.filter(task__dataset=dataset).exists()
    )
    steps = [
        ("images", "Upload images", dataset.images.exists(), False, "organize-images"),
        ("classes", "Choose the classes", dataset.concepts.exists(), False, "organize-classes"),
        (
            "gold",
            "Add gold questions (optional: answers you know, to check workers)",
            GoldItem.objects.filter(dataset=dataset).exists(),
            True,
            "organize-settings",
        ),  # fmt: skip
        ("start", "Start a pipeline (verification, multi-label questions or boxing)", started, False, None),
        (
            "crowd",
            "Bring workers: invite a team, or publish a study link or MTurk HITs",
            crowd,
            False,
            "organize-people",
        ),  # fmt: skip
    ]
    return [
        {
            "key": key,
            "label": label,
            "done": done,
            "optional": optional,
            "href": reverse(name, args=[pk]) if name else "#pipelines",
        }
        for key, label, done, optional, name in steps
    ]
