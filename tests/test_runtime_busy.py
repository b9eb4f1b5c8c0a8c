"""The gate on a busy process: a search that ran out of time because of the load is no verdict on the pack.

``regex`` charges a search's ``timeout`` with C's ``clock()``, the CPU time of
the whole process: while a search in the gate waits for the GIL, the threads
classifying beside it (or any other thread) use up its limit. On a loaded
machine the gate then saw a fast pattern "time out" and refused a good pack:
``test_concurrent_classification_while_compiling_and_rejecting`` once counted
5 reloads and 7 rejections instead of 6 and 6, and
``test_concurrent_classification_while_swapping_many_times`` 299 reloads for
300 (with the cache, only the first loads of each pack meet the gate, and a
refusal is the one way a swap goes uncounted).

:class:`Busy` stands in for that load deterministically: the next timed
searches it picks, in the gate's thread, run out of time having done no work,
as such a search does (another thread computes for the whole limit while this
one waits, then the search reports :class:`TimeoutError`). Each test runs the
gate with threads classifying beside it, as the two tests above do.
"""

from __future__ import annotations

import hashlib
import shutil
import threading
import time
import types

import pytest
import regex

from cleo_rules import timed
from cleo_rules.errors import PackError
from cleo_rules.reading import validate
from cleo_rules.runtime import PackManager

from helpers.runtime import VERSIONS, edit, expected_decisions, hammer

PROBE_TAILS = ("\u0000!", "!\u0000")  # every string the backtracking probe searches ends so
BLOCK = bytes(1 << 20)


class Busy:
    """The next ``stalls`` timed searches that ``where(text, timeout)`` picks, in the thread that armed it, time out
    idle."""

    def __init__(self):
        self.stalls = 0
        self.where = lambda text, timeout: False
        self.thread: threading.Thread | None = None
        self.stalled: list[str] = []

    def arm(self, stalls: int, where) -> None:
        from cleo_rules.incremental import clear_memos

        clear_memos()  # every pattern is probed again, as by a process that has not probed it yet
        self.stalls, self.where, self.thread = stalls, where, threading.current_thread()

    def stall(self, text: str, timeout) -> bool:
        if timeout is None or self.stalls <= 0 or threading.current_thread() is not self.thread \
                or not self.where(text, timeout):
            return False
        self.stalls -= 1
        self.stalled.append(text)

        def other_work():  # the process's clock runs on another thread for the whole limit while this one waits
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                hashlib.sha256(BLOCK).digest()  # without the GIL, so the threads classifying beside go on

        worker = threading.Thread(target=other_work)
        worker.start()
        worker.join()
        return True


class BusyPattern:
    """A compiled pattern whose timed searches :class:`Busy` may stall; everything else is the pattern's own."""

    def __init__(self, compiled, busy: Busy):
        self._compiled, self._busy = compiled, busy

    def __getattr__(self, name):
        return getattr(self._compiled, name)

    def _timed(self, method, text, *args, timeout=None, **kwargs):
        if self._busy.stall(text, timeout):
            raise TimeoutError("regex timed out")
        return getattr(self._compiled, method)(text, *args, timeout=timeout, **kwargs)

    def search(self, text, *args, **kwargs):
        return self._timed("search", text, *args, **kwargs)

    def fullmatch(self, text, *args, **kwargs):
        return self._timed("fullmatch", text, *args, **kwargs)

    def match(self, text, *args, **kwargs):
        return self._timed("match", text, *args, **kwargs)


@pytest.fixture
def busy(monkeypatch):
    """Every rule pattern the compiler builds from now on can be stalled by the returned :class:`Busy`.

    The compiled-pack cache is off: a pack compiled or accepted earlier in the run would be read
    back without its patterns being built or its gate run, and the stall would land nowhere.
    """
    monkeypatch.setenv("CLEO_RULES_CACHE", "off")
    b = Busy()
    shim = types.SimpleNamespace(compile=lambda pattern, *a, **k: BusyPattern(regex.compile(pattern, *a, **k), b),
                                 error=regex.error)
    monkeypatch.setattr(validate, "regex", shim)
    return b


