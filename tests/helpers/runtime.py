"""The fixture packs in their versions, messages whose decisions tell them apart, and the threads that classify
while a pack manager swaps packs: what the runtime's tests share."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from cleo_rules import load_pack, timed

from helpers import PACKS

VERSIONS = {"1.0.0": PACKS / "mini-1.0", "1.1.0": PACKS / "mini-1.1", "2.0.0": PACKS / "mini-2.0"}
HISTORY = ["Which van insurer should we use?"]
# messages whose decision differs between the mini packs, and some that do not
MESSAGES = [
    "Perfect, that works.",          # 1.1 follow_up (vocab.nod); 1.0 and 2.0 substantive
    "Not that one, the other one.",  # 2.0 correction; 1.x substantive
    "We tried that one already.",
    "Tell me more about that.",
    "Go with the other one.",
    "Compare the courier van insurance quotes from Brightline",
    "ok thanks",
]

#: a corpus case whose expectation the bundled pack does not meet, to append to its regressions.yaml
WRONG_CASE = """
  - id: regression/test-wrong-expectation
    message: "We tried that one already."
    expect: follow_up
"""


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1))


def expected_decisions():
    packs = [load_pack(d) for d in VERSIONS.values()]
    return {(p.version, p.content_hash): {m: p.classify(m, HISTORY) for m in MESSAGES} for p in packs}


def hammer(m, expected, swap, swaps: int, threads: int = 4):
    """Threads classify without pause while ``swap(i)`` runs ``swaps`` times.

    They classify as the gate does (:func:`cleo_rules.timed.patient`): a search that ran out of time only
    because five threads share the process would be a decision this test does not judge (at run time such
    a message is searched as typed).
    """
    stop = threading.Event()
    seen: list[list] = [[] for _ in range(threads)]
    errors = []

    def worker(out):
        i = 0
        try:
            with timed.patient():
                while not stop.is_set():
                    msg = MESSAGES[i % len(MESSAGES)]
                    out.append((msg, m.classify(msg, HISTORY)))
                    i += 1
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    workers = [threading.Thread(target=worker, args=(seen[k],)) for k in range(threads)]
    for w in workers:
        w.start()
    try:
        for i in range(swaps):
            swap(i)
            time.sleep(0.001)
    finally:
        stop.set()
        for w in workers:
            w.join()
    assert not errors, errors
    decisions = [pair for out in seen for pair in out]
    versions = set()
    for msg, d in decisions:
        key = (d.pack_version, d.pack_hash)
        assert key in expected, f"decision from an unknown pack {key}"
        # the whole decision is the one that pack gives: nothing mixed from another
        assert d == expected[key][msg], (msg, d, expected[key][msg])
        versions.add(d.pack_version)
    return decisions, versions
