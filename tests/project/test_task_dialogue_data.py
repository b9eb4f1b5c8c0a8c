"""The task-dialogue dev set (``bench/data/task_dialogue/``) is what its README says it is.

Every line parses; every conversation reads as a history of the library's
format (``read_history`` accepts it, each item a ``{role, content}`` of the
user or the assistant); each user turn has its answer, the assistant turn
after it, and a service; every domain of the SGD train split is present
with turns enough to report; the file is the one the README's hash names.
The rows ``bench/evaldata.py`` expands it into for ``bench/eval_dialogue.py``
carry the same answers and role-tagged turns.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from collections import Counter

import pytest

from cleo_rules.history import read_history

from helpers import ROOT

DATA = ROOT / "bench" / "data" / "task_dialogue"
FILE = DATA / "sgd_train.jsonl"
#: the 16 domains of the SGD train split's 26 services
DOMAINS = {"Banks", "Buses", "Calendar", "Events", "Flights", "Homes", "Hotels", "Media", "Movies", "Music",
           "RentalCars", "Restaurants", "RideSharing", "Services", "Travel", "Weather"}
MIN_TURNS_PER_DOMAIN = 50


def _evaldata():
    spec = importlib.util.spec_from_file_location("evaldata", ROOT / "bench" / "evaldata.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def conversations() -> list[dict]:
    with FILE.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def test_every_conversation_is_a_role_tagged_history(conversations):
    assert len(conversations) >= 300
    for conv in conversations:
        turns = conv["turns"]
        assert all(set(t) == {"role", "content"} and t["role"] in ("user", "assistant") for t in turns), conv["conv_id"]
        said = read_history(turns)
        assert [s.role for s in said] == [t["role"] for t in turns], conv["conv_id"]


def test_each_user_turn_has_its_answer_and_a_service(conversations):
    for conv in conversations:
        turns = conv["turns"]
        users = [i for i, t in enumerate(turns) if t["role"] == "user"]
        assert users and len(conv["user_services"]) == len(users), conv["conv_id"]
        for i in users:
            assert turns[i]["content"].strip(), conv["conv_id"]
            assert i + 1 < len(turns) and turns[i + 1]["role"] == "assistant", (conv["conv_id"], i)
            assert turns[i + 1]["content"].strip(), (conv["conv_id"], i)
        assert set(conv["user_services"]) <= set(conv["services"]), conv["conv_id"]


def test_every_domain_is_present_with_turns_to_report(conversations):
    turns = Counter(s.rsplit("_", 1)[0] for conv in conversations for s in conv["user_services"])
    assert set(turns) == DOMAINS
    assert min(turns.values()) >= MIN_TURNS_PER_DOMAIN, turns
    assert len({conv["conv_id"] for conv in conversations}) == len(conversations)


def test_only_the_train_split_is_read(conversations):
    assert {conv["conv_id"].split("/")[0] for conv in conversations} == {"train"}
    assert all(re.fullmatch(r"train/dialogues_\d{3}\.json", conv["source_file"]) for conv in conversations)


def test_the_file_is_the_one_the_readme_names():
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    named = re.search(r"`sgd_train\.jsonl` \|[^\n]*`([0-9a-f]{64})`", readme)
    assert named is not None
    assert hashlib.sha256(FILE.read_bytes()).hexdigest() == named.group(1)


def test_the_evaluation_rows_carry_each_turn_its_answer(conversations):
    rows = _evaldata().task_dialogue_rows(FILE)
    assert len(rows) == sum(len(conv["user_services"]) for conv in conversations)
    for row in rows[:500]:
        history = row["turns"]
        assert read_history(history) is not None
        assert row["history"] == [t["content"] for t in history if t["role"] == "user"]
        assert row["answer"] and row["domain"] in DOMAINS
        assert row["prev_system"] == next((t["content"] for t in reversed(history) if t["role"] == "assistant"),
                                          None)
    first = rows[0]
    conv = conversations[0]
    assert (first["message"], first["answer"], first["turns"]) == (conv["turns"][0]["content"],
                                                                   conv["turns"][1]["content"], [])
