"""Run the benchmark scripts one after another and print their figures (``make bench``).

By default, the deterministic ones: their figures depend only on the code,
the rule pack and the data, so two runs of the same checkout print the same
text, and two checkouts can be compared line by line:

* ``eval_retrieval.py``  irrelevant share of the top-k, raw / shaped / oracle;
* ``eval_anchors.py``    follow-ups searched with other anchors;
* ``eval_dialogue.py``   detection and query quality on CANARD and GECOR;
* ``eval_business.py``   detection, subject kept, rejected words and bare
  referents on the business-register conversations;
* ``dump_decisions.py``  every decision on the turns we have, compared with
  the committed dump (``--baseline``): a change in behaviour shows here.

``--timings`` adds the timing scripts (``bench_classify.py``,
``bench_corpus.py``, ``bench_pack.py``, ``bench_turn.py``), each printing
its figures and ratios side by side; ``bench_store.py``,
``bench_serve.py`` and ``bench_embed.py`` take minutes and are run on their own,
and so does ``bench_replicas.py`` (turns against one service and two on one
PostgreSQL, about three minutes), which ``--only bench_replicas`` also runs, and
``choose_settings.py`` (the shaping settings chosen from data, with
leave-one-dataset-out figures; minutes the first time, while it embeds),
which ``--only choose_settings`` runs. ``--out DIR``
also writes each script's output to ``DIR/<script>.txt``, for comparing two
checkouts with ``diff -r``. Exits 1 if any script fails.

Usage::

    .venv/bin/python bench/run_all.py [--timings] [--out DIR] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
BASELINE = BENCH / "decisions" / "conversation-aware.jsonl.gz"

#: (script, arguments): figures that depend on nothing but the code, the pack and the data
DETERMINISTIC = (
    ("eval_retrieval.py", ("--chart", "{tmp}/eval_retrieval.png")),
    ("eval_anchors.py", ()),
    ("eval_dialogue.py", ("--chart", "{tmp}/eval_dialogue.png")),
    ("eval_business.py", ("--misses",)),
    ("dump_decisions.py", ("{tmp}/decisions.jsonl.gz",)),
)
#: timing scripts run by ``--timings``, each short enough for a shared machine
TIMINGS = (
    ("bench_classify.py", ()),
    ("bench_corpus.py", ()),
    ("bench_pack.py", ()),
    ("bench_turn.py", ()),
)
#: scripts that take minutes, run only when named with ``--only``
ON_REQUEST = (
    ("bench_replicas.py", ()),
    ("choose_settings.py", ()),
)


def run(script: str, args: tuple[str, ...], tmp: str, out_dir: Path | None) -> bool:
    """Run one script with this interpreter; print its output under a heading; whether it succeeded."""
    argv = [sys.executable, str(BENCH / script), *(a.format(tmp=tmp) for a in args)]
    print(f"\n=== {script} {' '.join(argv[2:])}".replace(tmp, "TMP").rstrip(), flush=True)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    text = done.stdout.replace(tmp, "TMP")
    print(text, end="" if text.endswith("\n") or not text else "\n")
    if done.returncode:
        print(done.stderr, end="", file=sys.stderr)
    if out_dir is not None:
        (out_dir / f"{Path(script).stem}.txt").write_text(text, encoding="utf-8")
    print(f"--- {script}: {'ok' if not done.returncode else f'FAILED (exit {done.returncode})'} "
          f"in {time.perf_counter() - start:.0f} s", flush=True)
    return done.returncode == 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--timings", action="store_true", help="also the timing scripts")
    ap.add_argument("--out", type=Path, default=None, help="also write each script's output to DIR/<script>.txt")
    ap.add_argument("--only", nargs="+", default=None, metavar="NAME", help="only these scripts (e.g. eval_anchors)")
    ap.add_argument("--baseline", type=Path, default=BASELINE, help="the decision dump to compare with")
    args = ap.parse_args(argv)
    plan = list(DETERMINISTIC) + (list(TIMINGS) if args.timings else [])
    if args.only:
        wanted = {Path(n).stem for n in args.only}
        known = DETERMINISTIC + TIMINGS + ON_REQUEST
        unknown = wanted - {Path(s).stem for s, _ in known}
        if unknown:
            ap.error(f"no such script: {', '.join(sorted(unknown))}")
        plan = [(s, a) for s, a in known if Path(s).stem in wanted]
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    failed = []
    with tempfile.TemporaryDirectory(prefix="cleo-bench-") as tmp:
        for script, script_args in plan:
            if not run(script, script_args, tmp, args.out):
                failed.append(script)
            if script == "dump_decisions.py" and Path(tmp, "decisions.jsonl.gz").is_file():
                if not run("dump_decisions.py", ("--compare", str(args.baseline), "{tmp}/decisions.jsonl.gz"),
                           tmp, None):
                    failed.append("dump_decisions.py --compare")
    print(f"\n{len(plan) - len(failed)} of {len(plan)} scripts ran" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
