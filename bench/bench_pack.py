"""What a runtime pays for a rule pack, and how that grows with the pack.

Prints, for the default pack (cleo-en) and for a synthetic pack built from it
with about eight times its rules:

* **cold start**: wall time of ``cleo-rules classify "..."`` in a new
  process, from process start to the answer printed (median of ``--runs``);
  that includes compiling the pack and checking every example;
* **compile**: :func:`compile_pack` (YAML, schema, lints, compile,
  examples), median of ``--runs``, with ``regex``'s pattern cache emptied
  before each run as in a new process (it holds a few hundred patterns: the
  default pack would be served from it and the big one not);
* **classify**: time per message, the best of ``--rounds`` calls for each
  message, then the median (and 95th percentile) over the message set: the
  SGD user turns in ``../shared/eval/`` when present, else the pack's own
  examples, counterexamples and request forms, each with the previous
  message as history, as a runtime calls it.

The synthetic pack keeps the default pack and adds nine clones of every
vocabulary set, correction and follow-up pattern under new ids, except the
patterns guarded by the text as typed or the lexicon (``unless_name``,
``unless_name_before``, ``head_in``, ``requires_antecedent``: a cipher keeps
neither capitals nor the lexicon's words); referent rules, the lexicon and
the slots are not cloned. Each clone spells every word in a
script of its own: clone *k* maps the 26 ASCII letters one-to-one onto 26
lower-case letters no other clone uses, in its patterns, vocabulary words,
examples, counterexamples and request forms alike. A letter-for-letter
bijection keeps every pattern's structure (alternations, optional letters,
lookarounds, quantifiers) and every rule's examples valid, while no clone
matches another clone's words or the original's. Clone examples are
non-ASCII, so they take the slower normalisation path at compile time.

It also checks that ``cleo-rules classify`` never imports torch.

Usage: python bench/bench_pack.py [--runs N] [--rounds N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

import regex
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cleo_rules.pack.compile import compile_pack  # noqa: E402
from cleo_rules.reading.load import MANIFEST  # noqa: E402
from cleo_rules.resources import rules_dir  # noqa: E402
from evaldata import sgd_turns  # noqa: E402

CLONES = 9  # the synthetic pack is the default pack plus nine clones of most of its rules
BIN = Path(sys.executable).parent
CLI = BIN / "cleo-rules"
MESSAGE = "Yes, go with the second one."
HISTORY = "Compare the two van insurance quotes"


# -- the synthetic pack ----------------------------------------------------------

def _alphabet_pool() -> list[str]:
    """Lower-case letters that normalisation leaves alone and ``\\w`` matches."""
    pool = []
    for cp in range(0xE0, 0x2000):
        c = chr(cp)
        if (c.isalpha() and c.islower() and unicodedata.normalize("NFKC", c) == c and c.casefold() == c
                and not unicodedata.combining(c) and regex.fullmatch(r"\w", c) and c.upper() != c):
            pool.append(c)
    return pool


class Cipher:
    """Clone ``k``'s letter-for-letter spelling of text and of regex patterns."""

    _TOKEN = regex.compile(r"\\.|\[(?:\\.|[^\]\\])*\]|\(\?[a-zA-Z]+[:)]|\{\d*(?:,\d*)?\}|.", regex.S)

    def __init__(self, letters: list[str]):
        assert len(letters) == 26
        self.map = {chr(ord("a") + i): c for i, c in enumerate(letters)}
        self.map.update({chr(ord("A") + i): c for i, c in enumerate(letters)})

    def text(self, s: str) -> str:
        return "".join(self.map.get(ch, ch) for ch in s)

    def _klass(self, body: str) -> str:
        out, i = [], 0
        while i < len(body):
            ch = body[i]
            if ch == "\\" and i + 1 < len(body):
                out.append(body[i:i + 2])
                i += 2
            elif i + 2 < len(body) and body[i + 1] == "-" and ch.isascii() and ch.isalpha():
                lo, hi = ord(ch), ord(body[i + 2])
                out.extend(self.map.get(chr(c), chr(c)) for c in range(lo, hi + 1))
                i += 3
            else:
                out.append(self.map.get(ch, ch))
                i += 1
        return "".join(out)

    def pattern(self, p: str) -> str:
        out = []
        for m in self._TOKEN.finditer(p):
            tok = m.group()
            if tok.startswith("\\") or tok.startswith("(?") or tok.startswith("{"):
                out.append(tok)
            elif tok.startswith("[") and len(tok) > 1:
                neg = tok.startswith("[^")
                body = tok[2:-1] if neg else tok[1:-1]
                out.append(("[^" if neg else "[") + self._klass(body) + "]")
            else:
                out.append(self.map.get(tok, tok))
        return "".join(out)


