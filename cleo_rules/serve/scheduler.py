"""The embedding scheduler: a turn's query is encoded ahead of any tenant's ingest.

Every tenant's store encodes with one shared model, and a service's cores are
few: an ingest of a large file encodes thousands of texts, a turn one. Left
to take turns at one lock, a turn waited for a whole ingest batch (seconds).
:class:`EmbedScheduler` runs every encode in one of two lanes:

``query``  the turns' and recalls' queries (and anything else not marked as
           bulk): encoded on the caller's own thread, one at a time, in the
           order they came;
``bulk``   the texts of an ingest (work run under :func:`bulk_lane`): handed
           to one worker thread, which encodes them :data:`SLICE` texts at a
           time, taking the ingests in waiting in turn slice by slice, so two
           tenants ingesting at once progress side by side.

How the lanes share the model depends on the embedder:

* **side by side** (the default ONNX Runtime backend): its session and its
  tokenizer may be called from two threads at once, and each encode computes
  on one thread, so a query runs on one core while an ingest's slice runs on
  another: the query never waits for the slice. The bulk worker also runs at
  the lowest CPU priority (Linux ``nice`` 19, :data:`BULK_NICE`;
  ``$CLEO_EMBED_BULK_NICE`` sets 0 to 19), so when the machine's cores are
  all busy the operating system hands a core to a turn, or to anything else
  the host runs, before an ingest: on a host busy with other work an ingest
  takes longer (``bench/bench_serve.py`` prints by how much);
* **one at a time** (any other embedder, such as the torch reference backend,
  whose tokenizer is not safe to share): a query waiting goes before the next
  slice, so it waits for at most the slice under way.

Either way ingests never take more than one encode's worth of the machine,
whatever the number of tenants ingesting, and a steady stream of queries
delays ingests (they are bounded by the ingest timeout), never the reverse.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy comes with the [memory] extra: a service without memory never loads it
    import numpy as np

log = logging.getLogger("cleo_rules.serve")

__all__ = ["BULK_NICE", "BULK_NICE_ENV", "SLICE", "EmbedScheduler", "bulk_lane", "bulk_nice", "in_bulk_lane"]

#: texts encoded per turn of the bulk lane: the longest a query waits behind an ingest (one at a time) and
#: the grain at which ingests of several tenants take turns
SLICE = 4
#: how much lower the bulk worker's CPU priority is, by default (Linux ``nice`` steps; 0 leaves it alone)
BULK_NICE = 19
#: the environment variable that sets it, 0 to 19
BULK_NICE_ENV = "CLEO_EMBED_BULK_NICE"


def bulk_nice(nice: int | None = None) -> int:
    """The bulk worker's ``nice`` steps: ``nice``, else ``$CLEO_EMBED_BULK_NICE``, else :data:`BULK_NICE`.

    A value that is not a whole number from 0 to 19 raises ``ValueError``
    (given as an argument) or :class:`~cleo_rules.errors.StoreError` (from
    the environment), as the embedder's thread count does.
    """
    if nice is not None:
        if isinstance(nice, bool) or not isinstance(nice, int) or not 0 <= nice <= 19:
            raise ValueError(f"nice must be a whole number from 0 to 19, not {nice!r}")
        return nice
    raw = os.environ.get(BULK_NICE_ENV, "").strip()
    if not raw:
        return BULK_NICE
    if not (raw.isascii() and raw.isdigit() and int(raw) <= 19):
        from ..errors import StoreError

        raise StoreError(f"{BULK_NICE_ENV} must be a whole number from 0 to 19, not {raw[:40]!r}")
    return int(raw)

_lane = threading.local()


@contextlib.contextmanager
def bulk_lane() -> Iterator[None]:
    """Within this block, encodes made on this thread go to the bulk lane (an ingest's)."""
    before = getattr(_lane, "bulk", False)
    _lane.bulk = True
    try:
        yield
    finally:
        _lane.bulk = before


def in_bulk_lane() -> bool:
    """Whether this thread's encodes go to the bulk lane just now."""
    return getattr(_lane, "bulk", False)


class _Job:
    """One bulk call: its texts, how far it has got, and its rows once done (or what failed)."""

    __slots__ = ("texts", "done_up_to", "parts", "error", "finished")

    def __init__(self, texts: list[str]):
        self.texts = texts
        self.done_up_to = 0
        self.parts: list[np.ndarray] = []
        self.error: BaseException | None = None
        self.finished = threading.Event()

    @property
    def complete(self) -> bool:
        return self.error is not None or self.done_up_to >= len(self.texts)


class EmbedScheduler:
    """Encodes in two lanes, queries first (see the module's notes).

    ``encode`` is the embedder's ``encode(list[str]) -> ndarray``;
    ``side_by_side`` says whether it may run on two threads at once.
    ``slice`` texts are encoded per turn of the bulk lane, whose thread runs
    ``nice`` steps below the process's priority when the lanes run side by
    side (Linux only; 0 leaves it alone).
    """

    def __init__(self, encode: Callable[[list[str]], np.ndarray], *, side_by_side: bool, slice: int = SLICE,
                 nice: int | None = None):
        if isinstance(slice, bool) or not isinstance(slice, int) or slice < 1:
            raise ValueError(f"slice must be a positive number of texts, not {slice!r}")
        self._encode = encode
        self.side_by_side = side_by_side
        self.slice = slice
        # one at a time, a query may wait for the slice under way: that slice must not be the last to get a core
        self.nice = bulk_nice(nice) if side_by_side else 0
        self._cond = threading.Condition()
        self._next_ticket = 0  # queries are served in the order of their tickets
        self._serving = 0
        self._query_busy = False
        self._bulk_busy = False
        self._jobs: deque[_Job] = deque()
        self._worker: threading.Thread | None = None
        self._stopping = False
        self.counts = {"queries": 0, "bulk_calls": 0, "slices": 0}

    # -- the query lane -------------------------------------------------------------------------

    def query(self, texts: list[str]) -> np.ndarray:
        """Encode ``texts`` on this thread, after the queries before it (and, one at a time, after the slice
        under way)."""
        with self._cond:
            ticket = self._next_ticket
            self._next_ticket += 1
            while self._serving != ticket or self._query_busy or (self._bulk_busy and not self.side_by_side):
                self._cond.wait()
            self._serving += 1
            self._query_busy = True
            self.counts["queries"] += 1
        try:
            return self._encode(texts)
        finally:
            with self._cond:
                self._query_busy = False
                self._cond.notify_all()

    def _query_waiting(self) -> bool:
        return self._query_busy or self._next_ticket != self._serving

    # -- the bulk lane --------------------------------------------------------------------------

    def bulk(self, texts: list[str]) -> np.ndarray:
        """Encode ``texts`` in the bulk lane, :attr:`slice` at a time; blocks until all are done."""
        texts = list(texts)
        if not texts:
            return self.query(texts)  # nothing to slice: the embedder says what no texts are
        job = _Job(texts)
        with self._cond:
            self._jobs.append(job)
            self.counts["bulk_calls"] += 1
            if self._worker is None:  # the first bulk call, or the first since close()
                self._stopping = False
                self._worker = threading.Thread(target=self._work, name="cleo-embed-bulk", daemon=True)
                self._worker.start()
            self._cond.notify_all()
        job.finished.wait()
        if job.error is not None:
            raise job.error
        if len(job.parts) == 1:
            return job.parts[0]
        import numpy as np

        return np.concatenate(job.parts, axis=0)

    def _work(self) -> None:
        self._lower_priority()
        while True:
            with self._cond:
                while not self._jobs or (not self.side_by_side and self._query_waiting()):
                    if self._stopping and not self._jobs:
                        self._worker = None  # decided with the lock held: a bulk call from now on starts another
                        self._cond.notify_all()
                        return
                    self._cond.wait()
                job = self._jobs.popleft()
                self._bulk_busy = True
            start = job.done_up_to
            piece = job.texts[start:start + self.slice]
            try:
                job.parts.append(self._encode(piece))
                job.done_up_to = start + len(piece)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller waiting for the job
                job.error = exc
            with self._cond:
                self._bulk_busy = False
                self.counts["slices"] += 1
                if job.complete:
                    job.finished.set()
                else:
                    self._jobs.append(job)  # to the back: the next ingest waiting has its turn
                self._cond.notify_all()

    def _lower_priority(self) -> None:
        """Lower this (the bulk worker's) thread's CPU priority by :attr:`nice` steps, on Linux."""
        if not self.nice or not sys.platform.startswith("linux"):
            return
        try:
            tid = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + self.nice))
        except OSError as exc:  # not fatal: the lanes still keep ingests to one encode at a time
            log.warning("could not lower the priority of the bulk embedding thread: %s", exc)

    # -- life -----------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the bulk worker once the texts already handed to it are encoded (blocking); a later bulk call
        starts another."""
        with self._cond:
            self._stopping = True
            worker = self._worker
            self._cond.notify_all()
        if worker is not None and worker is not threading.current_thread():
            worker.join()
