"""Helpers for the hostile-input tests: toy stores, subprocesses under limits, snapshots of a store.

Attacks that can hang, eat memory or print a traceback run in a subprocess
under ``RLIMIT_AS`` and an alarm (:func:`run_python`), so a regression fails
the test instead of stalling the suite or the machine.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from helpers import ROOT

TOY_EMBEDDER = '''
import hashlib, re
import numpy as np

class Toy:
    """Bag of words hashed into 64 dimensions (helpers.embedders.ToyEmbedder, for subprocesses)."""
    model_name = "toy-bag-of-words-64"
    loaded = True
    dim = 64

    def encode(self, texts):
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\\w+", text.lower()):
                out[row, hashlib.blake2b(word.encode(), digest_size=2).digest()[0] % 64] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)
'''

LIMITS = '''
import resource, signal
resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))
signal.alarm({seconds})  # a hang ends the process (SIGALRM) instead of the test run
'''


def run_python(code: str, *args: str, memory: int = 2 << 30, seconds: int = 30, cwd=None, env=None,
               preamble: str = "") -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter under a memory limit and an alarm; ``args`` become ``sys.argv[1:]``."""
    script = LIMITS.format(memory=memory, seconds=seconds) + preamble + textwrap.dedent(code)
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                          timeout=seconds + 30, cwd=cwd, env=full_env)


def run_cli(*args: str, stdin: str | bytes | None = None, seconds: int = 60, memory: int = 3 << 30,
            cwd=None, env=None) -> subprocess.CompletedProcess:
    """``cleo-rules ARGS`` in a fresh interpreter (real pipes, real encodings) under limits."""
    code = "import sys\nfrom cleo_rules.cli import main\nsys.argv[0] = 'cleo-rules'\nmain(sys.argv[1:])\n"
    script = LIMITS.format(memory=memory, seconds=seconds) + code
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT), **(env or {})}
    data = stdin.encode("utf-8", "surrogatepass") if isinstance(stdin, str) else stdin
    res = subprocess.run([sys.executable, "-c", script, *args], input=data, capture_output=True,
                         timeout=seconds + 30, cwd=cwd, env=full_env)
    return subprocess.CompletedProcess(res.args, res.returncode, res.stdout.decode("utf-8", "replace"),
                                       res.stderr.decode("utf-8", "replace"))


def last_json(text: str):
    return json.loads(text.strip().splitlines()[-1])


def documents(n: int, prefix: str = "d", start: int = 0) -> list[dict]:
    words = ["boiler", "service", "van", "insurance", "kiln", "oven", "flour", "rye", "quote", "invoice"]
    return [{"type": "document", "id": f"{prefix}{i}", "title": f"Note {i}", "date": "2024-03-01",
             "text": f"{words[i % 10]} {words[(i * 3) % 10]} note number {i}. " * 3}
            for i in range(start, start + n)]


def conversations(n: int) -> list[dict]:
    return [{"type": "conversation", "id": f"c{i}", "title": f"Call {i}", "date": "2024-03-02",
             "messages": [{"role": "user", "text": f"Which van insurer covers tools, case {i}?"},
                          {"role": "assistant", "text": "The second quote covers tools left overnight."}]}
            for i in range(n)]


def jsonl(rows) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


def snapshot(directory: Path) -> dict[str, tuple[str, int, int]]:
    """Every file of a store as ``name -> (sha256, size, mtime_ns)``; SQLite's shared-memory index left out.

    ``memory.db-shm`` is SQLite's coordination file (readers record their
    place in it through shared memory): it holds no data of the store.
    """
    out = {}
    for path in sorted(directory.iterdir()):
        if path.name.endswith("-shm") or not path.is_file():
            continue
        st = path.stat()
        out[path.name] = (hashlib.sha256(path.read_bytes()).hexdigest(), st.st_size, st.st_mtime_ns)
    return out
