"""The outside audit's gold probe as a test (issue 35, item 3), on PostgreSQL over 300 leases: a worker who tells
embedded gold from real questions by what a lease shows or by how long the server takes would answer only
the gold carefully and spam the rest.

- The id rule: "an id in the lease more than 20 below the newest id I leased" (gold tasks are made with the
  gold items and stay in the pool while real tasks are consumed) must flag gold no better than chance: leases
  carry no task id and their image is named by an opaque reference (annotation/imagerefs.py).
- Latency, by its cause: a gold lease and a gold submit must run the same statements, in kind and number, as a
  real one (the lease with gold in the dataset looks up both sides; a gold answer is recorded with the same
  round trips as a vote and scored after the response, through the outbox, so the app publishes to a real broker
  here as in production). The scoring messages are run afterwards, as a worker would, and every gold answer must
  then be scored. Wall times are not asserted here (they are noise on a shared machine: this test's area under
  the ROC curve once read 0.735 for a two-round-trip difference and 0.6 for none); `bench/gold_probe.py`
  measures them through gunicorn and prints the AUC of lease and submit times, gold against real.
"""

from __future__ import annotations

import uuid
from collections import Counter

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Assignment
from consensus import creation
from consensus.models import ConsensusSettings, QuestionKind
from gold.models import GoldAnswer, GoldItem, GoldSettings
from gold.services import SCORE_TASK
from gold.serving import GOLD_POOL
from outbox.models import Message
from outbox.services import message_run
from tests import factories
from tests.config.test_celery_worker import BROKER_URL, forget_keys
from tests.conftest import client_for
from tests.faults.conftest import celery_pointed_at
from tests.gold.conftest import gold_for, install_table, make_images, make_workers

pytestmark = [pytest.mark.postgres, pytest.mark.broker, pytest.mark.django_db(transaction=True)]

WORKERS, LEASES_PER_WORKER = 12, 25  # 300 leases
ID_GAP = 20
MAX_RULE_EDGE = 0.15  # the id rule's true-positive rate minus its false-positive rate


def shape(statements: list[str]) -> tuple[str, ...]:
    """What a request ran, statement by statement, as its leading keyword (BEGIN, SELECT, INSERT, WITH, ...)."""
    return tuple(sql.lstrip().split(None, 1)[0].upper() for sql in statements)


def test_shape_reads_the_leading_keyword_of_each_statement():
    assert shape(["BEGIN", ' SELECT a."id" FROM x', "with w0 AS (UPDATE t SET a = 1) SELECT 1"]) == (
        "BEGIN",
        "SELECT",
        "WITH",
    )


def visible_ids(body: dict) -> list[int]:
    """The ids a worker can read in a lease besides the assignment's own (task and image ids, if any)."""
    task = body["task"]
    ids = [task["id"]] if "id" in task else []
    image = task.get("image") or {}
    if isinstance(image.get("id"), int):
        ids.append(image["id"])
    return ids


