"""Cold start of the commands that do not embed: this checkout against a baseline checkout, side by side.

Each run is a new process, from its start to its end (or, for ``serve``, to
its first ``200`` on ``/readyz``):

* ``classify``: ``cleo-rules classify "Yes, the second one." -H "Compare the two van quotes"``
  with the bundled pack;
* ``check``: ``cleo-rules check`` on the bundled pack and its corpus (compile,
  examples, the whole corpus);
* ``serve``: ``cleo-rules serve`` without memory, until ``/readyz`` answers
  ``200`` (the gate has compiled the pack and run its corpus).

The baseline is a checkout of the code before (``--baseline``, default
``/work/baseline``), imported first on ``sys.path`` by the same interpreter,
so both use the same installed dependencies. Both run with their bytecode
cached, as an installed package has it (in a directory of the benchmark's
own, ``PYTHONPYCACHEPREFIX``, filled by an untimed first run, so no checkout
is written to); ``--source-only`` runs them as an environment with
``PYTHONDONTWRITEBYTECODE=1`` and no bytecode does, every module compiled
from source in every process. This checkout runs with its compiled-pack cache
warm (filled before the first timed run), cold (a new empty cache directory
every run: it compiles and writes the cache) and off
(``CLEO_RULES_CACHE=off``); the baseline off (every ratio is to it) and warm.
Every command runs in a neutral working directory, so each checkout uses its
own bundled pack. Variants run interleaved, ``--runs`` rounds; the table shows
medians of the process's CPU time (user + system, from
``resource.getrusage(RUSAGE_CHILDREN)``; for ``serve``, from ``/proc`` when
``/readyz`` first answers) and of wall time,
with each figure's ratio to the baseline's.

Usage: python bench/bench_coldstart.py [--runs N] [--baseline DIR] [--only classify|check|serve ...] [--source-only]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MESSAGE = ("Yes, the second one.", "-H", "Compare the two van quotes")
COMMANDS = {
    "classify": ("classify", *MESSAGE),
    "check": ("check",),
}
TICKS = os.sysconf("SC_CLK_TCK")


def _launcher(checkout: Path) -> list[str]:
    """The command line that runs ``cleo-rules`` from ``checkout``'s sources with this interpreter."""
    code = (f"import sys; sys.path.insert(0, {str(checkout)!r}); "
            "import cleo_rules; assert cleo_rules.__file__.startswith(sys.path[0]), cleo_rules.__file__; "
            "from cleo_rules.cli import main; sys.argv[0] = 'cleo-rules'; main()")
    return [sys.executable, "-c", code]


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_command(argv: list[str], env: dict, cwd: Path) -> tuple[float, float]:
    """``(cpu, wall)`` seconds of one process, start to end; it must succeed."""
    cpu0, t0 = _cpu_children(), time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, _cpu_children() - cpu0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[3:])} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return cpu, wall


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def run_serve(argv: list[str], env: dict, cwd: Path, timeout: float = 60.0) -> tuple[float, float]:
    """``(cpu, wall)`` seconds from starting ``serve`` to its first 200 on ``/readyz``."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}/readyz"
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv + ["serve", "--port", str(port)], env=env, cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"serve exited ({proc.returncode}):\n{proc.stderr.read() if proc.stderr else ''}")
            try:
                with urllib.request.urlopen(url, timeout=1.0) as answer:
                    if answer.status == 200:
                        wall = time.perf_counter() - t0
                        return _proc_cpu(proc.pid), wall
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.perf_counter() - t0 > timeout:
                raise SystemExit(f"serve not ready after {timeout:.0f} s")
            time.sleep(0.005)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--baseline", type=Path, default=Path("/work/baseline"))
    ap.add_argument("--only", nargs="*", choices=["classify", "check", "serve"])
    ap.add_argument("--source-only", action="store_true", help="no bytecode cache: every module compiled from source")
    args = ap.parse_args()
    commands = args.only or ["classify", "check", "serve"]
    if not (args.baseline / "cleo_rules" / "__init__.py").is_file():
        raise SystemExit(f"no checkout of cleo-rules at {args.baseline}: give --baseline DIR")

    work = Path(tempfile.mkdtemp(prefix="cleo-coldstart-"))
    neutral = work / "cwd"
    neutral.mkdir()
    warm_cache = work / "warm-cache"
    drop = ("CLEO_RULES_PACK", "CLEO_RULES_CACHE", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")
    base_env = {k: v for k, v in os.environ.items() if k not in drop}
    base_env["HF_HUB_OFFLINE"] = "1"
    if args.source_only:
        base_env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        base_env["PYTHONPYCACHEPREFIX"] = str(work / "bytecode")
    variants = {  # name -> (checkout, cache setting: a directory, "off", or "fresh" for a new one every run)
        "baseline": (args.baseline, "off"),
        "baseline, warm": (args.baseline, str(warm_cache)),
        "new, cache warm": (ROOT, str(warm_cache)),
        "new, cache cold": (ROOT, "fresh"),
        "new, cache off": (ROOT, "off"),
    }

    def env_for(cache: str) -> dict:
        env = dict(base_env)
        if cache == "fresh":
            fresh = Path(tempfile.mkdtemp(prefix="cache-", dir=work))
            env["CLEO_RULES_CACHE"] = str(fresh)
        else:
            env["CLEO_RULES_CACHE"] = cache
        return env

    try:
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; baseline {args.baseline}, new {ROOT}; "
              f"{args.runs} runs each, interleaved")
        bytecode = "compiled from source in every process" if args.source_only else "bytecode cached"
        print(f"modules: {bytecode}\n")
        for checkout in (args.baseline, ROOT):  # untimed: writes the bytecode; fills the warm cache
            run_command(_launcher(checkout) + list(COMMANDS["check"]), env_for(str(warm_cache)), neutral)
            if "serve" in commands:
                run_serve(_launcher(checkout), env_for(str(warm_cache)), neutral)
        figures: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(args.runs):
            for command in commands:
                for name, (checkout, cache) in variants.items():
                    argv = _launcher(checkout)
                    env = env_for(cache)
                    if command == "serve":
                        got = run_serve(argv, env, neutral)
                    else:
                        got = run_command(argv + list(COMMANDS[command]), env, neutral)
                    figures.setdefault((command, name), []).append(got)
        print(f"{'command':<9} {'variant':<17} {'CPU s':>7} {'ratio':>7} {'wall s':>7} {'ratio':>7}   "
              f"(medians; CPU min..max)")
        for command in commands:
            base = figures[(command, "baseline")]
            base_cpu = statistics.median(c for c, _ in base)
            base_wall = statistics.median(w for _, w in base)
            for name in variants:
                got = figures[(command, name)]
                cpu = statistics.median(c for c, _ in got)
                wall = statistics.median(w for _, w in got)
                lo, hi = min(c for c, _ in got), max(c for c, _ in got)
                what = "to ready" if command == "serve" else ""
                print(f"{command:<9} {name:<17} {cpu:7.3f} {cpu / base_cpu:6.2f}x {wall:7.3f} {wall / base_wall:6.2f}x"
                      f"   ({lo:.3f}..{hi:.3f}) {what}")
            print()
        print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
              f"(wall time grows with it; CPU time far less)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
