"""Blocking a spammer takes every task it changes before any labeling (the lock order of docs/architecture.md):
the voided votes' tasks and the tasks of the leases it ends, in id order. Ending a lease after the repair had
rewound a labeling took that task last, and deadlocked with a submit on the task waiting for the labeling (the
60 s soak: three deadlocks a minute once the sequential test blocked spammers in Algorithm 1's datasets)."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation import queue
from annotation.models import Assignment, AssignmentState, Task, TaskState
from consensus.models import Question, QuestionState, Vote
from gold import scoring
from gold.services import worker_block
from multilabel.labeling import labeling_start
from multilabel.models import ImageLabeling, LabelingStatus
from tests import factories

from .test_labeling import decide

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

TASK_IDS = re.compile(r'"annotation_task"\."id" (?:= (\d+)|IN \(([\d, ]+)\))')


def task_ids(sql: str) -> set[int]:
    """The task ids a lock statement names (`= N` or `IN (...)`)."""
    found: set[int] = set()
    for one, many in TASK_IDS.findall(sql):
        found |= {int(x) for x in (one or many).split(",") if x.strip()}
    return found


LOCKS = re.compile(r'FROM "(annotation_task|hierarchy_imagelabeling)".*FOR NO KEY UPDATE')


def test_a_block_locks_the_tasks_it_changes_before_any_labeling_and_ends_the_spammers_lease(
    dataset, tiny_hierarchy
):
    image = factories.ImageFactory(dataset=dataset)
    labeling_start(dataset=dataset, hierarchy=tiny_hierarchy, images=[image])
    labeling = ImageLabeling.objects.get()
    spammer = factories.user_with_roles("spammer", ("workers",)).worker
    animal = Question.objects.get(concept__wnid="q:animal")
    Vote.objects.create(question=animal, worker=spammer, answer=False)
    animal.no_count = 1
    animal.save(update_fields=["no_count"])
    decide(animal, "reject")  # the spammer's "no" pruned the animals; the labeling moved on
    Task.objects.filter(pk=animal.task_id).update(state=TaskState.DONE)  # as the engine closes a decided one
    labeling.refresh_from_db()
    assert labeling.pending_node == "q:vehicle"
    lease = queue.task_lease(worker=spammer, dataset_id=dataset.pk)
    assert lease is not None and lease.assignment.task_id != animal.task_id, (
        "they hold another question's task"
    )

    with CaptureQueriesContext(connection) as ctx:
        worker_block(worker=spammer, dataset_id=dataset.pk, kind="image_verify", score=scoring.score(0, 10))

    locks = [(m.group(1), task_ids(q["sql"])) for q in ctx.captured_queries if (m := LOCKS.search(q["sql"]))]
    tables = [table for table, _ in locks]
    assert "annotation_task" in tables and "hierarchy_imagelabeling" in tables, tables
    first_labeling = tables.index("hierarchy_imagelabeling")
    held = set().union(*(ids for table, ids in locks[:first_labeling] if table == "annotation_task"))
    later = set().union(*(ids for table, ids in locks[first_labeling:] if table == "annotation_task"))
    assert later <= held, f"tasks {sorted(later - held)} locked after a labeling: {locks}"
    assert lease.assignment.task_id in held
    assert Assignment.objects.get(pk=lease.assignment.pk).state == AssignmentState.RELEASED
    animal.refresh_from_db()
    labeling.refresh_from_db()
    assert animal.state == QuestionState.OPEN, "the spammer's vote decided it; voided, it asks again"
    assert labeling.status == LabelingStatus.RUNNING and labeling.pending_node == "q:animal"
