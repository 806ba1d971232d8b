"""The outside audit's gold probe as a test (issue 35, item 3), on PostgreSQL over 300 leases: a worker who tells
embedded gold from real questions by what a lease shows or by how long the server takes would answer only
the gold carefully and spam the rest.

- The id rule: "an id in the lease more than 20 below the newest id I leased" (gold tasks are made with the
  gold items and stay in the pool while real tasks are consumed) must flag gold no better than chance: leases
  carry no task id and their image is named by an opaque reference (annotation/imagerefs.py).
- Latency: the area under the ROC curve of lease and of submit wall time, gold against real, must stay near
  0.5 either way: a gold answer is scored after the response (gold.services, through the outbox), so the app
  publishes to a real broker here as in production; the scoring messages are run afterwards, as a worker
  would, and every gold answer must then be scored.

Gold and real leases interleave, so the machine's load falls on both alike; only ranks are compared.
"""

from __future__ import annotations

import time
import uuid

import numpy as np
import pytest

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
MAX_AUC = 0.7  # either way: gold faster than real tells it apart as well as slower
MAX_RULE_EDGE = 0.15  # the id rule's true-positive rate minus its false-positive rate


def auc(positive, negative) -> float:
    """P(a positive sample exceeds a negative one), ties counting half: the Mann-Whitney U over n1 n2."""
    x, y = np.asarray(positive, float), np.asarray(negative, float)
    greater = (x[:, None] > y[None, :]).sum()
    ties = (x[:, None] == y[None, :]).sum()
    return float((greater + ties / 2) / (len(x) * len(y)))


def test_auc_reads_separation_either_way():
    rng = np.random.default_rng(3)
    same = auc(rng.normal(0, 1, 300), rng.normal(0, 1, 300))
    assert abs(same - 0.5) < 0.1
    assert auc([2, 3, 4], [0, 1]) == 1.0 and auc([0, 1], [2, 3]) == 0.0 and auc([1], [1]) == 0.5


def visible_ids(body: dict) -> list[int]:
    """The ids a worker can read in a lease besides the assignment's own (task and image ids, if any)."""
    task = body["task"]
    ids = [task["id"]] if "id" in task else []
    image = task.get("image") or {}
    if isinstance(image.get("id"), int):
        ids.append(image["id"])
    return ids


def test_the_id_rule_and_the_latency_tell_gold_no_better_than_chance_over_300_leases():
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
            lease_time, submit_time, flagged = probe(clients, gold_answer)
    finally:
        forget_keys(prefix)
    # What a Celery worker does with the messages: every gold answer is scored, once.
    waiting = list(Message.objects.filter(task_name=SCORE_TASK).values_list("pk", flat=True))
    for message_id in waiting:
        assert message_run(message_id, delivery="probe") == "done"
    n_gold, n_real = len(lease_time[True]), len(lease_time[False])
    assert len(waiting) == n_gold
    assert GoldAnswer.objects.filter(dataset=dataset).count() == n_gold

    edge = flagged[True] / n_gold - flagged[False] / n_real
    lease_auc = auc(lease_time[True], lease_time[False])
    submit_auc = auc(submit_time[True], submit_time[False])
    medians = {
        name: [round(float(np.median(sample[g])) * 1000, 2) for g in (True, False)]
        for name, sample in (("lease", lease_time), ("submit", submit_time))
    }
    print(
        f"gold {n_gold}, real {n_real}; id rule flagged gold {flagged[True]}, real {flagged[False]} "
        f"(edge {edge:.3f}); AUC lease {lease_auc:.3f}, submit {submit_auc:.3f}; medians gold/real ms {medians}"
    )
    assert n_gold + n_real == WORKERS * LEASES_PER_WORKER and n_gold >= 30, n_gold
    assert edge <= MAX_RULE_EDGE, flagged
    assert max(lease_auc, 1 - lease_auc) < MAX_AUC, (lease_auc, medians)
    assert max(submit_auc, 1 - submit_auc) < MAX_AUC, (submit_auc, medians)


def probe(clients, gold_answer: dict[int, bool]):
    """The audit's probe: each worker in turn leases and answers (gold rightly, real at random), timing both."""
    rng = np.random.default_rng(35)
    lease_time = {True: [], False: []}
    submit_time = {True: [], False: []}
    flagged = {True: 0, False: 0}
    newest = dict.fromkeys(range(len(clients)), 0)
    for _ in range(LEASES_PER_WORKER):
        for n, client in enumerate(clients):
            started = time.perf_counter()
            response = client.get("/api/v1/tasks/next")
            spent = time.perf_counter() - started
            assert response.status_code == 200, response.content
            body = response.json()
            task = Assignment.objects.select_related("task").get(pk=body["id"]).task
            is_gold = task.pool == GOLD_POOL
            lease_time[is_gold].append(spent)
            ids = visible_ids(body)
            flagged[is_gold] += any(i < newest[n] - ID_GAP for i in ids)
            newest[n] = max([newest[n], *ids])
            answer = gold_answer[task.pk] if is_gold else bool(rng.random() < 0.5)
            started = time.perf_counter()
            submitted = client.post(
                f"/api/v1/assignments/{body['id']}/submit",
                {"answer": {"answer": answer}},
                format="json",
                HTTP_IDEMPOTENCY_KEY=f"k{body['id']}",
            )
            spent = time.perf_counter() - started
            assert submitted.status_code == 201, submitted.content
            submit_time[is_gold].append(spent)
    return lease_time, submit_time, flagged
