"""The service's pack: hot reload behind the acceptance gate, readiness, and patterns that run out of time.

Each test starts its own service on a copy of a fixture pack (``tests/packs``)
and changes the files under it, as a designer would.
"""

from __future__ import annotations

import json
import shutil
import time
from functools import partial
from pathlib import Path

import pytest

from helpers import PACKS
from helpers.service import Service, metric, eventually as eventually_within

JSON = {"Content-Type": "application/json"}
HISTORY = ["Which van insurer should we use?"]
NOD = "Perfect, that works."  # substantive in mini 1.0, a follow-up (vocab.nod) in mini 1.1


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1))


eventually = partial(eventually_within, timeout=15.0)


def classify(http, message, history=HISTORY):
    return http.post("/v1/classify", content=json.dumps({"message": message, "history": history}), headers=JSON)


@pytest.fixture
def pack_dir(tmp_path):
    d = tmp_path / "pack"
    shutil.copytree(PACKS / "mini-1.0", d)
    return d


def test_hot_reload_rejects_a_broken_pack_and_swaps_in_a_good_one(tmp_path, pack_dir):
    svc = Service("--pack", pack_dir, "--watch-interval", "0.1", log_path=tmp_path / "service.log")
    try:
        svc.wait_ready(60)
        with svc.client() as http:
            first = http.get("/v1/pack").json()
            assert first["version"] == "1.0.0" and first["rejections"] == 0
            old = classify(http, NOD).json()
            assert old["kind"] == "substantive" and old["pack_hash"] == first["hash"]

            # a designer saves a broken file: rejected, reported, and the old pack keeps answering
            edit(pack_dir / "vocabulary.yaml", "words: [first, second,", "words: [first, second,]]")
            status = eventually(lambda: (s := http.get("/v1/pack").json())["rejections"] >= 1 and s)
            assert "YAML syntax error" in status["last_error"] and "vocabulary.yaml" in status["last_error"]
            assert status["hash"] == first["hash"] and status["reloads"] == 0
            still = classify(http, NOD)
            assert still.status_code == 200 and still.json() == old

            # asking for a reload of the same broken files: 422 with the reasons, still serving the old pack
            refused = http.post("/v1/pack/reload")
            assert refused.status_code == 422 and refused.headers["content-type"] == "application/problem+json"
            body = refused.json()
            assert body["type"] == "/problems/pack-rejected" and body["serving"]["hash"] == first["hash"]
            assert any(p["file"].endswith("vocabulary.yaml") and p["line"] == 12 for p in body["problems"])

            # a good version: swapped in, and the decision names the new pack
            for f in (PACKS / "mini-1.1").iterdir():
                shutil.copy(f, pack_dir / f.name)
            new = eventually(lambda: (s := http.get("/v1/pack").json())["version"] == "1.1.0" and s)
            assert new["hash"] != first["hash"] and new["reloads"] == 1 and new["last_error"] is None
            now = classify(http, NOD).json()
            assert (now["kind"], now["rule"], now["pack_hash"], now["pack_version"]) == (
                "follow_up", "vocab.nod", new["hash"], "1.1.0")

            again = http.post("/v1/pack/reload")
            assert again.status_code == 200 and again.json()["reloaded"] is False

            text = http.get("/metrics").text
            assert metric(text, "cleo_pack_reloads_total") == 1
            assert metric(text, "cleo_pack_rejections_total") == 2
            assert metric(text, "cleo_pack_info", pack="mini", version="1.1.0", hash=new["hash"]) == 1
    finally:
        svc.stop()
    assert "rejected; still serving mini 1.0.0" in svc.log


def test_not_ready_until_a_pack_passes_then_patterns_that_run_out_of_time_are_counted(tmp_path):
    """Started on a broken pack: up, not ready, every /v1 request 503; fixed, it serves.
    The pack (``tests/packs/slow``) has a pattern that runs out of time on a long message."""
    pack_dir = tmp_path / "pack"
    shutil.copytree(PACKS / "slow", pack_dir)
    edit(pack_dir / "vocabulary.yaml", "words: [first, second,", "words: [first, second,]]")
    svc = Service("--pack", pack_dir, "--watch-interval", "0.1", "--max-message-chars", "20000",
                  log_path=tmp_path / "service.log")
    try:
        svc.wait_up(60)
        with svc.client() as http:
            eventually(lambda: "cannot serve" in svc.log)
            ready = http.get("/readyz")
            assert ready.status_code == 503 and ready.headers["content-type"] == "application/problem+json"
            body = ready.json()
            assert body["type"] == "/problems/not-ready" and "rejected" in body["detail"]
            assert body["pack"] is None and body["model"] == "not used"
            refused = classify(http, "Tell me more.")
            assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
            assert refused.json()["type"] == "/problems/not-ready"
            assert http.get("/v1/pack").status_code == 503
            text = http.get("/metrics").text
            assert metric(text, "cleo_ready") == 0 and metric(text, "cleo_pack_rejections_total") == 1
            assert http.get("/healthz").status_code == 200

            edit(pack_dir / "vocabulary.yaml", "words: [first, second,]]", "words: [first, second,")
            eventually(lambda: http.get("/readyz").status_code == 200)
            assert classify(http, "Tell me more about that.").json()["kind"] == "follow_up"

            message = "We tried already: " + "that one " * 2000
            slow = classify(http, message).json()
            assert (slow["kind"], slow["query"], slow["note"]) == ("substantive", message,
                                                                   "timeout in correction.tried-both")
            text = http.get("/metrics").text
            assert metric(text, "cleo_regex_timeouts_total", rule="correction.tried-both") == 1
            assert metric(text, "cleo_ready") == 1
            assert metric(text, "cleo_pack_rejections_total") == 1  # the refusal at start still counts
    finally:
        svc.stop()
