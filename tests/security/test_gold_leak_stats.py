"""Gold cannot be told apart from the real questions it hides among, over 1,000 leases (issue 18, item 1).

A worker who could spot gold would answer it carefully and spam the rest. Gold items are ordinary pool tasks
made when the items are added (annotation.queue, gold.serving), so over a thousand leases of 25 workers with
gold mixed in at the dataset's rate this compares what a worker can observe: every field of the lease answer,
the submit answer and the assignment listing; the lease length (`expires_at - leased_at`, exact); where gold
ids fall among real ids; and the lease latency, gold against normal, by a Mann-Whitney U test and a
Kolmogorov-Smirnov test (numpy implementations below, tested on known samples). The server's own time is taken
per request in-process: the CPU time the request cost, which other processes on a shared machine cannot
inflate, is judged at ALPHA; the wall time, which on PostgreSQL also covers the database's work but carries the
machine's noise, is judged at WALL_ALPHA, a level only a gross gap reaches. Gold and normal leases interleave,
and only distributions are compared, never absolute times.
"""

from __future__ import annotations

import json
import math
import time
from datetime import datetime, timedelta

import numpy as np
import pytest
from django.conf import settings

from annotation.models import Task
from consensus import creation
from consensus.models import ConsensusSettings, QuestionKind
from gold.models import GoldItem, GoldSettings
from tests import factories
from tests.conftest import client_for, leased_task
from tests.gold.conftest import gold_for, install_table, make_images, make_workers

WORKERS, LEASES_PER_WORKER = 25, 40  # 1,000 leases
ALPHA = 0.001
WALL_ALPHA = (
    1e-5  # for gross gaps only, like the old gold path's medians (36-44 ms against 17-36 ms, issue 18)
)


def mann_whitney_p(x, y) -> float:
    """Two-sided p-value of the Mann-Whitney U test (normal approximation with tie correction)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n1, n2 = len(x), len(y)
    values = np.concatenate([x, y])
    order = values.argsort(kind="mergesort")
    ranks = np.empty(len(values))
    sorted_values = values[order]
    i = 0
    while i < len(values):  # average ranks over ties
        j = i
        while j + 1 < len(values) and sorted_values[j + 1] == sorted_values[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    u = ranks[:n1].sum() - n1 * (n1 + 1) / 2
    _, counts = np.unique(values, return_counts=True)
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - (counts**3 - counts).sum() / (n * (n - 1)))
    z = (u - n1 * n2 / 2) / math.sqrt(var)
    return math.erfc(abs(z) / math.sqrt(2))


def ks_p(x, y) -> float:
    """Two-sided p-value of the two-sample Kolmogorov-Smirnov test (asymptotic distribution)."""
    x, y = np.sort(np.asarray(x, float)), np.sort(np.asarray(y, float))
    grid = np.concatenate([x, y])
    d = np.abs(
        np.searchsorted(x, grid, side="right") / len(x) - np.searchsorted(y, grid, side="right") / len(y)
    )
    en = math.sqrt(len(x) * len(y) / (len(x) + len(y)))
    lam = (en + 0.12 + 0.11 / en) * d.max()
    p = 2 * sum((-1) ** (k - 1) * math.exp(-2 * k * k * lam * lam) for k in range(1, 101))
    return float(min(1.0, max(0.0, p)))


def test_the_rank_tests_reject_a_shift_and_accept_two_samples_of_one_distribution():
    rng = np.random.default_rng(7)
    same_a, same_b = rng.lognormal(3, 0.4, 200), rng.lognormal(3, 0.4, 800)
    assert mann_whitney_p(same_a, same_b) > ALPHA and ks_p(same_a, same_b) > ALPHA
    slower = rng.lognormal(3 + 0.25, 0.4, 200)  # a quarter slower in the median
    assert mann_whitney_p(slower, same_b) < ALPHA and ks_p(slower, same_b) < ALPHA
    # Known values: identical samples, and two disjoint ones.
    assert mann_whitney_p([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)
    assert ks_p(np.arange(50), np.arange(50) + 100) < 1e-6


def shape(value):
    """The structure of a JSON value: dict keys with their shapes, a list's element shapes, a scalar's type."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        return ["list", *sorted({repr(shape(item)) for item in value})]
    return type(value).__name__


def questions(dataset, concept, images):
    return creation.questions_create(
        dataset=dataset,
        kind=QuestionKind.IMAGE_VERIFY,
        concept=concept,
        targets=[creation.Target(image=i) for i in images],
        calibration=[False] * len(images),
    )


