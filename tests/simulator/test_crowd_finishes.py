"""A concurrent simulated crowd works until nobody can take anything (issue 32): a thread whose workers find
nothing for now waits while the others work, since their answers may open tasks only its workers can take; and
a lease whose answer was lost is resumed from the worker's held leases, as the worker page does after a reload.
Driven against a small fake of the queue (no platform), so the end condition alone is tested."""

from __future__ import annotations

import re
import threading
import time
from types import SimpleNamespace

from simulator import driver
from simulator.transport import Reply


class FakeQueue:
    """Tasks each takeable by some workers (tokens); `opens` maps a task to the task its answer opens, after a
    pause (the platform deciding). `lose_first_lease_of` names a worker whose first lease reaches the queue
    but whose reply is lost with the connection."""

    def __init__(self, tasks, opens=(), lose_first_lease_of=None):
        self.allowed = {t: set(workers) for t, workers in tasks.items()}
        self.hidden = {after for _, after in opens}
        self.opens = dict(opens)
        self.leased: dict[int, str] = {}
        self.done: set[int] = set()
        self.lose = lose_first_lease_of
        self.lock = threading.Lock()

    def call(self, method, path, *, token, params=None, json_body=None, headers=None, **_):
        if method == "GET" and path == "/api/v1/tasks/next":
            with self.lock:
                free = [
                    t
                    for t, who in sorted(self.allowed.items())
                    if token in who and t not in self.leased and t not in self.done and t not in self.hidden
                ]
                if not free:
                    return Reply(204, None)
                self.leased[free[0]] = token
            if token == self.lose:
                self.lose = None
                raise ConnectionResetError("the reply was lost")
            return Reply(200, {"id": free[0], "task": {"kind": "question"}})
        if method == "GET" and path == "/api/v1/assignments/":
            with self.lock:
                held = [t for t, who in self.leased.items() if who == token and t not in self.done]
            return Reply(200, {"results": [{"id": t, "task": {"kind": "question"}} for t in held]})
        task = int(re.match(r"/api/v1/assignments/(\d+)/submit", path).group(1))
        if task in self.opens:
            time.sleep(0.3)
        with self.lock:
            self.done.add(task)
            self.hidden.discard(self.opens.get(task))
        return Reply(201, {})


SCENARIO = SimpleNamespace(kinds=("question",), answer=lambda worker, assignment: ({"answer": True}, 1.0))


def crowd_of(n):
    return SimpleNamespace(workers=[SimpleNamespace(worker_id=i) for i in range(n)])


def run(queue, workers):
    return driver.run_crowd(
        queue, SCENARIO, crowd_of(len(workers)), workers, dataset_id=1, seed=1, concurrency=len(workers)
    )


def test_a_thread_that_found_nothing_yet_waits_for_the_task_another_thread_s_answer_opens(monkeypatch):
    monkeypatch.setattr(driver, "PENDING_POLL_SECONDS", 0.05)
    # Task 1 only w1 can take; its answer opens task 2, which only w0 can take (w1 answered its image, say).
    queue = FakeQueue({1: ["w1"], 2: ["w0"]}, opens=[(1, 2)])
    stats = run(queue, ["w0", "w1"])
    assert queue.done == {1, 2}
    assert stats.tasks_answered == 2


def test_a_lease_whose_reply_was_lost_is_resumed_from_the_held_leases(monkeypatch):
    monkeypatch.setattr(driver, "PENDING_POLL_SECONDS", 0.05)
    monkeypatch.setattr(driver, "SUBMIT_RETRY_PAUSE", 0.0)
    queue = FakeQueue({1: ["w0"], 2: ["w0", "w1"]}, lose_first_lease_of="w0")
    stats = run(queue, ["w0", "w1"])
    assert queue.done == {1, 2}
    assert stats.tasks_answered == 2


class SlowQueue(FakeQueue):
    """Every call takes a moment, as over a network: threads are seldom all between rounds at once."""

    def call(self, method, path, **kwargs):
        time.sleep(0.02)
        return super().call(method, path, **kwargs)


def test_a_crowd_of_many_threads_with_nothing_left_stops_instead_of_polling_for_ever(monkeypatch):
    monkeypatch.setattr(driver, "PENDING_POLL_SECONDS", 0.05)
    queue = SlowQueue({1: ["w0"], 2: ["w3"]})
    workers = [f"w{i}" for i in range(8)]
    result: list = []
    runner = threading.Thread(target=lambda: result.append(run(queue, workers)), daemon=True)
    runner.start()
    runner.join(120)  # a liveness guard, not a timing assertion: the crowd must stop at all
    assert result, "the crowd never stopped"
    assert queue.done == {1, 2}