def test_the_id_rule_tells_gold_no_better_than_chance_and_gold_runs_what_real_work_runs_over_300_leases():
    dataset = factories.DatasetFactory(name="probe")
    concept = factories.ConceptFactory(wnid="n02123045", name="tabby cat", gloss="a cat with a striped coat")
    ConsensusSettings.objects.update_or_create(
        dataset=dataset,
        defaults={"vote_cap": 15, "calibration_votes": 5, "target_precision": 0.999, "estimator": "dynamic"},
    )
    install_table(concept)
    images = make_images(dataset, 500)
    # Gold made before the real questions, as the audit found it: old gold among newer real tasks.
    gold_for(dataset, concept, images[:80])
    creation.questions_create(
        dataset=dataset,
        kind=QuestionKind.IMAGE_VERIFY,
        concept=concept,
        targets=[creation.Target(image=i) for i in images[80:]],
        calibration=[False] * 420,
    )
    GoldSettings.objects.create(dataset=dataset, rate=0.2, qualification_size=0, qualification_pass=0)
    gold_answer = dict(GoldItem.objects.values_list("task_id", "answer"))

    workers = make_workers(WORKERS, prefix="probe")
    clients = [client_for(w.user) for w in workers]
    for client in clients:  # warm each client's path once (imports, caches) outside the sample
        client.get("/api/v1/me")
    prefix = f"crowdlabel-probe-{uuid.uuid4().hex[:12]}:"
    try:
        with celery_pointed_at(BROKER_URL, prefix):
            leases, submits, flagged = probe(clients, gold_answer)
    finally:
        forget_keys(prefix)
    # What a Celery worker does with the messages: every gold answer is scored, once.
    waiting = list(Message.objects.filter(task_name=SCORE_TASK).values_list("pk", flat=True))
    for message_id in waiting:
        assert message_run(message_id, delivery="probe") == "done"
    n_gold, n_real = len(leases[True]), len(leases[False])
    assert len(waiting) == n_gold
    assert GoldAnswer.objects.filter(dataset=dataset).count() == n_gold

    edge = flagged[True] / n_gold - flagged[False] / n_real
    seen = {
        (name, gold): Counter(sample[gold])
        for name, sample in (("lease", leases), ("submit", submits))
        for gold in (True, False)
    }
    print(f"gold {n_gold}, real {n_real}; id rule flagged gold {flagged[True]}, real {flagged[False]}")
    for (name, gold), shapes in seen.items():
        for statements, count in shapes.most_common():
            print(f"{name} {'gold' if gold else 'real'} x{count}: {len(statements)} {' '.join(statements)}")
    assert n_gold + n_real == WORKERS * LEASES_PER_WORKER and n_gold >= 30, n_gold
    assert edge <= MAX_RULE_EDGE, flagged
    # Every gold lease runs what some real lease runs, and every gold submit what a real answer that leaves its
    # question open runs (the common case: a deciding vote writes one more row, the decision's labeling read).
    assert set(seen["lease", True]) <= set(seen["lease", False]), seen
    asking_more = seen["submit", False].most_common(1)[0][0]
    assert set(seen["submit", True]) == {asking_more}, seen


def probe(clients, gold_answer: dict[int, bool]):
    """The audit's probe: each worker in turn leases and answers (gold rightly, real at random); the statements of
    every lease and submit, as `shape`s, by whether the task was gold."""
    rng = np.random.default_rng(35)
    leases: dict[bool, list[tuple[str, ...]]] = {True: [], False: []}
    submits: dict[bool, list[tuple[str, ...]]] = {True: [], False: []}
    flagged = {True: 0, False: 0}
    newest = dict.fromkeys(range(len(clients)), 0)
    for _ in range(LEASES_PER_WORKER):
        for n, client in enumerate(clients):
            with CaptureQueriesContext(connection) as leased:
                response = client.get("/api/v1/tasks/next")
            assert response.status_code == 200, response.content
            body = response.json()
            task = Assignment.objects.select_related("task").get(pk=body["id"]).task
            is_gold = task.pool == GOLD_POOL
            leases[is_gold].append(shape([q["sql"] for q in leased.captured_queries]))
            ids = visible_ids(body)
            flagged[is_gold] += any(i < newest[n] - ID_GAP for i in ids)
            newest[n] = max([newest[n], *ids])
            answer = gold_answer[task.pk] if is_gold else bool(rng.random() < 0.5)
            with CaptureQueriesContext(connection) as submitted:
                response = client.post(
                    f"/api/v1/assignments/{body['id']}/submit",
                    {"answer": {"answer": answer}},
                    format="json",
                    HTTP_IDEMPOTENCY_KEY=f"k{body['id']}",
                )
            assert response.status_code == 201, response.content
            submits[is_gold].append(shape([q["sql"] for q in submitted.captured_queries]))
    return leases, submits, flagged
