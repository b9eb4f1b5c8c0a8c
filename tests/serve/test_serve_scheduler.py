"""The embedding scheduler: queries ahead of ingests, ingests a slice at a time and in turn, the bulk lane's priority.

The order of encodes is asserted with gated encoders (an encode that waits
for the test to let it finish), never with timings.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time

import numpy as np
import pytest

from cleo_rules.errors import StoreError
from cleo_rules.serve.scheduler import BULK_NICE, BULK_NICE_ENV, EmbedScheduler, bulk_lane, bulk_nice, in_bulk_lane
from cleo_rules.serve.tenants import SharedEmbedder, Tenants, Write

DOC = {"id": "d1", "title": "Price list", "date": "2024-01-02", "text": "Call-out fee is 85 pounds on weekdays."}


class Gated:
    """An encoder that records each call's texts and waits at ``gate`` when a text equals ``hold``."""

    def __init__(self, inner, hold: str | None = None):
        self.inner = inner
        self.hold = hold
        self.calls: list[list[str]] = []
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.lock = threading.Lock()

    def __call__(self, texts):
        with self.lock:
            self.calls.append(list(texts))
        if self.hold is not None and self.hold in texts:
            self.entered.set()
            assert self.gate.wait(20), "the test never opened the gate"
        return self.inner.encode(texts)


