"""The download pool: at most `concurrency` downloads at once, one at a time per host with the politeness
interval between starts, transient failures retried with back-off, permanent ones not."""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from types import SimpleNamespace

from candidates import fetch
from candidates.fetch import Fetched, FetchFailed, FetchLimits, PoolSettings, fetch_many
from tests.waiting import GENEROUS_SECONDS

LIMITS = FetchLimits(max_bytes=1000)


class Recorder:
    """A fetcher that takes a little while and records how many calls overlap, overall and per host."""

    def __init__(self, seconds: float = 0.03, fail: dict[str, list[bool]] | None = None, meet: int = 0):
        self.seconds = seconds
        # The first `meet` calls wait for each other: they can only all get here if the pool runs them at once,
        # however slowly a loaded machine schedules its threads (a bound, not a budget: it fails only if not).
        self.meeting = threading.Barrier(meet, timeout=GENEROUS_SECONDS) if meet else None
        self.lock = threading.Lock()
        self.running: Counter[str] = Counter()
        self.peak_total = 0
        self.peak_host: Counter[str] = Counter()
        self.starts: dict[str, list[float]] = defaultdict(list)
        self.calls: Counter[str] = Counter()
        self.fail = fail or {}  # url -> transient flags of the failures to raise first

    def __call__(self, url: str, limits: FetchLimits) -> Fetched:
        host = url.split("/")[2]
        with self.lock:
            self.calls[url] += 1
            self.starts[host].append(time.monotonic())
            self.running[host] += 1
            self.peak_total = max(self.peak_total, sum(self.running.values()))
            self.peak_host[host] = max(self.peak_host[host], self.running[host])
            plan = self.fail.get(url, [])
            failure = plan.pop(0) if plan else None
            meets = self.meeting is not None and sum(self.calls.values()) <= self.meeting.parties
        try:
            if meets:
                self.meeting.wait()
            time.sleep(self.seconds)
            if failure is not None:
                raise FetchFailed("HTTP 503" if failure else "HTTP 404", transient=failure)
            return Fetched(url=url, final_url=url, content_type="image/jpeg", data=b"x")
        finally:
            with self.lock:
                self.running[host] -= 1


def urls(hosts: int, per_host: int) -> list[str]:
    return [f"http://h{h}.example/{i}.jpg" for i in range(per_host) for h in range(hosts)]


def test_concurrency_is_bounded_and_each_host_gets_one_request_at_a_time():
    recorder = Recorder(meet=3)  # three downloads do run at once
    outcomes = list(
        fetch_many(urls(6, 4), LIMITS, PoolSettings(concurrency=3, host_interval=0), fetcher=recorder)
    )
    assert len(outcomes) == 24 and all(o.fetched for o in outcomes)
    assert recorder.peak_total == 3
    assert max(recorder.peak_host.values()) == 1


def test_requests_to_one_host_start_at_least_the_interval_apart(monkeypatch):
    # The starts as the pool's gate stamps them, just before it calls the fetcher under the host's lock: a
    # stamp taken inside the fetcher would come late by however long a loaded machine held that thread back.
    starts: dict[str, list[float]] = defaultdict(list)
    before = fetch._HostGate.before

    def stamped(gate, host):
        before(gate, host)
        starts[host].append(gate.last[host])

    monkeypatch.setattr(fetch._HostGate, "before", stamped)
    recorder = Recorder(seconds=0.0)
    list(fetch_many(urls(2, 4), LIMITS, PoolSettings(concurrency=4, host_interval=0.05), fetcher=recorder))
    assert len(starts) == 2 and sum(recorder.calls.values()) == 8
    for stamps in starts.values():
        gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
        assert len(gaps) == 3 and min(gaps) >= 0.05, gaps


def test_transient_failures_are_retried_with_backoff_and_permanent_ones_are_not(monkeypatch):
    flaky, gone, hopeless = (
        "http://a.example/flaky.jpg",
        "http://b.example/gone.jpg",
        "http://c.example/busy.jpg",
    )
    pauses: list[float] = []  # what the pool slept between attempts, not how long the run took

    def sleep(seconds: float) -> None:
        pauses.append(seconds)
        time.sleep(seconds)

    monkeypatch.setattr(fetch, "time", SimpleNamespace(monotonic=time.monotonic, sleep=sleep))
    recorder = Recorder(seconds=0.0, fail={flaky: [True], gone: [False], hopeless: [True, True, True]})
    outcomes = {
        o.url: o
        for o in fetch_many(
            [flaky, gone, hopeless],
            LIMITS,
            PoolSettings(concurrency=3, attempts=3, backoff=0.05),
            fetcher=recorder,
        )
    }
    assert outcomes[flaky].fetched is not None and outcomes[flaky].attempts == 2
    assert outcomes[gone].fetched is None and outcomes[gone].error == "HTTP 404" and recorder.calls[gone] == 1
    assert outcomes[hopeless].error == "HTTP 503 (after 3 attempts)" and recorder.calls[hopeless] == 3
    # The flaky one waited 0.05 s; the hopeless one 0.05 s, then 0.1 s; the permanent failure not at all.
    assert sorted(pauses) == [0.05, 0.05, 0.1]
