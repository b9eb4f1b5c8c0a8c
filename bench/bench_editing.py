"""The playground's rule editing (``cleo-rules playground --writable-pack``): from a pause in typing to the turns run
again.

The page sends an edit ``PAUSE_MS`` after the last keystroke (``cleo_rules/serve/static/editor.js``); the service
judges the whole pack with it (a copy of the pack and its corpus, the serving gate's own judgement), writes it and
serves the new pack before answering; the page then runs the conversation again (``/v1/classify/batch``). This
measures the two requests over HTTP on loopback, for two packs:

* ``team``: a pack started with ``cleo-rules init`` (three rules, ~300 corpus cases), what a team edits;
* ``cleo-en``: a copy of the bundled pack with its corpus (49 rules, ~4,400 cases).

Each edit is a new text (a rule's description with a counter), so nothing is read back from the compiled-pack
cache: every one is compiled and judged afresh, as a designer's typing is. An edit that does not check (a bound
that is not a number) is timed too: nothing is written and the turns are not run again. The pause is added as
the page waits it; the browser's own rendering is not counted.

Usage::

    .venv/bin/python bench/bench_editing.py [--edits 7]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
EDITOR = ROOT / "cleo_rules" / "serve" / "static" / "editor.js"
TEXT = {"Content-Type": "text/plain; charset=utf-8"}
CONVERSATION = [
    "Which van insurer covers tools left in the van overnight?",
    {"role": "assistant", "content": "Two do: Brightline Commercial and Zego Van. Brightline is cheaper."},
    "Yes, go with the second one.",
    "We tried that one already.",
    "Thanks!",
    "Could you tell me more about it?",
    "What about the smaller one?",
]


def pause_ms() -> int:
    return int(re.search(r"export const PAUSE_MS = (\d+);", EDITOR.read_text(encoding="utf-8")).group(1))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def batch_body() -> dict:
    items = []
    for i, item in enumerate(CONVERSATION):
        if isinstance(item, str):
            items.append({"message": item, "history": CONVERSATION[:i]})
    return {"items": items}


def measure(name: str, repo: Path, edits: int, cache: str) -> dict:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "CLEO_RULES_CACHE": cache}
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-m", "cleo_rules", "playground", "--pack", "rules", "--writable-pack",
                             "--port", str(port), "--watch-interval", "0.5"], cwd=repo, stdout=log,
                            stderr=subprocess.STDOUT, env=env)
    try:
        with httpx.Client(base_url=url, timeout=120) as http:
            deadline = time.monotonic() + 180
            while True:
                assert proc.poll() is None, "the playground exited"
                try:
                    if http.get("/readyz").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, "not ready"
                time.sleep(0.1)
            file = "rules/follow_ups.yaml"
            got = http.get("/v1/pack/file", params={"file": file}).json()
            text, sha = got["text"], got["sha256"]
            written, refused, runs = [], [], []
            for i in range(edits):
                new = re.sub(r"(\n    description: )", rf"\g<1>(edit {i}) ", text, count=1)
                start = time.perf_counter()
                done = http.put("/v1/pack/file", params={"file": file}, content=new.encode(),
                                headers={**TEXT, "If-Match": f'"{sha}"'}).json()
                written.append(time.perf_counter() - start)
                assert done["written"], done["problems"][:2]
                sha = done["sha256"]
                start = time.perf_counter()
                answered = http.post("/v1/classify/batch", json=batch_body()).json()
                runs.append(time.perf_counter() - start)
                assert answered["results"][0]["pack_hash"] == done["serving"]["hash"]
                bad = new.replace("max_content_words: 3", f"max_content_words: lots{i}", 1)
                if bad == new:
                    bad = new.replace("\n    pattern:", "\n    pattern: [", 1)
                start = time.perf_counter()
                rejected = http.put("/v1/pack/file", params={"file": file}, content=bad.encode(),
                                    headers={**TEXT, "If-Match": f'"{sha}"'}).json()
                refused.append(time.perf_counter() - start)
                assert not rejected["written"] and rejected["errors"]
            http.put("/v1/pack/file", params={"file": file}, content=text.encode(),
                     headers={**TEXT, "If-Match": f'"{sha}"'})
    finally:
        proc.terminate()
        proc.wait(30)
    pause = pause_ms() / 1000
    total = [pause + w + r for w, r in zip(written, runs)]
    return {"name": name, "written": written, "refused": refused, "runs": runs, "total": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edits", type=int, default=7)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-editing-"))
    cache = tempfile.mkdtemp(prefix="bench-editing-cache-")
    try:
        subprocess.run([sys.executable, "-m", "cleo_rules", "init", "--standalone", str(work / "team")], check=True,
                       capture_output=True, env={**os.environ, "HF_HUB_OFFLINE": "1", "CLEO_RULES_CACHE": cache})
        (work / "cleo-en").mkdir()
        shutil.copytree(ROOT / "rules", work / "cleo-en" / "rules")
        shutil.copytree(ROOT / "corpus", work / "cleo-en" / "corpus")
        results = [measure("team", work / "team", args.edits, cache),
                   measure("cleo-en", work / "cleo-en", args.edits, cache)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)

    def ms(values, how=statistics.median) -> str:
        return f"{how(values) * 1000:7.0f}"

    print(f"pause before an edit is sent: {pause_ms()} ms (editor.js PAUSE_MS); {args.edits} edits per pack, "
          f"each a new text (compiled and judged afresh)")
    print(f"{'pack':<9}{'edit written, served':>22}{'edit refused':>14}{'turns run again':>17}"
          f"{'pause to turns run again':>26}")
    print(f"{'':<9}{'median   max (ms)':>22}{'median (ms)':>14}{'median (ms)':>17}{'median   max (ms)':>26}")
    for r in results:
        print(f"{r['name']:<9}{ms(r['written'])}{ms(r['written'], max):>7}{ms(r['refused']):>14}{ms(r['runs']):>17}"
              f"{ms(r['total']):>19}{ms(r['total'], max):>7}")


if __name__ == "__main__":
    main()
