"""``cleo-rules demo``: the bundled sample memory and conversation, end to end."""

from __future__ import annotations

import contextlib
import io
import json
import re

import pytest

from cleo_rules.cli import main
from cleo_rules.resources import data_dir
from cleo_rules.retrieval import MemoryStore
from cleo_rules.trace import read_traces

pytestmark = pytest.mark.model


def conversation():
    with (data_dir() / "demo_conversation.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def memory_ids():
    with (data_dir() / "sample_memory.jsonl").open(encoding="utf-8") as fh:
        return {json.loads(line)["id"] for line in fh if line.strip()}


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory, embedder):
    """Run the demo once into a kept directory; return (stdout, stderr, directory).

    Stores opened by the demo reuse the session's model instead of loading another.
    """
    original = MemoryStore.open.__func__

    def open_(cls, path, *args, **kwargs):
        kwargs["embedder"] = embedder
        return original(cls, path, **kwargs)

    mp = pytest.MonkeyPatch()
    mp.setattr(MemoryStore, "open", classmethod(open_))
    path = tmp_path_factory.mktemp("demo")
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            with pytest.raises(SystemExit) as exc:
                main(["demo", "--db", str(path)])
    finally:
        mp.undo()
    assert exc.value.code == 0, err.getvalue()
    return out.getvalue(), err.getvalue(), path


def blocks(stdout):
    return re.split(r"\n(?=Turn \d+  user: )", stdout.strip())


def test_every_turn_is_printed_with_kind_rule_and_query(demo_run):
    stdout, stderr, _ = demo_run
    turns = conversation()
    parts = blocks(stdout)
    assert len(parts) == len(turns)
    for n, (part, row) in enumerate(zip(parts, turns), 1):
        assert part.startswith(f"Turn {n}  user: {row['message']}")
        assert re.search(r"^  kind: (skip|correction|follow_up|substantive)   rule: \S+$", part, re.M)
        assert re.search(r"^  searched", part, re.M)
    assert "items embedded" in stderr and "48 added" in stderr


def test_recalled_items_carry_title_and_date(demo_run):
    stdout, _, _ = demo_run
    items = re.findall(r"^  \d\. (.+) \((\d{4}-\d\d-\d\d)\)  \[(conversation|document) (\S+), score", stdout, re.M)
    assert len(items) >= 10
    ids = memory_ids()
    assert all(item_id in ids for *_, item_id in items)


def test_the_conversation_shows_each_kind(demo_run):
    stdout, _, _ = demo_run
    parts = blocks(stdout)
    kinds = [re.search(r"kind: (\S+)", p).group(1) for p in parts]
    assert {"skip", "correction", "follow_up", "substantive"} <= set(kinds)
    for part, kind in zip(parts, kinds):
        if kind == "skip":
            assert "searched: nothing (no memory search was made for this turn)" in part
        if kind == "follow_up":
            assert "searched (combined with an earlier message):" in part
        if kind == "correction":
            assert "combined with the earlier message, it would have recalled:" in part
            assert "searched (combined" not in part


def test_the_sample_conversation_refers_to_the_sample_memory(demo_run):
    stdout, _, _ = demo_run
    first = blocks(stdout)[0]
    assert "Comparing the two van insurance quotes (2024-02-19)" in first


def test_kept_directory_holds_the_traces(demo_run):
    _, stderr, path = demo_run
    assert str(path) in stderr
    with MemoryStore.open(path) as store:
        traces = list(read_traces(store))
    assert len(traces) == len(conversation())
    assert [t["message"] for t in traces] == [row["message"] for row in conversation()]
    assert all((t["query"] is None) == (t["kind"] == "skip") for t in traces)
