"""The playground's rule editing (``cleo-rules playground --writable-pack``): from a pause in typing to the turns run
again.

The page sends an edit ``PAUSE_MS`` after the last keystroke (``cleo_rules/serve/static/editor.js``); the service
judges the whole pack with it (a copy of the pack and its corpus, the serving gate's own judgement, with what the
process memoizes of the files the edit did not change: ``cleo_rules.incremental``), writes it and serves the pack judged
(``PackManager.adopt``) before answering; the page then runs the conversation again (``/v1/classify/batch``). This measures the two
requests over HTTP on loopback, for three packs:

* ``starter``: a pack started with ``cleo-rules init --standalone`` (three rules, ~300 corpus cases);
* ``cleo-en``: a copy of the bundled pack with its corpus (49 rules, ~4,900 cases, a 330 KB lexicon), each code's
  own;
* ``team``: a pack started with ``cleo-rules init``, built on cleo-en: its own small file is edited, and the
  composed pack is judged with both corpora.

Each edit is a new text (a rule's description, or a line of the team's file, with a counter), so nothing is read
back from the compiled-pack cache: every one is compiled and judged afresh, as a designer's typing is. An edit
that does not check (a bound that is not a number, a list left open) is timed too: nothing is written and the
turns are not run again. The pause is added as the page waits it; the browser's own rendering is not counted.

``--before DIR`` serves each pack with the code of another checkout too (a directory holding ``cleo_rules``,
``rules``, ``corpus``, ``schemas`` and ``pyproject.toml``, e.g. ``git archive REV | tar -x -C DIR``), each
server on its own copy, the edits made to one then the other: before and after, interleaved in one run.

Usage::

    .venv/bin/python bench/bench_editing.py [--edits 7] [--before DIR] [--packs starter,cleo-en,team]
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
    found = re.search(r"export const PAUSE_MS = (\d+);", EDITOR.read_text(encoding="utf-8"))
    assert found is not None, "editor.js no longer says PAUSE_MS"
    return int(found.group(1))


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


class Playground:
    """A playground serving one copy of a pack with ``--writable-pack``, run by the code at ``code``."""

    def __init__(self, repo: Path, cache: str, code: Path):
        self.port = free_port()
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "CLEO_RULES_CACHE": cache, "PYTHONPATH": str(code)}
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", "cleo_rules", "playground", "--pack", "rules",
                                      "--writable-pack", "--port", str(self.port), "--watch-interval", "0.5"],
                                     cwd=repo, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=120)
        self.written: list[float] = []
        self.refused: list[float] = []
        self.runs: list[float] = []

    def ready(self) -> None:
        deadline = time.monotonic() + 300
        while True:
            if self.proc.poll() is not None:
                self.log.seek(0)
                raise SystemExit(f"the playground exited: {self.log.read().decode()[-2000:]}")
            try:
                if self.http.get("/readyz").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "not ready"
            time.sleep(0.1)

    def read(self, file: str) -> None:
        got = self.http.get("/v1/pack/file", params={"file": file}).json()
        self.file, self.text, self.sha = file, got["text"], got["sha256"]

    def put(self, text: str) -> dict:
        return self.http.put("/v1/pack/file", params={"file": self.file}, content=text.encode(),
                             headers={**TEXT, "If-Match": f'"{self.sha}"'}).json()

    def edit(self, new: str, bad: str) -> None:
        """One edit written and the turns run again, then one that does not check, each timed."""
        start = time.perf_counter()
        done = self.put(new)
        self.written.append(time.perf_counter() - start)
        assert done["written"], done["problems"][:2]
        self.sha = done["sha256"]
        start = time.perf_counter()
        answered = self.http.post("/v1/classify/batch", json=batch_body()).json()
        self.runs.append(time.perf_counter() - start)
        assert answered["results"][0]["pack_hash"] == done["serving"]["hash"]
        start = time.perf_counter()
        rejected = self.put(bad)
        self.refused.append(time.perf_counter() - start)
        assert not rejected["written"] and rejected["errors"]

    def close(self) -> None:
        try:
            self.put(self.text)
        except (httpx.HTTPError, AttributeError):
            pass
        self.http.close()
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def result(self) -> dict:
        pause = pause_ms() / 1000
        return {"written": self.written, "refused": self.refused, "runs": self.runs,
                "total": [pause + w + r for w, r in zip(self.written, self.runs)]}


def rule_edits(text: str, i: int) -> tuple[str, str]:
    """A rule's description changed (with a counter: a new text each time), and a bound that is not a number."""
    new = re.sub(r"(\n    description: )", rf"\g<1>(edit {i}) ", text, count=1)
    bad = new.replace("max_content_words: 3", f"max_content_words: lots{i}", 1)
    if bad == new:
        bad = new.replace("\n    pattern:", "\n    pattern: [", 1)
    return new, bad


