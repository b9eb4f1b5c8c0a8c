"""Reading the shared evaluation turns (../shared/eval/) for the benchmarks."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVAL_DIR = ROOT.parent / "shared" / "eval"


def read_jsonl(path: Path):
    with Path(path).open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def sgd_turns(eval_dir: Path = EVAL_DIR) -> list[tuple[str, list[str]]] | None:
    """SGD user utterances, each with the previous user turn as history; None when absent."""
    path = Path(eval_dir) / "sgd_user_turns.jsonl"
    if not path.exists():
        return None
    out = []
    for row in read_jsonl(path):
        prev = row.get("prev_user_utterance")
        out.append((row["utterance"], [prev] if prev else []))
    return out
