"""Timed searches: a timeout counts when it is the pattern's doing, not the process's (cleo_rules.timed)."""

from __future__ import annotations

import threading
import time

import regex

from cleo_rules import timed


class Search:
    """A search that runs out of time ``idle`` times without working, then ``working`` times spending its own CPU."""

    def __init__(self, idle: int = 0, working: int = 0):
        self.idle, self.working, self.calls = idle, working, 0

    def __call__(self, text, timeout):
        self.calls += 1
        if self.idle:
            self.idle -= 1
            raise TimeoutError("regex timed out")
        if self.working:
            self.working -= 1
            end = time.thread_time() + timeout
            while time.thread_time() < end:
                pass
            raise TimeoutError("regex timed out")
        return f"found in {text}"


def test_a_search_in_time_is_called_once():
    s = Search()
    assert timed.search(s, "text", 0.01) == "found in text" and s.calls == 1


def test_at_run_time_a_timeout_is_tried_once_more_and_a_second_one_counts():
    assert timed.search(s := Search(idle=1), "text", 0.01) == "found in text" and s.calls == 2
    s = Search(idle=2)
    try:
        timed.search(s, "text", 0.01)
    except TimeoutError:
        pass
    else:
        raise AssertionError("two timeouts in a row must count at run time")
    assert s.calls == 2


def test_in_a_gate_a_timeout_counts_only_when_it_reproduces():
    with timed.patient():
        s = Search(idle=timed.GATE_TRIES - 1)
        assert timed.search(s, "text", 0.01) == "found in text" and s.calls == timed.GATE_TRIES
        s = Search(idle=timed.GATE_TRIES)
        try:
            timed.search(s, "text", 0.01)
        except TimeoutError:
            pass
        else:
            raise AssertionError("a timeout on every try counts")
        assert s.calls == timed.GATE_TRIES


def test_a_search_that_spends_the_time_itself_counts_at_once_on_the_try_that_measures_it():
    with timed.patient():
        s = Search(idle=1, working=1)
        try:
            timed.search(s, "text", 0.02)
        except TimeoutError:
            pass
        else:
            raise AssertionError("a try that spent half the limit itself counts")
        assert s.calls == 2


def test_a_catastrophic_pattern_runs_out_of_time_inside_a_gate_too():
    rx = regex.compile(r"(?:a|aa)+$")
    calls = []

    def search(text, timeout):
        calls.append(timeout)
        return rx.search(text, timeout=timeout)

    start = time.monotonic()
    with timed.patient():
        try:
            timed.search(search, "a" * 40 + "!", 0.05)
        except TimeoutError:
            pass
        else:
            raise AssertionError("a catastrophic pattern must run out of time")
    assert 2 <= len(calls) <= timed.GATE_TRIES and time.monotonic() - start < 30


def test_patience_belongs_to_the_block_and_the_thread_that_asked_for_it():
    seen = []

    def elsewhere():
        s = Search(idle=2)
        try:
            timed.search(s, "text", 0.01)
        except TimeoutError:
            seen.append(s.calls)

    with timed.patient():
        other = threading.Thread(target=elsewhere)
        other.start()
        other.join()
    assert seen == [2]  # another thread keeps the run-time rule
    s = Search(idle=2)
    try:
        timed.search(s, "text", 0.01)
    except TimeoutError:
        seen.append(s.calls)
    assert seen == [2, 2]  # and so does this one after the block