def team_edits(text: str, i: int) -> tuple[str, str]:
    """A line of the team's own corrections file, which holds no rule yet, changed; and a list left open."""
    new = text.replace("\nkind: corrections", f"\n# edit {i}\nkind: corrections", 1)
    return new, new.replace("rules: []", "rules: [", 1)


#: each pack measured: its name, how it is made, the file edited and the edits made to it
PACKS = [("starter", "init --standalone", "rules/follow_ups.yaml", rule_edits),
         ("cleo-en", "copy", "rules/follow_ups.yaml", rule_edits),
         ("team", "init", "rules/corrections.yaml", team_edits)]


def make_pack(how: str, where: Path, cache: str, code: Path) -> None:
    if how == "copy":  # the bundled pack of the code serving it, with its corpus
        where.mkdir()
        shutil.copytree(code / "rules", where / "rules")
        shutil.copytree(code / "corpus", where / "corpus")
        return
    subprocess.run([sys.executable, "-m", "cleo_rules", *how.split(), str(where)], check=True, capture_output=True,
                   env={**os.environ, "HF_HUB_OFFLINE": "1", "CLEO_RULES_CACHE": cache})


def measure(how: str, file: str, edits_of, edits: int, codes: dict[str, Path], work: Path, cache: str) -> dict:
    """The pack served by each code at once (a copy each), its edits made to each in turn: interleaved."""
    servers = {}
    try:
        for name, code in codes.items():
            make_pack(how, work / name, cache, code)
            servers[name] = Playground(work / name, cache, code)
        for server in servers.values():
            server.ready()
            server.read(file)
        for i in range(edits):
            for server in servers.values():
                new, bad = edits_of(server.text, i)
                server.edit(new, bad)
    finally:
        for server in servers.values():
            server.close()
    return {name: server.result() for name, server in servers.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--edits", type=int, default=7)
    parser.add_argument("--before", type=Path, help="a checkout of the code to compare with (its directory): each "
                                                    "pack is served by it too, the edits interleaved")
    parser.add_argument("--packs", default=",".join(p[0] for p in PACKS), help="which packs (comma-separated)")
    args = parser.parse_args()
    codes = {"after": ROOT} if args.before is None else {"before": args.before.resolve(), "after": ROOT}
    wanted = args.packs.split(",")
    results = []
    for name, how, file, edits_of in (p for p in PACKS if p[0] in wanted):
        work = Path(tempfile.mkdtemp(prefix="bench-editing-"))
        cache = tempfile.mkdtemp(prefix="bench-editing-cache-")
        try:
            results.append((name, measure(how, file, edits_of, args.edits, codes, work, cache)))
        finally:
            shutil.rmtree(work, ignore_errors=True)
            shutil.rmtree(cache, ignore_errors=True)

    def ms(values, how=statistics.median) -> str:
        return f"{how(values) * 1000:7.0f}"

    print(f"pause before an edit is sent: {pause_ms()} ms (editor.js PAUSE_MS); {args.edits} edits per pack, "
          f"each a new text; target: turns run again within 1000 ms of the pause")
    print(f"{'pack':<9}{'code':<8}{'edit written, served':>22}{'edit refused':>14}{'turns run again':>17}"
          f"{'pause to turns run again':>26}")
    print(f"{'':<17}{'median   max (ms)':>22}{'median (ms)':>14}{'median (ms)':>17}{'median   max (ms)':>26}")
    for name, by_code in results:
        for code, r in by_code.items():
            print(f"{name:<9}{code:<8}{ms(r['written'])}{ms(r['written'], max):>7}{ms(r['refused']):>14}"
                  f"{ms(r['runs']):>17}{ms(r['total']):>19}{ms(r['total'], max):>7}")


if __name__ == "__main__":
    main()