def until(condition, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition never came true"
        time.sleep(0.002)


def run(target, *args) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def body():
        try:
            out["value"] = target(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    thread = threading.Thread(target=body)
    thread.start()
    return thread, out


TEXTS = [f"passage {n} about boilers and vans" for n in range(10)]


def test_one_at_a_time_a_waiting_query_goes_before_the_next_slice(toy_embedder):
    encoder = Gated(toy_embedder, hold=TEXTS[0])
    scheduler = EmbedScheduler(encoder, side_by_side=False, slice=4)
    bulk, got = run(scheduler.bulk, TEXTS)
    assert encoder.entered.wait(20)  # the first slice is being encoded
    query, answer = run(scheduler.query, ["which boiler did we choose"])
    until(lambda: scheduler._next_ticket == 1)  # the query has its ticket and waits for the slice
    time.sleep(0.05)
    assert query.is_alive() and encoder.calls == [TEXTS[:4]]  # one at a time: it waits for the slice under way
    encoder.gate.set()
    bulk.join(20)
    query.join(20)
    assert encoder.calls == [TEXTS[:4], ["which boiler did we choose"], TEXTS[4:8], TEXTS[8:]]
    assert np.array_equal(got["value"], toy_embedder.encode(TEXTS))  # the slices' rows, in order
    assert np.array_equal(answer["value"], toy_embedder.encode(["which boiler did we choose"]))
    scheduler.close()


def test_side_by_side_a_query_never_waits_for_a_slice(toy_embedder):
    encoder = Gated(toy_embedder, hold=TEXTS[0])
    scheduler = EmbedScheduler(encoder, side_by_side=True, slice=4, nice=0)
    bulk, got = run(scheduler.bulk, TEXTS)
    assert encoder.entered.wait(20)
    vectors = scheduler.query(["which boiler did we choose"])  # answered while the slice is still held
    assert bulk.is_alive() and encoder.calls == [TEXTS[:4], ["which boiler did we choose"]]
    assert np.array_equal(vectors, toy_embedder.encode(["which boiler did we choose"]))
    encoder.gate.set()
    bulk.join(20)
    assert np.array_equal(got["value"], toy_embedder.encode(TEXTS))
    scheduler.close()


def test_queries_are_encoded_one_at_a_time_in_the_order_they_came(toy_embedder):
    encoder = Gated(toy_embedder, hold="first")
    scheduler = EmbedScheduler(encoder, side_by_side=True, nice=0)
    first, _ = run(scheduler.query, ["first"])
    assert encoder.entered.wait(20)
    later = []
    for n in range(5):
        later.append(run(scheduler.query, [f"q{n}"])[0])
        until(lambda n=n: scheduler._next_ticket == n + 2)  # each takes its ticket before the next one comes
    time.sleep(0.05)
    assert encoder.calls == [["first"]]  # the others wait for the first
    encoder.gate.set()
    for thread in [first, *later]:
        thread.join(20)
    assert encoder.calls == [["first"]] + [[f"q{n}"] for n in range(5)]


def test_two_ingests_take_turns_slice_by_slice(toy_embedder):
    a = [f"a{n}" for n in range(8)]
    b = [f"b{n}" for n in range(6)]
    encoder = Gated(toy_embedder, hold="a0")
    scheduler = EmbedScheduler(encoder, side_by_side=True, slice=2, nice=0)
    first, got_a = run(scheduler.bulk, a)
    assert encoder.entered.wait(20)
    second, got_b = run(scheduler.bulk, b)
    until(lambda: len(scheduler._jobs) == 1)  # b waits for its turn
    encoder.gate.set()
    first.join(20)
    second.join(20)
    assert encoder.calls == [["a0", "a1"], ["b0", "b1"], ["a2", "a3"], ["b2", "b3"], ["a4", "a5"], ["b4", "b5"],
                             ["a6", "a7"]]
    assert np.array_equal(got_a["value"], toy_embedder.encode(a))
    assert np.array_equal(got_b["value"], toy_embedder.encode(b))
    scheduler.close()


def test_a_failing_slice_fails_its_own_caller_and_the_lane_goes_on(toy_embedder):
    def encode(texts):
        if "bad" in texts:
            raise ValueError("the model refused a text")
        return toy_embedder.encode(texts)

    scheduler = EmbedScheduler(encode, side_by_side=False, slice=2)
    with pytest.raises(ValueError, match="refused a text"):
        scheduler.bulk(["good", "fine", "bad", "never"])
    assert np.array_equal(scheduler.bulk(["good", "fine", "more"]), toy_embedder.encode(["good", "fine", "more"]))
    assert scheduler.counts["slices"] == 4  # the failed job stopped at its failing slice
    scheduler.close()


def test_close_waits_for_queued_texts_and_a_later_bulk_call_starts_again(toy_embedder):
    scheduler = EmbedScheduler(toy_embedder.encode, side_by_side=True, slice=1, nice=0)
    assert np.array_equal(scheduler.bulk(TEXTS), toy_embedder.encode(TEXTS))
    worker = scheduler._worker
    assert worker is not None and worker.is_alive()
    scheduler.close()
    assert not worker.is_alive() and scheduler._worker is None
    assert np.array_equal(scheduler.bulk(TEXTS[:3]), toy_embedder.encode(TEXTS[:3]))  # a new worker
    assert scheduler._worker is not None and scheduler._worker is not worker
    scheduler.close()
    assert scheduler.bulk([]).shape == (0, 64)  # nothing to slice: the embedder answers for no texts


@pytest.mark.parametrize("side_by_side, nice, lowered", [(True, 5, 5), (True, 0, 0), (False, 5, 0)])
def test_the_bulk_worker_runs_at_a_lower_priority_only_beside_queries(toy_embedder, side_by_side, nice, lowered):
    seen = {}

    def encode(texts):
        lane = "bulk" if threading.current_thread().name == "cleo-embed-bulk" else "query"
        seen[lane] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        return toy_embedder.encode(texts)

    base = os.getpriority(os.PRIO_PROCESS, 0)
    scheduler = EmbedScheduler(encode, side_by_side=side_by_side, nice=nice)
    scheduler.bulk(["an ingest's passage"])
    scheduler.query(["a turn's query"])
    if not sys.platform.startswith("linux"):
        lowered = 0  # elsewhere a priority is the whole process's: left alone
    assert seen == {"bulk": min(19, base + lowered), "query": base}  # the caller's thread is never touched
    scheduler.close()


def test_the_bulk_priority_comes_from_the_argument_the_environment_or_the_default(monkeypatch):
    monkeypatch.delenv(BULK_NICE_ENV, raising=False)
    assert bulk_nice() == BULK_NICE == 19 and bulk_nice(3) == 3
    monkeypatch.setenv(BULK_NICE_ENV, " 7 ")
    assert bulk_nice() == 7 and bulk_nice(0) == 0
    for raw in ("20", "-1", "ten", "1.5", "\u0667"):
        monkeypatch.setenv(BULK_NICE_ENV, raw)
        with pytest.raises(StoreError, match=BULK_NICE_ENV):
            bulk_nice()
    for value in (-1, 20, True, 1.0, "3"):
        with pytest.raises(ValueError, match="nice"):
            bulk_nice(value)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="slice"):
        EmbedScheduler(lambda texts: np.zeros((len(texts), 4)), side_by_side=True, slice=0)


def test_the_lane_is_the_threads_own_and_nests():
    assert not in_bulk_lane()
    with bulk_lane():
        assert in_bulk_lane()
        _, out = run(in_bulk_lane)
        with bulk_lane():
            assert in_bulk_lane()
        assert in_bulk_lane()
    assert not in_bulk_lane()
    time.sleep(0.05)
    assert out == {"value": False}  # another thread is in the query lane


# -- through the tenants' stores -----------------------------------------------------------------------------------


class Lanes:
    """An embedder that notes the lane of every encode (and the thread it ran on)."""

    model_name, loaded, dim = "toy-bag-of-words-64", True, 64

    def __init__(self, inner):
        self.inner = inner
        self.lanes: list[tuple[str, int]] = []

    def encode(self, texts):
        lane = "bulk" if threading.current_thread().name == "cleo-embed-bulk" else "query"
        self.lanes.append((lane, len(texts)))
        return self.inner.encode(texts)


def test_a_writes_texts_go_to_the_bulk_lane_and_a_search_to_the_query_lane(tmp_path, toy_embedder):
    lanes = Lanes(toy_embedder)
    shared = SharedEmbedder(lanes, slice=2)
    t = Tenants(tmp_path / "memory", shared)
    docs = [{**DOC, "id": f"d{n}", "text": f"{DOC['text']} Part {n}."} for n in range(5)]

    async def go():
        await t.run("acme", Write(lambda store: [store.add_document(**d) for d in docs[:1]]), timeout=20)
        lanes.lanes.clear()
        lines = "\n".join(__import__("json").dumps({"type": "document", **d}) for d in docs[1:])
        report = await t.run("acme", Write(lambda store: store.ingest_jsonl(lines.encode())), timeout=20)
        ingested = list(lanes.lanes)
        lanes.lanes.clear()
        hits = await t.run("acme", lambda store: store.search("call-out fee", k=3).results, timeout=20)
        return report, ingested, list(lanes.lanes), hits

    report, ingested, searched, hits = asyncio.run(go())
    assert report.added == 4 and hits
    assert ingested == [("bulk", 2), ("bulk", 2)]  # four passages, two slices, none on the tenant's thread
    assert searched == [("query", 1)]
    assert t.close_all() == 1
    assert shared.scheduler._worker is None  # closing the stores stops the bulk worker


@pytest.mark.model
def test_the_onnx_model_in_both_lanes_at_once_gives_each_text_its_vector_alone():
    from cleo_rules.retrieval.embed import Embedder

    embedder = Embedder()
    if embedder.backend != "onnx":
        pytest.fail(f"the default backend is {embedder.backend}, not onnx")
    shared = SharedEmbedder(embedder)
    assert shared.scheduler.side_by_side
    passages = [f"Passage {n}: the boiler service plan renews in March, the van insurer covers tools {n} nights."
                for n in range(24)]
    queries = [f"which plan covers {n} nights?" for n in range(24)]
    alone_passages, alone_queries = embedder.encode(passages), embedder.encode(queries)

    def ingest():
        with bulk_lane():
            return shared.encode(passages)

    bulk, got = run(ingest)
    together = np.vstack([shared.encode([q]) for q in queries])
    bulk.join(60)
    assert np.array_equal(got["value"], alone_passages)  # bit for bit: one thread each, each text alone
    assert np.array_equal(together, alone_queries)
    assert shared.scheduler.counts["slices"] == 6
    shared.close()
