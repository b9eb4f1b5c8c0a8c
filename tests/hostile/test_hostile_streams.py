"""Hostile streams and inputs (issue 12, items 10, 20, 21): every bad line located, the stream goes on.

``classify --jsonl`` runs in a subprocess (real pipes and encodings, so a
line that cannot be written would show as a traceback); the other commands
run in-process with the toy embedder.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from cleo_rules.cli import cli, main
from cleo_rules.jsonl import MAX_DEPTH, JsonLineError, parse_line, read_lines
from cleo_rules.relevance import read_judgments, score_judgments
from cleo_rules.resources import corpus_dir, rules_dir
from cleo_rules.retrieval import MemoryStore
from cleo_rules.turn import Recall

from helpers.embedders import ToyEmbedder
from helpers.hostile import documents, jsonl, run_cli

BOM = b"\xef\xbb\xbf"
DEEP = "[" * 100_000 + "]" * 100_000

# (raw line, code of its error or None when it is answered); history items that the library refuses
# are given with a follow-up message, the only kind whose history is read
STREAM = [
    ('{"message": "Tell me more", "history": ["Quotes for van insurance"]}', None),
    ('{"message": "\\ud800 lone surrogate in the message"}', "E319"),
    ('{"message": "Yes, the second one.", "history": ["\\udfff"]}', "E319"),
    ('{"message": "Which supplier delivers rye flour on Sundays?", "\\ud800": 1}', "E319"),
    ('{"message": ' + DEEP + "}", "E318"),
    ('{"message": "x", "history": ' + "[" * (MAX_DEPTH + 2) + "]" * (MAX_DEPTH + 2) + "}", "E318"),
    ('{"message": 5}', "E320"),
    ('{"history": []}', "E320"),
    ('["message"]', "E320"),
    ('{"message": "Tell me more", "history": "Quotes for van insurance"}', "E320"),
    ('{"message": "Yes, the second one.", "history": [42]}', "E321"),
    ('{"message": "Yes, the second one.", "history": [{"role": "robot", "content": "hi"}]}', "E321"),
    ("not json", "E311"),
    (b"\xff\xfe not utf-8", "E311"),
    ('{"message": "Yes, go with the second one.", "history": ["Compare the two van insurance quotes"]}', None),
]


def _stdin(rows) -> bytes:
    return b"".join((r if isinstance(r, bytes) else r.encode("utf-8")) + b"\n" for r, _ in rows)


def _check_stream(out: str, rows) -> None:
    got = [json.loads(line) for line in out.splitlines()]
    assert len(got) == len(rows)
    for number, ((_, code), record) in enumerate(zip(rows, got), 1):
        if code is None:
            assert "error" not in record and record["kind"] in ("follow_up", "substantive"), record
        else:
            assert list(record) == ["error", "line"] and record["line"] == number, record
            assert record["error"]["code"] == code and record["error"]["message"], record


# -- 10: one hostile line never ends a stream ----------------------------------------------------------------


def test_10_classify_jsonl_gives_every_bad_line_its_own_error_and_goes_on():
    res = run_cli("classify", "--jsonl", stdin=_stdin(STREAM), seconds=60)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr
    _check_stream(res.stdout, STREAM)
    assert json.loads(res.stdout.splitlines()[-1])["query"] == \
        "Compare the two van insurance quotes\nYes, go with the second one."
    assert "line 2: string at /message holds a lone surrogate (U+D800" in res.stderr


def test_10_classify_jsonl_in_process_records_the_codes():
    result = CliRunner().invoke(cli, ["classify", "--jsonl"], input=_stdin(STREAM))
    assert result.exit_code == 2
    _check_stream(result.stdout, STREAM)


@pytest.fixture
def toy_store(tmp_path, monkeypatch):
    path = tmp_path / "mem"
    with MemoryStore.open(path, embedder=ToyEmbedder()) as store:
        store.ingest_jsonl(jsonl(documents(20)).encode())
    original = MemoryStore.open.__func__

    def open_(cls, p, *args, **kwargs):
        kwargs["embedder"] = ToyEmbedder()
        return original(cls, p, **kwargs)

    monkeypatch.setattr(MemoryStore, "open", classmethod(open_))
    return path


def run(capsys, monkeypatch, *argv, stdin: bytes = b""):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    out, err = capsys.readouterr()
    return info.value.code, out, err


def test_10_turn_jsonl_gives_every_bad_line_its_own_error_and_goes_on(toy_store, capsys, monkeypatch):
    code, out, err = run(capsys, monkeypatch, "turn", "--db", str(toy_store), "--jsonl", stdin=_stdin(STREAM))
    assert code == 2 and "Traceback" not in err
    _check_stream(out, STREAM)
    with MemoryStore.open(toy_store, read_only=True) as store:
        from cleo_rules.trace import read_traces

        assert len(list(read_traces(store))) == 2  # the two good turns, traced


@pytest.mark.model
def test_10_a_lone_surrogate_never_reaches_the_tokenizer(tmp_path, embedder):
    """In the library, a query that is not Unicode is searched as U+FFFD and traced so (it used to be a TypeError)."""
    with MemoryStore.open(tmp_path, embedder=embedder) as store:
        store.add_document("d", "Boiler", "2024-01-01", "The boiler service is due in May.")
        turn = Recall(store).turn("When is the \ud800 boiler service due?")
        assert turn.results and turn.results[0].id == "d"
        from cleo_rules.trace import read_traces

        (row,) = read_traces(store)
    assert row["message"] == row["query"] == "When is the \ufffd boiler service due?"


# the shared reader, on any input


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.one_of(st.binary(max_size=200),
                 st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8)),
                              lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(st.text(max_size=4), inner, max_size=3)),
                              max_leaves=40).map(lambda v: json.dumps(v).encode())))
def test_10_the_shared_reader_gives_a_value_or_a_located_error_for_any_line(raw):
    try:
        value = parse_line(raw, line=3)
    except JsonLineError as exc:
        assert exc.code in ("E311", "E318", "E319") and exc.line == 3 and str(exc)
        return
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # what was accepted can always be written back


# -- 20: corpus diff never hands a revision to git as an option -----------------------------------------------


@pytest.fixture
def repo(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    shutil.copytree(rules_dir(), repo / "rules")
    shutil.copytree(corpus_dir(), repo / "corpus")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(git + ["-C", str(repo), "add", "."], check=True)
    subprocess.run(git + ["-C", str(repo), "commit", "-q", "-m", "pack"], check=True)
    monkeypatch.chdir(repo)
    return repo


@pytest.mark.parametrize("rev", ["--output={victim}", "-o{victim}", "--remote=file:///nonexistent",
                                 "--exec=touch {victim}", "HEAD --output={victim}"])
def test_20_a_revision_is_never_read_as_a_git_option(repo, rev, capsys):
    victim = repo.parent / "victim.txt"
    victim.write_text("precious\n")
    spec = rev.format(victim=victim) + ":rules"
    with pytest.raises(SystemExit) as info:
        main(["corpus", "diff", "--", spec, "rules"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "is not a" in err and "revision" in err, err
    assert victim.read_text() == "precious\n"


def test_20_a_real_revision_still_works(repo):
    result = CliRunner().invoke(cli, ["corpus", "diff", "HEAD:rules", "rules"])
    assert result.exit_code == 0, result.output
    from cleo_rules.corpus.diff import _revision

    tree = _revision("HEAD:rules", "HEAD", repo)
    assert len(tree) == 40 and all(c in "0123456789abcdef" for c in tree)


# -- 21: relevance commands on bad judgments and outputs; a BOM anywhere JSONL is read ---------------------------


@pytest.fixture
def traced_store(toy_store):
    with MemoryStore.open(toy_store) as store:
        Recall(store, k=2).turn("Which boiler service note is it?")
    return toy_store


@pytest.mark.parametrize("content, message", [
    (b'{"pair": "1:1", "relevant": true}\n\xff\xfe\n', "j.jsonl:2: line is not valid UTF-8"),
    (b'{"pair": ["a"], "relevant": true}\n', "j.jsonl:1: \"pair\" must be the id string"),
    (b'{}\n', "j.jsonl:1: each line needs a \"pair\" id"),
    (b'{"pair": {}, "relevant": false}\n', "j.jsonl:1: \"pair\" must be the id string"),
    (("[" * 100_000 + "]" * 100_000 + "\n").encode(), "j.jsonl:1: line is nested deeper than 32 levels"),
    (b'{"pair": "\\ud800", "relevant": true}\n', "j.jsonl:1: string at /pair holds a lone surrogate"),
    (b"", "no judgments in"),
    (b"\n\n  \n", "no judgments in"),
], ids=["not-utf8", "pair-list", "empty-object", "pair-object", "nested", "surrogate", "empty", "blank"])
def test_21_bad_judgments_are_located_errors(traced_store, tmp_path, capsys, monkeypatch, content, message):
    path = tmp_path / "j.jsonl"
    path.write_bytes(content)
    code, out, err = run(capsys, monkeypatch, "relevance", "score", "--db", str(traced_store), "--judgments",
                         str(path))
    assert code == 2 and message in err and "Traceback" not in err and "internal error" not in err, err


def test_21_score_judgments_checks_rows_given_in_memory(traced_store):
    from cleo_rules.errors import UsageError

    with MemoryStore.open(traced_store, read_only=True) as store:
        for rows, message in (([{}], "judgment 1: each line needs"), ([{"pair": ["a"], "relevant": True}],
                              "judgment 1: \"pair\" must be"), ([], "no judgments to score")):
            with pytest.raises(UsageError, match=message):
                score_judgments(store, rows)
        assert score_judgments(store, [{"pair": "1:1", "relevant": False}]).cell("all", "document").judged == 1


def test_21_sample_out_to_a_missing_directory(traced_store, capsys, monkeypatch):
    code, out, err = run(capsys, monkeypatch, "relevance", "sample", "--db", str(traced_store), "--n", "2",
                         "--out", "/no/such/dir/x")
    assert code == 2 and err.startswith("Error: cannot write --out /no/such/dir/x: No such file or directory"), err


def test_21_a_bom_is_dropped_wherever_jsonl_is_read(traced_store, tmp_path, capsys, monkeypatch):
    # judgments
    sample = tmp_path / "sample.jsonl"
    assert run(capsys, monkeypatch, "relevance", "sample", "--db", str(traced_store), "--n", "5",
               "--out", str(sample))[0] == 0
    rows = [{**json.loads(line), "relevant": True} for line in sample.read_text().splitlines()]
    sample.write_bytes(BOM + jsonl(rows).encode())
    assert [r["pair"] for r in read_judgments(sample)] == [r["pair"] for r in rows]
    code, out, err = run(capsys, monkeypatch, "relevance", "score", "--db", str(traced_store), "--judgments",
                         str(sample))
    assert code == 0, err
    # ingest
    ingest = tmp_path / "in.jsonl"
    ingest.write_bytes(BOM + jsonl(documents(2, prefix="bom")).encode())
    code, out, err = run(capsys, monkeypatch, "memory", "ingest", "--db", str(traced_store), str(ingest))
    assert code == 0 and "2 added, 0 updated, 0 unchanged, 0 skipped" in out, err
    # classify --jsonl and turn --jsonl
    line = BOM + b'{"message": "Which supplier delivers rye flour on Sundays?"}\n'
    result = CliRunner().invoke(cli, ["classify", "--jsonl"], input=line)
    assert result.exit_code == 0 and json.loads(result.stdout)["kind"] == "substantive"
    code, out, err = run(capsys, monkeypatch, "turn", "--db", str(traced_store), "--jsonl", stdin=line)
    assert code == 0 and json.loads(out)["kind"] == "substantive", err
    # corpus diff --jsonl
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_bytes(BOM + b'"Yes, the second one."\n{"message": "Tell me more"}\n')
    from cleo_rules.corpus.diff import read_jsonl

    assert [c.message for c in read_jsonl(traffic)] == ["Yes, the second one.", "Tell me more"]
    # only at the start: a BOM on a later line is that line's error
    later = list(read_lines(io.BytesIO(b'{"a": 1}\n' + BOM + b'{"b": 2}\n')))
    assert later[0] == (1, {"a": 1}) and isinstance(later[1][1], JsonLineError) and later[1][1].code == "E311"


def test_21_corpus_diff_jsonl_errors_are_located(tmp_path):
    from cleo_rules.corpus.diff import read_jsonl
    from cleo_rules.errors import UsageError

    path = tmp_path / "t.jsonl"
    path.write_bytes(b'"ok"\n' + ("[" * 5000 + "]" * 5000).encode() + b"\n")
    with pytest.raises(UsageError, match=r"t.jsonl:2: line is nested deeper"):
        read_jsonl(path)
    path.write_bytes(b"\xff\n")
    with pytest.raises(UsageError, match=r"t.jsonl:1: line is not valid UTF-8"):
        read_jsonl(path)


def test_21_read_lines_reads_a_stream_one_line_at_a_time():
    """A co-process writes a line and waits: the reader must not read ahead of the line it answers."""

    class OneLine(io.RawIOBase):
        def __init__(self):
            self.lines = [b'{"n": 1}\n', b'{"n": 2}\n']

        def readable(self):
            return True

        def readline(self, size=-1):
            return self.lines.pop(0) if self.lines else b""

    src = OneLine()
    it = read_lines(src)
    assert next(it) == (1, {"n": 1}) and src.lines == [b'{"n": 2}\n']
    assert list(it) == [(2, {"n": 2})]


def test_21_demo_data_is_read_through_the_shared_reader(tmp_path, monkeypatch):
    from cleo_rules.cli import turn_cmds
    from cleo_rules.errors import UsageError

    path = tmp_path / "demo.jsonl"
    path.write_bytes(BOM + b'{"message": "Hello there, which van?"}\n')
    assert turn_cmds._demo_messages(path) == [{"message": "Hello there, which van?"}]
    path.write_bytes(b'{"message": "ok"}\n[[[\n')
    with pytest.raises(UsageError, match=r"demo.jsonl:2 is damaged"):
        turn_cmds._demo_messages(Path(path))
