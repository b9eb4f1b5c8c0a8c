"""Build ``bench/data/task_dialogue/sgd_train.jsonl``: whole task conversations of every SGD service, role-tagged.

Reads the train split of the Schema-Guided Dialogue dataset (Rastogi et al.,
AAAI 2020; GitHub ``google-research-datasets/dstc8-schema-guided-dialogue``,
CC BY-SA 4.0) and writes one conversation per line::

    {"dataset": "sgd_train", "conv_id": "train/1_00000", "source_file": "train/dialogues_001.json",
     "services": [...], "turns": [{"role": "user" | "assistant", "content": str}, ...],
     "user_services": [service of each user turn, in order]}

``turns`` is the whole dialogue in the library's role-tagged history format
(SGD's ``USER`` / ``SYSTEM`` speakers as ``user`` / ``assistant``). SGD
dialogues alternate and end with the system, so every user turn's answer is
the assistant turn after it. A user turn's service is the service of that
answer's frame (a system turn has one frame): the turn that switches service,
"That's fine. Can you also get me a cab there?", is counted under the service
it asks for. Its domain is the service without the version suffix
(``Restaurants_2`` -> ``Restaurants``).

Sample: for each of the split's services in name order, up to ``--per-service``
dialogues that involve it and were not drawn for an earlier service, drawn
with ``random.Random(--seed)`` from all such dialogues in the files read, so
every service, and every domain, is present. Only the train split is read
(the SGD dev and test splits are the ones ``../shared/eval/sgd_user_turns.jsonl``
draws from). The snapshot this was built from lacks some train files
(``ABSENT``); they are left out by name so that a full checkout gives the same
sample.

Usage::

    python bench/build_task_dialogue.py SOURCE [--out PATH] [--per-service N] [--seed S]

``SOURCE`` is a checkout of the repository or its bare git directory (read at
``HEAD``, or ``--rev``).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "data" / "task_dialogue" / "sgd_train.jsonl"
PER_SERVICE = 15
SEED = 31
#: train files missing from the snapshot the committed file was built from (left out everywhere, for a same sample)
ABSENT = frozenset(f"train/dialogues_{n:03d}.json" for n in (
    37, 52, 53, 54, 55, 56, 58, 60, 66, 68, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85,
    93, 94, 104, 117, 118))
SPEAKERS = {"USER": "user", "SYSTEM": "assistant"}


class Source:
    """The repository's files, from a checkout or a bare git directory."""

    def __init__(self, path: Path, rev: str = "HEAD"):
        self.path, self.rev = Path(path), rev
        self.checkout = (self.path / "train").is_dir()

    def _git(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "--git-dir", str(self.path), *args], capture_output=True, text=True)

    def commit(self) -> str | None:
        p = self._git("rev-parse", self.rev) if not self.checkout else subprocess.run(
            ["git", "-C", str(self.path), "rev-parse", self.rev], capture_output=True, text=True)
        return p.stdout.strip() if p.returncode == 0 else None

    def train_files(self) -> list[str]:
        if self.checkout:
            names = [f"train/{p.name}" for p in (self.path / "train").glob("dialogues_*.json")]
        else:
            names = [n for n in self._git("ls-tree", "--name-only", self.rev, "train/").stdout.split()
                     if Path(n).name.startswith("dialogues_")]
        return sorted(n for n in names if n not in ABSENT)

    def read(self, name: str) -> list[dict]:
        if self.checkout:
            return json.loads((self.path / name).read_text(encoding="utf-8"))
        p = self._git("show", f"{self.rev}:{name}")
        if p.returncode:
            raise SystemExit(f"{name} is not readable in {self.path} ({p.stderr.strip()}); add it to ABSENT "
                             "only if the committed sample is rebuilt and its README updated")
        return json.loads(p.stdout)


def conversation(dialogue: dict, source_file: str) -> dict:
    """One SGD dialogue as a role-tagged conversation with the service of each user turn."""
    turns, user_services = [], []
    raw = dialogue["turns"]
    for i, t in enumerate(raw):
        turns.append({"role": SPEAKERS[t["speaker"]], "content": t["utterance"].strip()})
        if t["speaker"] == "USER":
            answer = raw[i + 1] if i + 1 < len(raw) else None
            frames = (answer or t)["frames"]
            user_services.append(frames[-1]["service"])
    return {"dataset": "sgd_train", "conv_id": f"train/{dialogue['dialogue_id']}", "source_file": source_file,
            "services": list(dialogue["services"]), "turns": turns, "user_services": user_services}


def sample(dialogues: list[tuple[str, dict]], per_service: int, seed: int) -> list[tuple[str, dict]]:
    """Up to ``per_service`` dialogues per service, in service-name order, none drawn twice; source order kept."""
    rng = random.Random(seed)
    services = sorted({s for _, d in dialogues for s in d["services"]})
    taken: set[int] = set()
    for service in services:
        pool = [i for i, (_, d) in enumerate(dialogues) if service in d["services"] and i not in taken]
        taken.update(rng.sample(pool, min(per_service, len(pool))))
    return [dialogues[i] for i in sorted(taken)]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("source", type=Path, help="a checkout of dstc8-schema-guided-dialogue or its git directory")
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--per-service", type=int, default=PER_SERVICE)
    ap.add_argument("--seed", type=int, default=SEED)
    args = ap.parse_args(argv)
    src = Source(args.source, args.rev)
    files = src.train_files()
    dialogues = [(name, d) for name in files for d in src.read(name)]
    picked = sample(dialogues, args.per_service, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as fh:
        for name, d in picked:
            fh.write(json.dumps(conversation(d, name), ensure_ascii=False) + "\n")
    users = sum(len(conversation(d, n)["user_services"]) for n, d in picked)
    print(f"source {args.source} at {src.commit()}: {len(files)} train files, {len(dialogues)} dialogues",
          file=sys.stderr)
    print(f"wrote {args.out}: {len(picked)} dialogues, {users} user turns "
          f"({args.per_service} per service, seed {args.seed})", file=sys.stderr)


if __name__ == "__main__":
    main()
