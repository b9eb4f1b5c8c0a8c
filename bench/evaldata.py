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


TASK_DIALOGUE_DIR = ROOT / "bench" / "data" / "task_dialogue"


def domain_of(service: str) -> str:
    """An SGD service's domain: its name without the version (``RentalCars_2`` -> ``RentalCars``)."""
    return service.rsplit("_", 1)[0]


def task_dialogue_rows(path: Path) -> list[dict]:
    """The task conversations of ``bench/data/task_dialogue/`` (one per line) as one row per user turn.

    A row has the dialogue sets' fields: ``message``, ``history`` (the earlier
    user messages), ``turns`` (the whole conversation before it, role-tagged),
    ``answer`` (the assistant turn right after it, None if none),
    ``prev_system`` (the last assistant turn before it), and ``turn`` (its
    number among the user turns, from 1), with its ``service`` and ``domain``.
    There is no label and no rewrite.
    """
    out = []
    for conv in read_jsonl(path):
        turns, services = conv["turns"], iter(conv["user_services"])
        number = 0
        for i, t in enumerate(turns):
            if t["role"] != "user":
                continue
            number += 1
            before = turns[:i]
            nxt = turns[i + 1] if i + 1 < len(turns) else None
            service = next(services)
            out.append({"dataset": conv["dataset"], "conv_id": conv["conv_id"], "turn": number,
                        "message": t["content"], "history": [b["content"] for b in before if b["role"] == "user"],
                        "turns": before,
                        "answer": nxt["content"] if nxt is not None and nxt["role"] == "assistant" else None,
                        "prev_system": next((b["content"] for b in reversed(before) if b["role"] == "assistant"),
                                            None),
                        "service": service, "domain": domain_of(service)})
    return out
