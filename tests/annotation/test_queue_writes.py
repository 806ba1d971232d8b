"""Only the queue writes Task and Assignment rows (issue 14, part 3), gold included.

Two checks: an AST scan of the project's code for ORM writes to those tables (manager writes, related-manager
writes, `.save()` on a task or assignment) outside `annotation/queue/`, with a test of the scanner itself; and a
runtime check that every INSERT, UPDATE or DELETE on the two tables during a gold-and-consensus scenario was
issued from a frame inside `annotation/queue/`.
"""

from __future__ import annotations

import ast
import re
import traceback
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from annotation import queue
from annotation.models import Assignment, Task
from consensus.models import QuestionKind
from gold.models import GoldAnswer, GoldSettings
from gold.services import worker_block_set
from tests import factories
from tests.gold.conftest import gold_for, make_images, make_workers, production_questions, small_qualification

ROOT = Path(__file__).resolve().parents[2]
QUEUE_PACKAGE = ROOT / "annotation" / "queue"
SCANNED_APPS = (
    "annotation",
    "benchmark",
    "consensus",
    "crowd",
    "frontend",
    "gold",
    "hierarchy",
    "organize",
    "outbox",
    "review",
    "simulator",
    "config",
    "bench",
)
MODELS = {"Task", "Assignment"}
RELATED = {"tasks", "assignments"}  # reverse managers: dataset.tasks, task.assignments, worker.assignments
WRITES = {"create", "bulk_create", "bulk_update", "update", "get_or_create", "update_or_create", "delete"}
SAVED_NAMES = re.compile(r"^(task|assignment|lease|current|gold_task)s?$")


def _chain_reaches_rows(node: ast.AST) -> bool:
    """Whether an attribute/call chain starts from `Task.objects`, `Assignment.objects` or a reverse manager."""
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            if node.attr == "objects" and isinstance(node.value, ast.Name) and node.value.id in MODELS:
                return True
            if node.attr in RELATED:
                return True
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return False


def row_writes(source: str, filename: str = "<source>") -> list[str]:
    """`file:line: call` for every write to Task or Assignment rows the source makes through the ORM."""
    found = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        attr, receiver = node.func.attr, node.func.value
        if attr in WRITES and _chain_reaches_rows(receiver):
            found.append(f"{filename}:{node.lineno}: .{attr}()")
        elif attr == "save":
            constructed = (
                isinstance(receiver, ast.Call)
                and isinstance(receiver.func, ast.Name)
                and receiver.func.id in MODELS
            )
            named = isinstance(receiver, ast.Name) and SAVED_NAMES.match(receiver.id)
            if constructed or named:
                found.append(f"{filename}:{node.lineno}: .save()")
    return found


def project_files() -> list[Path]:
    files = []
    for app in SCANNED_APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if QUEUE_PACKAGE in path.parents or "migrations" in path.parts:
                continue
            files.append(path)
    return files


def test_the_scanner_finds_every_shape_of_row_write():
    source = """
Task.objects.create(kind="x")
Task.objects.bulk_create(tasks)
Task.objects.filter(pk=1).update(state="done")
Assignment.objects.filter(task_id=1).select_related("task")[:3].delete()
Assignment(task=t).save()
task.save(update_fields=["state"])
dataset.tasks.update(priority=1)
task.assignments.create(worker=w)
Task(kind="x")
Task.objects.filter(state="open").count()
question.save()
"""
    lines = [int(hit.split(":")[1]) for hit in row_writes(source)]
    assert lines == [2, 3, 4, 5, 6, 7, 8, 9]


def test_no_code_outside_the_queue_package_writes_tasks_or_assignments():
    files = project_files()
    assert len(files) > 100, "the scan found the project's modules"
    hits = [hit for path in files for hit in row_writes(path.read_text(), str(path.relative_to(ROOT)))]
    assert hits == [], "write tasks and assignments through annotation.queue:\n" + "\n".join(hits)


def innermost_project_frame() -> Path:
    """The file of the innermost frame of the project's own code (not Django's, not this test's): the code
    that asked for the write. A write made by a hook the queue calls is the hook's, not the queue's."""
    venv = (ROOT / ".venv").resolve()
    for frame in reversed(traceback.extract_stack()):
        path = Path(frame.filename).resolve()
        if (
            path.is_relative_to(ROOT)
            and not path.is_relative_to(venv)
            and not path.is_relative_to(ROOT / "tests")
        ):
            return path
    return ROOT


class RowWriteWatch:
    """Records, for every INSERT, UPDATE or DELETE on the task or assignment table (CTEs included), the table and
    whether a frame of the queue package issued it."""

    def __init__(self):
        names = "|".join(re.escape(m._meta.db_table) for m in (Task, Assignment))
        self.pattern = re.compile(rf'\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+"?({names})"?(?![\w])', re.I)
        self.writes: list[tuple[str, bool]] = []

    def __call__(self, execute, sql, params, many, context):
        tables = set(self.pattern.findall(sql))
        if tables:
            from_queue = innermost_project_frame().is_relative_to(QUEUE_PACKAGE)
            for table in sorted(tables):
                self.writes.append((f"{sql.split()[0].upper()} {table}", from_queue))
        return execute(sql, params, many, context)


@pytest.mark.django_db
def test_every_task_and_assignment_write_of_a_gold_and_consensus_scenario_comes_from_the_queue(
    dataset, organizer
):
    concept = factories.ConceptFactory(wnid="n02123045", name="tabby cat", gloss="a cat with a striped coat")
    images = make_images(dataset, 30)
    watch = RowWriteWatch()
    with connection.execute_wrapper(watch):
        production_questions(dataset, concept, images[:10])  # consensus creates question tasks
        gold = gold_for(dataset, concept, images[10:])  # gold items and their pool tasks
        small_qualification(dataset, qualification_size=4, qualification_pass=4)
        answers = {g.task_id: g.answer for g in gold}
        workers = make_workers(3)
        for w in workers:
            for n in range(10):
                a = queue.task_lease_next(worker=w, kinds_wanted=["question"])
                if a is None:
                    break
                if n == 5:
                    queue.assignment_release(assignment=a)  # skipped
                    continue
                queue.assignment_submit(
                    assignment=a, answer={"answer": answers.get(a.task_id, True)}, idempotency_key=f"k{a.pk}"
                )
        GoldSettings.objects.filter(dataset=dataset).update(rate=0.5)
        leased = queue.task_lease_next(worker=workers[0], kinds_wanted=["question"])
        assert leased is not None
        # An organizer's block ends the worker's leases; expiry returns the rest.
        worker_block_set(
            worker=workers[0], dataset_id=dataset.pk, blocked=True, reason="test", actor=organizer
        )
        queue.task_lease_next(worker=workers[1], kinds_wanted=["question"])
        queue.leases_expire(now=timezone.now() + timedelta(days=1))
    assert GoldAnswer.objects.count() >= 12, "the scenario answered gold"
    assert Task.objects.filter(question__kind=QuestionKind.IMAGE_VERIFY).exists()
    kinds_of_writes = {w for w, _ in watch.writes}
    assert len(watch.writes) > 50 and len(kinds_of_writes) >= 4, kinds_of_writes
    outside = [w for w, from_queue in watch.writes if not from_queue]
    assert outside == [], outside
