"""The README's query examples: each `cleo-rules classify` block prints what the code gives, and the
"second one" example, searched in the sample memory, recalls the van-insurance conversation first."""

from __future__ import annotations

import re
import shlex

import pytest
from click.testing import CliRunner

from cleo_rules import load_pack
from cleo_rules.cli import cli
from cleo_rules.resources import data_dir

from helpers import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def classify_examples():
    """``(command arguments, lines shown)`` of every console example that runs `cleo-rules classify` with the
    bundled pack."""
    out = []
    for block in re.findall(r"```console\n(.*?)```", README, re.S):
        for chunk in re.split(r"\n(?=\$ )", block.strip()):
            lines = chunk.replace("\\\n", " ").splitlines()
            if not lines[0].startswith("$ cleo-rules classify "):
                continue
            packs = [line for line in lines[1:] if line.startswith("pack:")]
            if packs and "(bundled)" not in packs[0]:
                continue  # run in a team pack's directory (the README's section on building on a pack)
            shown = [line for line in lines[1:] if line.strip() and not line.startswith("pack:")]
            out.append((shlex.split(lines[0][2:])[2:], shown))
    return out


EXAMPLES = classify_examples()


def test_the_readme_has_the_query_examples():
    assert len(EXAMPLES) >= 4
    assert any("Tell me more." in args for args, _ in EXAMPLES)


@pytest.mark.parametrize("args, shown", EXAMPLES, ids=[" ".join(a)[:60] for a, _ in EXAMPLES])
def test_each_readme_classify_example_prints_what_it_shows(args, shown):
    result = CliRunner().invoke(cli, ["classify", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    printed = [line for line in result.output.splitlines() if line.strip() and not line.startswith("pack:")]
    assert printed == shown


def test_the_second_one_recalls_the_van_insurance_conversation_first(tmp_path, embedder):
    from cleo_rules.retrieval.store import MemoryStore

    history = ["Compare the two van insurance quotes",
               {"role": "assistant", "content": "Hadley quotes 2,140 a year and Cresswell 1,865."}]
    d = load_pack().classify("Yes, go with the second one.", history)
    with MemoryStore.open(tmp_path / "memory", embedder) as store:
        store.ingest_jsonl(data_dir() / "sample_memory.jsonl")
        shaped = store.search(d.query, k=3).results
        bare = store.search("Cresswell\nYes, go with the second one.", k=3).results
    assert shaped[0].id == "conv-2024-02-van-insurance-quotes", [r.id for r in shaped]
    # the referent alone (the query before the subject was kept) does not put it first
    assert bare[0].id != "conv-2024-02-van-insurance-quotes"
