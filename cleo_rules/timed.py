"""Pattern searches under a time limit, and how a timeout is judged.

``regex`` measures a search's ``timeout`` with C's ``clock()``: the CPU time
of the whole process, every thread counted. Matching a ``str`` hands the GIL
back, and the search takes it again to check the clock (at its start and
every few hundred steps), so a search that does almost no work is charged
with whatever the process's other threads compute while it waits: threads
classifying other messages, an embedding model, a second core's worth at
once. On a busy process a fast pattern can run out of time.

At run time that costs one message its decision (it is searched as typed),
and :func:`search` already tries a timed-out search once more. A gate that
judges a pack must not count the process's load as the pack's fault, so
inside :func:`patient` (the gate's examples and corpus, the backtracking
probe) a timeout is tried again until it is reproducible: the thread
itself spent at least half the limit searching (``time.thread_time``, which
waiting does not advance), or the search ran out of time ``tries`` times in
a row. Only the tries after a timeout read the thread's clock, so a search
that answers in time costs nothing more.
"""

from __future__ import annotations

import contextlib
import time
from contextvars import ContextVar

__all__ = ["GATE_TRIES", "again", "patient", "search"]

#: how many times in a row a search must run out of time, inside :func:`patient`, before the
#: timeout counts although the thread itself spent less than half the limit searching
GATE_TRIES = 4

_TRIES: ContextVar[int] = ContextVar("cleo_rules_timed_tries", default=2)


@contextlib.contextmanager
def patient(tries: int = GATE_TRIES):
    """Within the block, a timed-out search is tried up to ``tries`` times (see the module docstring)."""
    token = _TRIES.set(max(2, tries))
    try:
        yield
    finally:
        _TRIES.reset(token)


def search(method, text, limit: float, *, tries: int | None = None):
    """``method(text, timeout=limit)``; raises :class:`TimeoutError` only for a timeout that is reproducible.

    The first timeout is always tried again (the process may have been
    busy), by :func:`again`.
    """
    try:
        return method(text, timeout=limit)
    except TimeoutError:
        return again(method, text, limit, tries=tries)


def again(method, text, limit: float, *, tries: int | None = None):
    """``method(text, timeout=limit)`` once more, after it ran out of time; raises :class:`TimeoutError`
    when the timeout is reproducible.

    A try's timeout counts when the thread spent at least ``limit / 2`` of
    its own CPU time in it, or when it is the last of ``tries`` (the first
    one included; default 2, or what :func:`patient` set), so a search takes
    at most ``tries`` limits of process time in all.
    """
    tries = _TRIES.get() if tries is None else tries
    attempt = 1
    while True:
        attempt += 1
        start = time.thread_time()
        try:
            return method(text, timeout=limit)
        except TimeoutError:
            if attempt >= tries or time.thread_time() - start >= limit / 2:
                raise
