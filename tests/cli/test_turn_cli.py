"""``cleo-rules turn``: JSON Lines in, one JSON line per turn out."""

from __future__ import annotations

import io
import json

import pytest

from cleo_rules.cli import main
from cleo_rules.retrieval import MemoryStore
from cleo_rules.trace import TABLE, read_traces

from helpers.memory import fill

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory, embedder):
    path = tmp_path_factory.mktemp("memory")
    with MemoryStore.open(path, embedder=embedder) as store:
        fill(store)
    return path


@pytest.fixture(autouse=True)
def shared_model(monkeypatch, embedder):
    """Stores opened by the CLI reuse the session's model instead of loading another."""
    original = MemoryStore.open.__func__

    def open_(cls, path, *args, **kwargs):
        kwargs["embedder"] = embedder
        return original(cls, path, **kwargs)

    monkeypatch.setattr(MemoryStore, "open", classmethod(open_))


def run(capsys, monkeypatch, argv, stdin=""):
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def lines(*rows):
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_jsonl_turns(store_dir, capsys, monkeypatch, default_pack):
    stdin = lines(
        {"message": "Compare the two van insurance quotes", "history": []},
        {"message": "Yes, go with the second one.", "history": ["Compare the two van insurance quotes"]},
        {"message": "Yes."},
        {"message": "We tried that one already.", "history": ["Which engineer fixed the office boiler?"]},
    )
    code, out, err = run(capsys, monkeypatch, ["turn", "--db", str(store_dir), "--jsonl", "--k", "2"], stdin + "\n")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["kind"] for r in rows] == ["substantive", "follow_up", "skip", "correction"]
    first, follow, skip, correction = rows
    assert set(first) >= {"kind", "rule", "query", "results", "context"}
    assert len(first["results"]) == 2
    for result in first["results"]:
        assert set(result) == {"source", "id", "item", "title", "date", "text", "score"}
        assert result["source"] in ("conversation", "document")
        assert result["item"].startswith(result["id"] + "#")
        assert f"\"{result['title']}\" ({result['date']})" in first["context"]
    assert follow["query"] == "Compare the two van insurance quotes\nYes, go with the second one."
    assert skip["query"] is None and skip["results"] == [] and skip["context"] == default_pack.context["skipped"]
    assert correction["query"] == "We tried that one already." and correction["anchor"] is None
    with MemoryStore.open(store_dir) as store:
        traced = list(read_traces(store))[-4:]
    assert [t["query"] for t in traced] == [r["query"] for r in rows]


def test_single_message_with_history_and_timings(store_dir, capsys, monkeypatch):
    code, out, _ = run(capsys, monkeypatch, ["turn", "--db", str(store_dir), "Tell me more.",
                                             "-H", "Which engineer fixed the office boiler?", "--timings"])
    assert code == 0
    row = json.loads(out)
    assert row["kind"] == "follow_up" and row["query"].startswith("Which engineer fixed the office boiler?")
    assert set(row["timings"]) >= {"classify", "embed", "search", "metadata", "context", "trace", "total"}


def test_H_assistant_is_the_assistants_reply(store_dir, capsys, monkeypatch):
    """`turn -H "assistant: ..."` passes a role-tagged item, as classify and explain do (it used to be a user
    message), so a follow-up can point at the option the assistant offered."""
    from cleo_rules.turn import Recall

    given = []
    original = Recall.turn

    def turn(self, message, history=()):
        given.append(list(history))
        return original(self, message, history)

    monkeypatch.setattr(Recall, "turn", turn)
    code, out, err = run(capsys, monkeypatch, [
        "turn", "--db", str(store_dir), "--no-trace", "Yes, go with the second one.",
        "-H", "Compare the two van insurance quotes",
        "-H", "assistant: Hadley quotes 2,140 a year and Cresswell 1,865."])
    assert code == 0, err
    assert given == [["Compare the two van insurance quotes",
                      {"role": "assistant", "content": "Hadley quotes 2,140 a year and Cresswell 1,865."}]]
    row = json.loads(out)
    assert (row["kind"], row["query"]) == ("follow_up",
                                           "Compare the two van insurance quotes\nCresswell 1,865\nYes, go with the second one.")


def test_no_trace(tmp_path, capsys, monkeypatch, embedder):
    with MemoryStore.open(tmp_path, embedder=embedder) as store:
        store.add_document("d", "Oven manual", "2024-01-01", "Descale the steam oven monthly.")
    code, out, _ = run(capsys, monkeypatch, ["turn", "--db", str(tmp_path), "--no-trace", "How do I descale the oven?"])
    assert code == 0 and json.loads(out)["results"][0]["id"] == "d"
    with MemoryStore.open(tmp_path) as store:
        assert TABLE not in store.db.table_names()


@pytest.mark.parametrize("argv, stdin, message", [
    (["--jsonl"], '{"message": "ok fine then"}\nnot json\n', "line 2: not valid JSON at column 1"),
    (["--jsonl"], '{"text": "hello there"}\n', "line 1: \"message\" is missing"),
    (["--jsonl"], '{"message": "hello there", "history": "earlier"}\n', "line 1: \"history\" must be an array"),
    (["--jsonl", "hello there"], "", "Error: give a MESSAGE or --jsonl, not both"),
    ([], "", "Error: give a MESSAGE, or --jsonl"),
])
def test_usage_errors(store_dir, capsys, monkeypatch, argv, stdin, message):
    code, _, err = run(capsys, monkeypatch, ["turn", "--db", str(store_dir), *argv], stdin)
    assert code == 2 and err.startswith(message), err


def test_missing_store(tmp_path, capsys, monkeypatch):
    code, _, err = run(capsys, monkeypatch, ["turn", "--db", str(tmp_path / "none"), "hello there"])
    assert code == 2 and err.startswith(f"Error: no memory store in {tmp_path / 'none'}")
    assert not (tmp_path / "none").exists()
