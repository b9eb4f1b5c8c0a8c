"""The tenants' stores: one thread each, a bounded LRU of open stores, a bounded queue, time limits."""

from __future__ import annotations

import asyncio
import threading

import pytest

from cleo_rules.serve.tenants import Overloaded, RequestTimeout, SharedEmbedder, Tenants

DOC = {"id": "d1", "title": "Price list", "date": "2024-01-02", "text": "Call-out fee is 85 pounds on weekdays."}


def tenants(tmp_path, toy_embedder, **kwargs) -> Tenants:
    return Tenants(tmp_path / "memory", SharedEmbedder(toy_embedder), **kwargs)


def test_each_tenant_has_its_own_store_and_thread(tmp_path, toy_embedder):
    t = tenants(tmp_path, toy_embedder)

    async def go():
        threads = {}
        for name in ("acme", "beta", "acme"):
            def work(store, name=name):
                store.add_document(**{**DOC, "id": f"{name}-doc"})
                return threading.current_thread().name, str(store.path)
            threads.setdefault(name, set()).add(await t.run(name, work, timeout=10))
        return threads

    threads = asyncio.run(go())
    assert len(threads["acme"]) == 1 and len(threads["beta"]) == 1  # the same thread every time
    (acme_thread, acme_path), = threads["acme"]
    assert "acme" in acme_thread and acme_path == str(tmp_path / "memory" / "acme")
    assert t.exists("acme") and t.exists("beta") and not t.exists("gamma") and t.open_count == 2
    assert t.close_all() == 2 and t.open_count == 0
    assert not (tmp_path / "memory" / "gamma").exists()


def test_idle_stores_beyond_the_bound_are_closed_least_recently_used_first(tmp_path, toy_embedder):
    t = tenants(tmp_path, toy_embedder, open_stores=2)

    async def go():
        for name in ("a", "b", "c"):
            await t.run(name, lambda store: store.add_document(**DOC), timeout=10)
        first_open = list(t._tenants)
        await t.run("a", lambda store: store.stats()["documents"], timeout=10)  # reopened after its close
        return first_open, list(t._tenants)

    first_open, later = asyncio.run(go())
    assert first_open == ["b", "c"]  # a, the least recently used, was closed when c opened
    assert later == ["c", "a"] and t.open_count == 2
    t.close_all()
    from cleo_rules.retrieval import MemoryStore

    for name in ("a", "b", "c"):  # every closed store saved its index: reopening repairs nothing
        import warnings

        from cleo_rules.retrieval import StoreWarning

        with warnings.catch_warnings():
            warnings.simplefilter("error", StoreWarning)
            with MemoryStore.open(tmp_path / "memory" / name, embedder=toy_embedder) as store:
                assert store.stats()["documents"] == 1


def test_a_busy_store_is_never_closed_under_its_requests(tmp_path, toy_embedder):
    t = tenants(tmp_path, toy_embedder, open_stores=1)
    gate = threading.Event()

    async def go():
        slow = asyncio.ensure_future(t.run("a", lambda store: gate.wait(10) and store.stats(), timeout=20))
        await asyncio.sleep(0.05)
        await t.run("b", lambda store: store.stats(), timeout=10)
        still_open = "a" in t._tenants
        gate.set()
        stats = await slow
        await asyncio.sleep(0.05)  # the release runs on the loop after the work finished
        return still_open, stats, list(t._tenants)

    still_open, stats, after = asyncio.run(go())
    assert still_open and stats["documents"] == 0
    assert len(after) == 1  # once idle, one of them was closed to honour the bound
    t.close_all()


def test_a_full_queue_refuses_at_once_and_a_slow_request_times_out(tmp_path, toy_embedder):
    t = tenants(tmp_path, toy_embedder, queue=3)  # two slots for reads, the third kept for a write
    gate = threading.Event()
    ran = []

    async def go():
        first = asyncio.ensure_future(t.run("a", lambda store: (gate.wait(10), ran.append("first")), timeout=20))
        second = asyncio.ensure_future(t.run("a", lambda store: ran.append("second"), timeout=0.2))
        await asyncio.sleep(0.05)
        with pytest.raises(Overloaded):
            await t.run("a", lambda store: ran.append("third"), timeout=10)
        with pytest.raises(RequestTimeout):
            await second  # still waiting behind the first: dropped when its time is up
        await t.run("b", lambda store: ran.append("other tenant"), timeout=10)  # other tenants are not held up
        gate.set()
        await first
        await asyncio.sleep(0.05)
        await t.run("a", lambda store: ran.append("after"), timeout=10)  # the queue emptied again

    asyncio.run(go())
    assert ran == ["other tenant", "first", "after"]
    t.close_all()


def test_a_timeout_raised_by_the_work_itself_is_not_taken_for_the_time_limit(tmp_path, toy_embedder):
    t = tenants(tmp_path, toy_embedder)

    def work(store):
        raise TimeoutError("a pattern ran out of time")

    with pytest.raises(TimeoutError, match="a pattern ran out of time"):
        asyncio.run(t.run("a", work, timeout=10))
    t.close_all()


def test_tenant_names_cannot_leave_the_root(tmp_path, toy_embedder):
    t = tenants(tmp_path, toy_embedder)
    for name in ("..", "../x", "A", "", "a/b"):
        with pytest.raises(ValueError):
            t.path(name)


def test_the_shared_embedder_encodes_one_batch_at_a_time(toy_embedder):
    active, peak = [0], [0]
    lock = threading.Lock()

    class Probe:
        model_name, loaded, dim = "probe", True, 4

        def encode(self, texts):
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            threading.Event().wait(0.01)
            with lock:
                active[0] -= 1
            return toy_embedder.encode(texts)

    shared = SharedEmbedder(Probe())
    threads = [threading.Thread(target=shared.encode, args=(["x"],)) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert peak[0] == 1 and shared.model_name == "probe" and shared.loaded
