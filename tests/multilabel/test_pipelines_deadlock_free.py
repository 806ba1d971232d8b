"""Algorithm 1 and the box pipeline worked at once by 16 threads on one dataset, on PostgreSQL: no submit ever
deadlocks (issue 32). Every answer goes through the queue's submit, so each transaction takes what a real
submit takes: the task, the question, the labelings, concept rows, tallies and counters."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.db import OperationalError, connection

from annotation import queue
from boxes import services as boxes
from hierarchy.fixture import parse_fixture
from hierarchy.graph import graph_for
from hierarchy.services import hierarchy_load
from multilabel.labeling import labeling_start
from multilabel.models import ImageLabeling, LabelingStatus
from tests import factories
from tests.consensus.conftest import make_images, make_workers, small_settings
from tests.threads import in_thread

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

THREADS = 16
IMAGES = 24
KINDS = ["question", "box_draw", "hierarchy_question"]
# The threads work until both pipelines have shown what the test checks (or the queue runs dry); the budget only
# bounds a run that never gets there, so a slow or loaded machine takes longer instead of failing.
BUDGET_SECONDS = 300.0
CHECK_EVERY = 25


def _leaves_under(dag, node_id: str) -> set[str]:
    kids = dag.children[node_id]
    if not kids:
        return {node_id}
    return set().union(*(_leaves_under(dag, k) for k in kids))


def _deadlocks_recorded() -> int:
    with connection.cursor() as c:
        c.execute("SELECT pg_stat_clear_snapshot()")
        c.execute("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
        return c.fetchone()[0]


def test_algorithm1_and_boxes_from_16_threads_never_deadlock():
    data = json.loads((Path(settings.BASE_DIR) / "fixtures/hierarchies/voc20.json").read_text())
    hierarchy = hierarchy_load(parse_fixture(data)).hierarchy
    graph = graph_for(hierarchy)
    workers = make_workers(THREADS)
    dataset = factories.DatasetFactory()
    small_settings(dataset, calibration_votes=3, vote_cap=6)
    images = make_images(dataset, IMAGES)
    rng = np.random.default_rng(32)
    leaves = sorted(n for n in graph.nodes if graph.nodes[n].leaf)
    present = {img.pk: set(rng.choice(leaves, size=2, replace=False)) for img in images}
    under = {
        node.concept_id: _leaves_under(graph.dag, node_id)
        for node_id, node in graph.nodes.items()
        if node.concept_id is not None
    }
    labeling_start(dataset=dataset, hierarchy=hierarchy)
    # The box pipeline starts at once on the images' present classes (as a finished labeling starts it, and
    # does again, idempotently, when Algorithm 1 finds them), so both pipelines run side by side from the start.
    for img in images:
        boxes.on_leaves_present(
            image_id=img.pk, concept_ids=[graph.nodes[leaf].concept_id for leaf in sorted(present[img.pk])]
        )
    deadlocks_before = _deadlocks_recorded()

    def answer(task):
        if task.kind == "box_draw":
            if boxes.accepted_boxes(task.image_id, task.concept_id):
                return {"none_left": True}
            return {"box": [4, 4, 44, 36]}
        if task.topic in ("box_quality", "box_coverage"):
            return {"answer": True}
        return {"answer": bool(under[task.concept_id] & present[task.image_id])}

    outcomes: Counter = Counter()
    failures: list[str] = []
    answered: Counter = Counter()
    lock = threading.Lock()
    deadline = time.monotonic() + BUDGET_SECONDS
    shown = threading.Event()

    def both_pipelines_shown() -> bool:
        kinds_answered = answered["hierarchy"] and answered["image_verify"]
        boxes_answered = answered["box_draw"] and answered["box_quality"]
        return bool(kinds_answered and boxes_answered) and (
            ImageLabeling.objects.filter(status=LabelingStatus.DONE).exists()
        )

    start = threading.Barrier(THREADS)

    @in_thread
    def work(worker) -> None:
        start.wait()
        idle = 0
        submits = 0
        while time.monotonic() < deadline and idle < 20 and not shown.is_set():
            leased = queue.task_lease_next(worker=worker, kinds_wanted=KINDS, dataset_id=dataset.pk)
            if leased is None:
                idle += 1
                time.sleep(0.1)
                continue
            idle = 0
            try:
                queue.assignment_submit(
                    assignment=leased.pk,
                    answer=answer(leased.task),
                    idempotency_key=uuid.uuid4().hex,
                    worker=worker,
                )
                outcome = "stored"
                with lock:
                    answered[leased.task.topic or leased.task.kind] += 1
                submits += 1
                if submits % CHECK_EVERY == 0 and both_pipelines_shown():
                    shown.set()
            except OperationalError as exc:
                outcome = getattr(exc.__cause__, "sqlstate", None) or "operational"
                with lock:
                    failures.append(str(exc))
            except queue.QueueError as exc:
                outcome = exc.code
            with lock:
                outcomes[outcome] += 1

    threads = [threading.Thread(target=work, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert connection.vendor == "postgresql"
    assert outcomes["40P01"] == 0, f"submits failed with a deadlock: {dict(outcomes)}\n" + "\n".join(failures)
    assert set(outcomes) == {"stored"}, dict(outcomes)
    assert _deadlocks_recorded() == deadlocks_before
    # Both pipelines really ran side by side: Algorithm 1 finished images, and box jobs drew boxes and asked
    # about them.
    assert ImageLabeling.objects.filter(status=LabelingStatus.DONE).exists(), dict(answered)
    assert answered["hierarchy"] and answered["image_verify"], dict(answered)
    assert answered["box_draw"] and answered["box_quality"], dict(answered)
