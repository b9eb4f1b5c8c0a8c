"""Write the hashes of the evaluation sets' messages (tests/data/dev_message_hashes.txt).

The pack's rules, examples, lexicons and corpus must not copy a message of the
evaluation data (``../shared/eval``: the dialogue sets' ``message`` fields,
the SGD ``utterance``, the TREC CAsT ``raw_utterance`` of each line, and the
business-register cases' ``message`` with the user turns of their
``history``, which are written for that set alone).
The data is not in the repository, so ``tests/project/test_dev_messages.py`` checks
against these hashes instead, which it can do anywhere.

A message's key is its text case-folded, its inner white space collapsed and
any punctuation or white space stripped at both ends ("Same for Leeds!" and
"same for leeds" share one); the file holds the first 16 hexadecimal digits
of the SHA-256 of each distinct key, sorted, one a line (a chance collision
between two different keys among ten thousand is about one in 10^11).

Usage, from the repository::

    .venv/bin/python scripts/dev_message_hashes.py [--eval DIR]           # writes the file
    .venv/bin/python scripts/dev_message_hashes.py [--eval DIR] --check   # exit 1 if it is out of date

``--eval`` defaults to ``$CLEO_RULES_EVAL_DIR``, else ``../shared/eval``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "dev_message_hashes.txt"
DIGITS = 16
#: (file under the evaluation folder, the field that holds the user's message)
SOURCES = (("dialogue/canard.jsonl", "message"), ("dialogue/gecor_camrest.jsonl", "message"),
           ("sgd_user_turns.jsonl", "utterance"), ("cast_turns.jsonl", "raw_utterance"),
           ("business/cases.jsonl", "message"))
#: files whose lines' ``history`` user turns (strings, or ``{"role": "user"}`` turns) are hashed too
WITH_HISTORY = frozenset({"business/cases.jsonl"})
_ENDS = re.compile(r"^[\W_]+|[\W_]+$")
_SPACE = re.compile(r"\s+")


def key(text: str) -> str:
    """``text`` case-folded, inner white space collapsed, punctuation and white space stripped at both ends."""
    return _ENDS.sub("", _SPACE.sub(" ", text.casefold()))


def digest(text: str) -> str:
    """The hash the file holds for a message with this text."""
    return hashlib.sha256(key(text).encode("utf-8")).hexdigest()[:DIGITS]


def messages(eval_dir: Path):
    """Every message of the evaluation files (a missing file is an error: the set would be incomplete)."""
    for name, field in SOURCES:
        with (eval_dir / name).open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    row = json.loads(line)
                    if isinstance(row[field], str):
                        yield row[field]
                    if name in WITH_HISTORY:
                        yield from _user_turns(row.get("history") or ())


def _user_turns(history):
    """The user messages of a role-tagged history: its strings and its ``{"role": "user"}`` turns' contents."""
    for turn in history:
        if isinstance(turn, str):
            yield turn
        elif isinstance(turn, dict) and turn.get("role") == "user" and isinstance(turn.get("content"), str):
            yield turn["content"]


def hashes(eval_dir: Path) -> list[str]:
    """The sorted, distinct hashes of the messages whose key is not empty."""
    return sorted({digest(m) for m in messages(eval_dir) if key(m)})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    default = os.environ.get("CLEO_RULES_EVAL_DIR") or str(ROOT.parent / "shared" / "eval")
    ap.add_argument("--eval", type=Path, default=Path(default))
    ap.add_argument("--check", action="store_true", help="exit 1 if the file differs from the data")
    args = ap.parse_args(argv)
    text = "".join(h + "\n" for h in hashes(args.eval))
    if args.check:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print(f"{OUT.relative_to(ROOT)} is {'up to date' if same else 'out of date: run without --check'}")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}: {text.count(chr(10))} hashes from {args.eval}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