def is_probe(text: str, timeout: float) -> bool:
    return text.endswith(PROBE_TAILS)


def is_empty_check(text: str, timeout: float) -> bool:
    return text == ""


def is_example(text: str, timeout: float) -> bool:
    return timeout == 0.05  # the mini packs' timeout_ms: a search of the classifier, as the examples are judged


# where the load lands, how many searches in a row it stalls; a search of the classifier is already run twice
LOADS = {
    "the backtracking probe": (is_probe, 1),
    "the check that a pattern does not match the empty message": (is_empty_check, 1),
    "an example judged under the pack's run-time limit": (is_example, 2),
    "an example, three times in a row": (is_example, timed.GATE_TRIES - 1),
}


@pytest.mark.parametrize("where", sorted(LOADS))
def test_a_good_pack_is_never_rejected_because_the_process_is_busy_during_its_gate(tmp_path, busy, where):
    """The compiling-and-rejecting test, with a stall in every good pack's gate: 6 reloads and 6 rejections."""
    picks, stalls = LOADS[where]
    expected = expected_decisions()
    broken = tmp_path / "broken"
    shutil.copytree(VERSIONS["2.0.0"], broken)
    edit(broken / "corrections.yaml", "pattern: '\\bnot (?:that|this) one\\b'", "pattern: '\\bnot (?:that|this one\\b'")
    order = [VERSIONS["1.1.0"], broken, VERSIONS["2.0.0"], broken, VERSIONS["1.0.0"], broken]
    m = PackManager(VERSIONS["1.0.0"], cache_size=0)
    refused = []

    def swap(i):
        source = order[i % len(order)]
        if source != broken:
            busy.arm(stalls, picks)
        if not m.reload(source) and source != broken:
            refused.append(str(m.last_error))

    hammer(m, expected, swap, swaps=12)
    assert refused == []
    assert (m.reloads, m.rejections) == (6, 6)
    assert len(busy.stalled) == 6 * stalls  # the load did land in each good pack's gate


def test_a_swap_is_never_lost_because_the_process_is_busy_during_a_first_load(busy):
    """The swapping-many-times test, with a stall in the probe of the first pack the gate judges: 300 swaps."""
    expected = expected_decisions()
    order = ["1.1.0", "2.0.0", "1.0.0"]
    m = PackManager(VERSIONS["1.0.0"])
    refused = []

    def swap(i):
        if i == 0:
            busy.arm(1, is_probe)
        if not m.reload(VERSIONS[order[i % 3]]):
            refused.append(str(m.last_error))

    decisions, versions = hammer(m, expected, swap, swaps=300)
    assert refused == []
    assert (m.reloads, m.rejections) == (300, 0)
    assert len(busy.stalled) == 1
    assert versions == {"1.0.0", "1.1.0", "2.0.0"}


def test_a_timeout_that_reproduces_still_rejects_the_pattern(busy, pack_dir):
    """Load on every try is the pattern's own doing as far as the gate can tell: E131, as before."""
    m = PackManager(pack_dir, cache_size=0)
    busy.arm(timed.GATE_TRIES, is_probe)
    (pack_dir / "follow_ups.yaml").write_text((pack_dir / "follow_ups.yaml").read_text() + "\n")  # a new snapshot
    assert m.reload() is False
    assert len(busy.stalled) == timed.GATE_TRIES and len(set(busy.stalled)) == 1
    error = m.last_error
    assert isinstance(error, PackError) and [p.code for p in error.problems] == ["E131"]
    assert "took over 0.25s" in error.problems[0].message
    m.reload()  # the load gone: probed again, never refused for a time-out it memoized
    assert m.last_error is None and m.rejections == 1 and len(busy.stalled) == timed.GATE_TRIES


@pytest.fixture
def pack_dir(tmp_path):
    d = tmp_path / "pack"
    shutil.copytree(VERSIONS["1.0.0"], d)
    return d
