"""SIGKILL in the middle of an ingest: everything the service committed is still there, whole.

The ingest also runs past ``--ingest-timeout``: the client gets a 503
``timeout`` problem at once while the work goes on, batch by batch, until
the process is killed.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import time
import warnings

import httpx
import pytest

from helpers.service import Service

pytestmark = pytest.mark.model

N = 2000
BATCH = 32  # MemoryStore.ingest_jsonl's default batch


def line(i: int) -> str:
    return json.dumps({"type": "document", "id": f"note-{i:04d}", "title": f"Site note {i}", "date": "2024-07-01",
                       "text": f"Site note {i}: fitted a thermostatic valve in room {i % 7} and checked the "
                               f"flue on job {i}."}) + "\n"


def test_sigkill_mid_ingest_keeps_every_committed_batch(tmp_path, embedder):
    root = tmp_path / "memory"
    body = "".join(line(i) for i in range(N)).encode()
    svc = Service("--memory", root, "--ingest-timeout", "0.5", log_path=tmp_path / "service.log")
    try:
        svc.wait_ready(120)
        r = httpx.post(svc.url + "/v1/tenants/site/memory", content=body,
                       headers={"Content-Type": "application/x-ndjson"}, timeout=60)
        assert r.status_code == 503 and r.headers["retry-after"] == "1", r.text
        assert r.json()["type"] == "/problems/timeout"

        db = root / "site" / "memory.db"

        def committed() -> int:
            try:
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
                    return con.execute("SELECT count(*) FROM documents").fetchone()[0]
            except sqlite3.OperationalError:
                return 0

        deadline = time.monotonic() + 60
        while committed() < 2 * BATCH and time.monotonic() < deadline:
            time.sleep(0.01)
        svc.signal(signal.SIGKILL)
        assert svc.wait_exit(10) == -signal.SIGKILL
    finally:
        svc.stop()

    from cleo_rules.retrieval import MemoryStore, StoreWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store = MemoryStore.open(root / "site", embedder=embedder)
    with store:
        ids = [row[0] for row in store.db.conn.execute("SELECT id FROM documents ORDER BY id")]
        kept = len(ids)
        assert 2 * BATCH <= kept < N, "the kill must land mid-ingest"
        # whole batches, in order: a prefix of the body, nothing half-written
        assert kept % BATCH == 0 and ids == [f"note-{i:04d}" for i in range(kept)]
        stats = store.stats()
        assert stats["passages"] == kept
        assert stats["indexes"]["passages"]["elements"] == kept  # the index is caught up from SQLite on open
        hit = store.search("Site note 7: fitted a thermostatic valve in room 0 and checked the flue on job 7.", k=1)
        assert hit.results[0].id == "note-0007"
        # the same lines again: every committed item is unchanged, byte for byte
        report = store.ingest_jsonl(body.splitlines(keepends=True)[:kept])
    assert (report.unchanged, report.added, report.updated) == (kept, 0, 0)
    # an index left behind by the kill is repaired from SQLite, with a warning that says so, and nothing else
    assert all(issubclass(w.category, StoreWarning) for w in caught), [str(w.message) for w in caught]
