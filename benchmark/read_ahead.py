"""Reading the next rows while these are used: a database cursor's rows, with the next batches fetched by a
thread of their own while the caller works on the batch in hand. Pure (no framework): the Django side decides
when to use it (`selectors.rows_streamed`).

Why: an export waits on PostgreSQL for every batch it fetches (the server scans, sorts and sends the rows) and
PostgreSQL waits on the export while it writes the batch; with the fetch in a thread the two overlap on two
cores (the thread waits on the socket with Python's lock released). The caller's thread reads the first batch
itself, so a cursor is opened on the caller's connection (and transaction) before the thread goes on with it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from itertools import islice
from typing import TypeVar

T = TypeVar("T")

_DONE = object()  # the reader's last word: the rows are exhausted


def read_ahead(rows: Iterator[T], batch: int, depth: int = 2) -> Iterator[T]:
    """`rows` in their order, with up to `depth` batches of `batch` rows read ahead by a thread. At most
    (depth + 2) x batch rows are held at once. An exception raised while reading is raised here, at the row
    it stopped before; a caller that stops early has the thread stop after the batch it is reading."""
    first = list(islice(rows, batch))
    yield from first
    if len(first) < batch:
        return
    ready: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def hand_over(item) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            while not stop.is_set():
                chunk = list(islice(rows, batch))
                if chunk and not hand_over(chunk):
                    return
                if len(chunk) < batch:
                    hand_over(_DONE)
                    return
        except BaseException as exc:  # noqa: BLE001  (raised again in the caller's thread)
            hand_over(exc)

    reader = threading.Thread(target=read, name="read-ahead", daemon=True)
    reader.start()
    try:
        while True:
            item = ready.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield from item
    finally:
        stop.set()
        reader.join()