def _clone_item(item: dict, cipher: Cipher, k: int) -> dict:
    out = {}
    for key, value in item.items():
        if key == "id":
            out[key] = f"{value}.clone{k}"
        elif key == "pattern":
            out[key] = [cipher.pattern(p) for p in value] if isinstance(value, list) else cipher.pattern(value)
        elif key == "token_patterns":
            out[key] = [cipher.pattern(p) for p in value]
        elif key in ("words", "examples", "counterexamples", "request_forms"):
            out[key] = [_clone_example(v, cipher) for v in value]
        else:  # descriptions, roles, limits, corpus templates (validated, not compiled): as they are
            out[key] = value
    return out


# Guards that read the message as typed (capitals make names) or the lexicon's words: a cipher keeps neither
UNCLONED = ("unless_name", "unless_name_before", "head_in", "requires_antecedent")


def _reads_case_or_lexicon(item: dict) -> bool:
    return any(item.get(key) for key in UNCLONED)


def _clone_example(value, cipher: Cipher):
    """An example in the clone's spelling: a string, or a conversation's message and turns."""
    if not isinstance(value, dict):
        return cipher.text(str(value))
    turns = [cipher.text(h) if isinstance(h, str) else {**h, "content": cipher.text(h["content"])}
             for h in value.get("history") or []]
    return {**value, "message": cipher.text(value["message"]), "history": turns}


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data):  # rule files may not use anchors
        return True


def synthetic_pack(target: Path, clones: int = CLONES) -> Path:
    """Write the default pack plus ``clones`` ciphered copies of each rule into ``target``."""
    src = rules_dir()
    target.mkdir(parents=True, exist_ok=True)
    manifest = yaml.safe_load((src / MANIFEST).read_text(encoding="utf-8"))
    pool = _alphabet_pool()
    assert len(pool) >= 26 * clones, "not enough letters for the clones"
    ciphers = [Cipher(pool[26 * k: 26 * k + 26]) for k in range(clones)]
    for name in manifest["files"]:
        data = yaml.safe_load((src / name).read_text(encoding="utf-8"))
        kind = data.get("kind")
        key = "sets" if kind == "vocabulary" else "rules" if kind in ("follow_ups", "corrections") else None
        if key:
            items = list(data[key])
            for k, cipher in enumerate(ciphers, 1):
                items += [_clone_item(item, cipher, k) for item in data[key] if not _reads_case_or_lexicon(item)]
            data[key] = items
        (target / name).write_text(yaml.dump(data, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=200),
                                   encoding="utf-8")
    manifest["pack"] = "cleo-en-x10"
    (target / MANIFEST).write_text(yaml.dump(manifest, Dumper=_Dumper, allow_unicode=True, sort_keys=False),
                                   encoding="utf-8")
    return target


# -- measurements -------------------------------------------------------------------

def cold_start(pack_dir, runs: int) -> float:
    """Median seconds from process start to the printed answer of ``cleo-rules classify``."""
    args = [str(CLI), "classify", MESSAGE, "-H", HISTORY]
    if pack_dir is not None:
        args += ["--pack", str(pack_dir)]
    times = []
    for i in range(runs + 1):
        t0 = time.perf_counter()
        proc = subprocess.run(args, capture_output=True, text=True)
        elapsed = time.perf_counter() - t0
        if proc.returncode != 0 or "kind:    follow_up" not in proc.stdout:
            raise SystemExit(f"cleo-rules classify failed:\n{proc.stdout}{proc.stderr}")
        if i:  # the first run warms the file cache
            times.append(elapsed)
    return statistics.median(times)


def imports_torch() -> list[str]:
    code = ("import sys\nfrom cleo_rules.cli import main\n"
            f"try:\n    main(['classify', {MESSAGE!r}, '-H', {HISTORY!r}])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules),"
            " file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(proc.stderr.strip().splitlines()[-1].replace("'", '"'))


def compile_time(pack_dir, runs: int):
    times = []
    pack = None
    for _ in range(runs):
        regex.purge()  # as in a new process: the default pack would otherwise hit regex's cache and the big one not
        t0 = time.perf_counter()
        pack = compile_pack(pack_dir)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), pack


def messages(eval_dir: Path, pack) -> tuple[str, list[tuple[str, list[str]]]]:
    out = sgd_turns(eval_dir)
    if out is not None:
        return f"{len(out)} SGD user turns", out
    texts = [t if isinstance(t, str) else t["message"]
             for r in pack.rules for t in r.examples + r.counterexamples + tuple(getattr(r, "request_forms", ()))]
    return f"{len(texts)} examples of the default pack", [(t, [HISTORY]) for t in texts]


