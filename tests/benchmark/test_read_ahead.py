"""Rows read ahead by a thread (`benchmark.read_ahead`): every row once and in order whatever the count, the first
batch read by the caller's thread, an error raised at the row it stopped before, and a caller that stops early
leaves no thread reading on and no more than the batches ahead read."""

from __future__ import annotations

import threading

import pytest

from benchmark.read_ahead import read_ahead


class Rows:
    """A source of numbered rows that records which thread read each one."""

    def __init__(self, n: int, fail_at: int | None = None):
        self.n, self.fail_at = n, fail_at
        self.readers: list[str] = []

    def __iter__(self):
        for k in range(self.n):
            if k == self.fail_at:
                raise RuntimeError(f"connection lost at row {k}")
            self.readers.append(threading.current_thread().name)
            yield k


@pytest.mark.parametrize("n", [0, 1, 6, 7, 8, 21, 100])
def test_every_row_comes_once_and_in_order(n):
    assert list(read_ahead(iter(Rows(n)), batch=7)) == list(range(n))


def test_the_callers_thread_reads_the_first_batch_and_a_thread_the_rest():
    rows = Rows(30)
    assert list(read_ahead(iter(rows), batch=10)) == list(range(30))
    caller = threading.current_thread().name
    assert rows.readers[:10] == [caller] * 10
    assert set(rows.readers[10:]) == {"read-ahead"}


def test_an_error_while_reading_is_raised_after_the_rows_before_it():
    got = []
    with pytest.raises(RuntimeError, match="connection lost at row 23"):
        for k in read_ahead(iter(Rows(100, fail_at=23)), batch=5):
            got.append(k)
    assert got == list(range(20))  # the batch the error cut short is not handed out


def test_a_caller_that_stops_early_stops_the_thread_and_reads_no_further_than_the_batches_ahead():
    before = {t.name for t in threading.enumerate()}
    rows = Rows(10_000)
    stream = read_ahead(iter(rows), batch=10, depth=2)
    taken = [next(stream) for _ in range(15)]
    stream.close()
    assert taken == list(range(15))
    assert "read-ahead" not in {t.name for t in threading.enumerate()} - before
    assert len(rows.readers) <= 10 * (2 + 3)  # the first batch, the one in hand, two queued, one being read