@pytest.mark.django_db
def test_gold_and_normal_leases_agree_on_every_field_id_order_and_latency_over_a_thousand_leases(dataset):
    concept = factories.ConceptFactory(wnid="n02123045", name="tabby cat", gloss="a cat with a striped coat")
    ConsensusSettings.objects.update_or_create(
        dataset=dataset,
        defaults={"vote_cap": 15, "calibration_votes": 5, "target_precision": 0.999, "estimator": "dynamic"},
    )
    install_table(concept)
    images = make_images(dataset, 520)
    # Real questions before and after the gold items are added: gold ids come from the same sequence.
    questions(dataset, concept, images[:40])
    gold_for(dataset, concept, images[40:160])
    questions(dataset, concept, images[160:])
    GoldSettings.objects.create(dataset=dataset, rate=0.2, qualification_size=0, qualification_pass=0)
    gold_tasks = set(GoldItem.objects.values_list("task_id", flat=True))
    gold_answer = dict(GoldItem.objects.values_list("task_id", "answer"))

    rng = np.random.default_rng(18)
    leases, submits, leased_ids = [], [], []
    cpu, wall = {True: [], False: []}, {True: [], False: []}
    newest_at_lease = {True: 0, False: 0}
    for worker in make_workers(WORKERS):
        client = client_for(worker.user)
        for _ in range(LEASES_PER_WORKER):
            newest = Task.objects.filter(dataset=dataset).order_by("-id").values_list("id", flat=True).first()
            started, started_cpu = time.perf_counter(), time.process_time()
            response = client.get("/api/v1/tasks/next")
            spent_cpu, spent = time.process_time() - started_cpu, time.perf_counter() - started
            assert response.status_code == 200, response.content
            body = response.json()
            task_id = leased_task(body).pk
            is_gold = task_id in gold_tasks
            cpu[is_gold].append(spent_cpu)
            wall[is_gold].append(spent)
            newest_at_lease[is_gold] += task_id == newest
            leases.append((is_gold, body))
            leased_ids.append((is_gold, task_id))
            answer = gold_answer[task_id] if is_gold else bool(rng.random() < 0.5)
            submitted = client.post(
                f"/api/v1/assignments/{body['id']}/submit",
                {"answer": {"answer": answer}},
                format="json",
                HTTP_IDEMPOTENCY_KEY=f"k{body['id']}",
            )
            assert submitted.status_code == 201, submitted.content
            submits.append((is_gold, submitted.json()))
        listed = client.get("/api/v1/assignments/?page_size=100").json()["results"]
        assert len(listed) == LEASES_PER_WORKER
        submits.extend((leased_task(a).pk in gold_tasks, a) for a in listed)

    gold = [b for g, b in leases if g]
    normal = [b for g, b in leases if not g]
    assert len(leases) == 1000 and 120 <= len(gold) <= 280, len(gold)

    # Lease length: exactly the configured lease for every lease, gold or not.
    lease = timedelta(seconds=settings.CROWDLABEL["LEASE_SECONDS"])
    for _, body in leases + submits:
        assert datetime.fromisoformat(body["expires_at"]) - datetime.fromisoformat(body["leased_at"]) == lease

    # Every field: the same keys and value types, nested, and the same values where a worker could compare.
    assert {repr(shape(b)) for b in gold} == {repr(shape(b)) for b in normal}
    for key in ("state", "answer", "submitted_at"):
        assert {json.dumps(b[key]) for b in gold} == {json.dumps(b[key]) for b in normal}, key
    seen = {(b["task"]["kind"], b["task"]["title"], json.dumps(b["task"]["payload"])) for b in normal}
    assert {(b["task"]["kind"], b["task"]["title"], json.dumps(b["task"]["payload"])) for b in gold} <= seen
    assert {tuple(sorted(b["task"]["image"])) for b in gold} == {
        tuple(sorted(b["task"]["image"])) for b in normal
    }
    gold_after = [b for g, b in submits if g]
    normal_after = [b for g, b in submits if not g]
    assert {repr(shape(b)) for b in gold_after} == {repr(shape(b)) for b in normal_after}
    assert all("feedback" not in b and "training" not in b for _, b in leases + submits)
    # Nothing on a gold image repeats a real question: gold sits on images without questions of its kind.
    gold_images = {b["task"]["image"]["ref"] for b in gold}
    assert gold_images.isdisjoint({b["task"]["image"]["ref"] for b in normal})

    # Ids: gold ids lie among real ones (made with them, not at lease time) and a gold lease is never the newest
    # task of the dataset, as every gold lease was when gold was made at lease time.
    real_ids = [task_id for g, task_id in leased_ids if not g]
    assert min(real_ids) < min(gold_tasks) and max(gold_tasks) < max(real_ids)
    assert newest_at_lease[True] == 0

    # Latency: one distribution for both.
    found = {}
    for name, sample in (("cpu", cpu), ("wall", wall)):
        medians = [round(float(np.median(sample[g])) * 1000, 2) for g in (True, False)]
        found[name] = (
            medians,
            mann_whitney_p(sample[True], sample[False]),
            ks_p(sample[True], sample[False]),
        )
        print(f"lease {name} time median gold/normal ms: {medians}; p Mann-Whitney, KS: {found[name][1:]}")
    assert min(found["cpu"][1:]) > ALPHA and min(found["wall"][1:]) > WALL_ALPHA, found