def classify_times(pack, items, rounds: int) -> tuple[float, float, float]:
    """(median, p95, mean) over messages of the best-of-``rounds`` seconds per call."""
    clock = time.perf_counter_ns
    for message, history in items[:200]:
        pack.classify(message, history)
    best = []
    for message, history in items:
        b = None
        for _ in range(rounds):
            t0 = clock()
            pack.classify(message, history)
            t = clock() - t0
            b = t if b is None or t < b else b
        best.append(b / 1e9)
    best.sort()
    return statistics.median(best), best[int(len(best) * 0.95)], statistics.fmean(best)


def _size(pack_dir: Path) -> int:
    return sum(f.stat().st_size for f in Path(pack_dir).iterdir() if f.suffix in (".yaml", ".yml"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="cold starts and compiles per pack (median)")
    ap.add_argument("--rounds", type=int, default=5, help="calls per message (best of)")
    ap.add_argument("--eval", type=Path, default=ROOT.parent / "shared" / "eval")
    ap.add_argument("--keep", type=Path, default=None, help="write the synthetic pack here and keep it")
    args = ap.parse_args(argv)

    torch = imports_torch()
    print(f"cleo-rules classify imports torch/transformers: {'yes ' + ', '.join(torch) if torch else 'no'}")
    assert not torch, f"cleo-rules classify imported {torch}"

    tmp = None
    if args.keep is not None:
        if args.keep.exists():
            shutil.rmtree(args.keep)
        big_dir = synthetic_pack(args.keep)
    else:
        tmp = tempfile.mkdtemp(prefix="cleo-pack-x10-")
        big_dir = synthetic_pack(Path(tmp) / "pack")
    try:
        small_dir = rules_dir()
        small_compile, small = compile_time(small_dir, args.runs)
        big_compile, big = compile_time(big_dir, args.runs)
        what, items = messages(args.eval, small)
        # the same messages at both sizes; a clone never matches them, so decisions must agree
        disagree = sum(1 for m, h in items if small.classify(m, h).kind != big.classify(m, h).kind)
        small_cls = classify_times(small, items, args.rounds)
        big_cls = classify_times(big, items, args.rounds)
        small_cold = cold_start(None, args.runs)
        big_cold = cold_start(big_dir, args.runs)
        small_bytes, big_bytes = _size(small_dir), _size(big_dir)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)

    patterns = lambda p: len(p.corrections) + len(p.follow_ups)  # noqa: E731
    rows = [
        ("rules (corrections + follow-ups + vocabulary sets)", len(small.rules), len(big.rules), "{:d}"),
        ("patterns", patterns(small), patterns(big), "{:d}"),
        ("vocabulary entries", sum(len(v.words) for v in small.vocab_sets),
         sum(len(v.words) for v in big.vocab_sets), "{:d}"),
        ("rule file bytes", small_bytes, big_bytes, "{:,d}"),
        ("cold start, classify (ms, median)", small_cold * 1e3, big_cold * 1e3, "{:.0f}"),
        ("compile + examples (ms, median)", small_compile * 1e3, big_compile * 1e3, "{:.0f}"),
        ("classify per message (us, median)", small_cls[0] * 1e6, big_cls[0] * 1e6, "{:.1f}"),
        ("classify per message (us, p95)", small_cls[1] * 1e6, big_cls[1] * 1e6, "{:.1f}"),
        ("classify per message (us, mean)", small_cls[2] * 1e6, big_cls[2] * 1e6, "{:.1f}"),
    ]
    print(f"messages: {what}, best of {args.rounds} calls each, with the previous turn as history; "
          f"{args.runs} runs per cold start and compile")
    print(f"default pack: {small.name} {small.version} ({small.content_hash}); "
          f"synthetic: {big.name} ({big.content_hash}), the default plus {CLONES} clones of every rule it can clone")
    print()
    w = max(len(r[0]) for r in rows)
    print(f"{'':{w}}  {'default':>10}  {'big pack':>10}  {'ratio':>7}")
    for label, a, b, fmt in rows:
        print(f"{label:{w}}  {fmt.format(a):>10}  {fmt.format(b):>10}  {b / a:>6.2f}x")
    print()
    print(f"decisions that differ between the packs on these messages: {disagree}")
    grow = big_cls[0] / small_cls[0]
    size = len(big.rules) / len(small.rules)
    verdict = "far slower than" if grow < size / 3 else "NOT far slower than"
    print(f"classify cost grew {grow:.2f}x for a {size:.0f}x pack: {verdict} the pack")
    return 0


if __name__ == "__main__":
    sys.exit(main())
