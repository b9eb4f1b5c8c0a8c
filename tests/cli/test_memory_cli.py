"""`cleo-rules memory ...`: ingest, search, stats, rebuild, delete, run in-process through main()."""

from __future__ import annotations

import io
import re
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cleo_rules.cli import main
from cleo_rules.resources import data_dir

SAMPLE = data_dir() / "sample_memory.jsonl"
N_RECORDS = sum(1 for line in SAMPLE.read_text().splitlines() if line.strip())


def run(capsys, *args, stdin=None, monkeypatch=None):
    """Run the CLI; return (exit code, stdout, stderr)."""
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return info.value.code, out, err


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory, embedder):
    """The sample memory ingested through the CLI (shared with test_retrieval_store.py, which reuses it)."""
    embedder.dim  # the CLI's own Embedder shares these loaded weights
    path = tmp_path_factory.getbasetemp() / "shared-sample-store"
    if not (path / "complete").exists():
        shutil.rmtree(path, ignore_errors=True)
        with pytest.raises(SystemExit) as info:
            main(["memory", "ingest", "--db", str(path), "--sample"])
        assert info.value.code == 0
        (path / "complete").write_text("")
    return path


@pytest.fixture
def db(sample_db, tmp_path):
    path = tmp_path / "mem"
    shutil.copytree(sample_db, path)
    return str(path)


@pytest.mark.parametrize("command", [[], ["ingest"], ["search"], ["stats"], ["rebuild"], ["delete"], ["sample"]])
def test_every_command_has_help_with_an_example(capsys, command):
    code, out, _ = run(capsys, "memory", *command, "--help")
    assert code == 0 and "Example:" in out and "cleo-rules memory" in out


def test_ingest_sample_then_reingest_is_idempotent(capsys, db):
    code, out, err = run(capsys, "memory", "ingest", "--db", db, "--sample")
    assert code == 0 and f"0 added, 0 updated, {N_RECORDS} unchanged, 0 skipped" in out
    assert "embedding" in out and "items/s" in out
    code, out, _ = run(capsys, "memory", "stats", "--db", db, "--json")
    stats = json.loads(out)
    assert stats["conversations"] + stats["documents"] == N_RECORDS


def test_search_json_and_text(capsys, db):
    code, out, _ = run(capsys, "memory", "search", "--db", db, "which insurer did we choose for the vans", "--k", "4", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["k"] == 4 and len(data["results"]) == 4
    first = data["results"][0]
    assert set(first) == {"source", "id", "item", "title", "date", "text", "score"}
    assert "van-insurance" in first["id"]
    code, out, err = run(capsys, "memory", "search", "--db", db, "boiler service price", "--k", "2", "--source", "document")
    assert code == 0 and out.startswith(" 1. ") and "document" in out and "(20" in out
    assert "conversation" not in out.split("\n")[0]
    assert "2 results in" in err


def test_search_floor_and_bad_arguments(capsys, db):
    code, out, _ = run(capsys, "memory", "search", "--db", db, "van", "--floor", "0.99")
    assert code == 0 and "No results." in out
    code, _, err = run(capsys, "memory", "search", "--db", db, "van", "--k", "0")
    assert code == 2 and "--k" in err
    code, _, err = run(capsys, "memory", "search", "--db", db, "  ")
    assert code == 2 and err.startswith("Error: search query must be a non-empty string")


def test_stats_text(capsys, db):
    code, out, _ = run(capsys, "memory", "stats", "--db", db)
    assert code == 0
    assert "conversations: 35" in out and "documents:     13" in out and "all-MiniLM-L6-v2 (384 dimensions)" in out
    assert "index snippets:" in out and "index passages:" in out
    assert "vectors from:  onnx (model sha256 bb8e7acf20d0, onnxruntime " in out
    assert "embedder:      onnx int8 (onnxruntime " in out and "), 1 thread (default)" in out


@pytest.mark.parametrize("argv", [["stats"], ["stats", "--json"], ["delete", "--document", "no-such-doc"]])
def test_commands_that_do_not_embed_load_no_embedding_runtime(db, argv):
    code = ("import sys\nfrom cleo_rules.cli import main\ntry:\n    main(%r)\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers', 'onnxruntime', 'tokenizers') "
            "if m in sys.modules))" % (["memory", argv[0], "--db", str(db), *argv[1:]],))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.splitlines()[-1] == "[]", done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_sample_writes_out_the_bundled_sample_memory_without_the_memory_extra(tmp_path):
    """`memory sample > FILE` gives a client of the service the file `ingest --sample` reads, byte for byte; it
    imports none of the [memory] extra's packages, so a core or [serve] install can run it."""
    code = ("import sys\nfor m in ('numpy', 'hnswlib', 'onnxruntime', 'tokenizers', 'torch', 'sqlite_utils'):\n"
            "    sys.modules[m] = None\nfrom cleo_rules.cli import main\nmain(['memory', 'sample'])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == (data_dir() / "sample_memory.jsonl").read_bytes()
    assert done.stderr == b""


def test_rebuild_and_damaged_index_warning(capsys, db):
    code, out, _ = run(capsys, "memory", "rebuild", "--db", db)
    assert code == 0 and out.startswith("rebuilt: ") and "snippets" in out
    from cleo_rules.retrieval.hnsw_file import index_file

    with open(index_file(Path(db) / "snippets.hnsw"), "r+b") as fh:
        fh.truncate(100)
    code, out, err = run(capsys, "memory", "search", "--db", db, "van insurance", "--k", "1", "--json")
    assert code == 0 and json.loads(out)["results"]
    assert err.startswith("Warning: snippet index in ") and "rebuilding it from SQLite" in err
    assert "Traceback" not in err


def test_delete(capsys, db):
    code, out, _ = run(capsys, "memory", "delete", "--db", db, "--conversation", "conv-2024-02-van-insurance-quotes",
                       "--document", "doc-van-insurance-comparison-2024")
    assert code == 0 and "deleted 2 items" in out
    code, out, _ = run(capsys, "memory", "search", "--db", db, "van insurance quotes", "--k", "20", "--json")
    assert not {"conv-2024-02-van-insurance-quotes", "doc-van-insurance-comparison-2024"} & {
        r["id"] for r in json.loads(out)["results"]}
    code, _, err = run(capsys, "memory", "delete", "--db", db, "--document", "no-such-doc")
    assert code == 2 and "Error: not found: document no-such-doc" in err
    code, _, err = run(capsys, "memory", "delete", "--db", db)
    assert code == 2 and "Error:" in err


BAD = "\n".join([
    json.dumps({"type": "document", "id": "d-good", "title": "Good", "date": "2025-01-01", "text": "A fine note."}),
    "{oops",
    json.dumps({"type": "document", "id": "d-bad", "title": "Bad", "date": "2025-01-01", "text": ""}),
]) + "\n"


def test_malformed_lines_are_skipped_by_default(capsys, db, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(BAD)
    code, out, err = run(capsys, "memory", "ingest", "--db", db, str(path))
    assert code == 0
    assert "1 added, 0 updated, 0 unchanged, 2 skipped (lines 2, 3)" in out
    assert f"{path}:2:2: error[E311]" in err and f"{path}:3:1: error[E315] at /text" in err


def test_strict_rejects_and_exits_2(capsys, db, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(BAD)
    code, out, err = run(capsys, "memory", "ingest", "--db", db, str(path), "--strict")
    assert code == 2 and out == ""
    assert err.startswith(f"Error: 2 malformed lines in {path}; nothing was ingested")
    assert "Traceback" not in err
    code, out, _ = run(capsys, "memory", "stats", "--db", db, "--json")
    assert json.loads(out)["documents"] == 13


def test_ingest_from_stdin_with_progress_and_json(capsys, db, monkeypatch):
    lines = "".join(
        json.dumps({"type": "document", "id": f"n{i}", "title": f"Note {i}", "date": "2025-01-01",
                    "text": f"Note {i} about a leaking tap."}) + "\n" for i in range(5))
    code, out, err = run(capsys, "memory", "ingest", "--db", db, "-", "--progress", "--json",
                         stdin=lines, monkeypatch=monkeypatch)
    assert code == 0 and "Ingesting" in err
    report = json.loads(out)
    assert report["source"] == "<stdin>" and report["added"] == 5 and report["timings"]["embed"] > 0


def test_ingest_usage_errors(capsys, db, tmp_path):
    code, _, err = run(capsys, "memory", "ingest", "--db", db)
    assert code == 2 and "Error: give either a FILE to ingest or --sample" in err
    code, _, err = run(capsys, "memory", "ingest", "--db", db, str(tmp_path / "missing.jsonl"))
    assert code == 2 and "Error: cannot read" in err
    (tmp_path / "afile").write_text("x")
    code, _, err = run(capsys, "memory", "stats", "--db", str(tmp_path / "afile"))
    assert code == 2 and "is a file" in err  # click refuses a file for a directory option


# -- ingest's progress in a terminal, and its summary line --------------------------------------------------------


SUMMARY = r"{source}: {n} added, 0 updated, 0 unchanged, 0 skipped; \d+\.\d\d s \(\d+\.\d\d s embedding\), \d+ items/s"


def ingest_process(tmp_path, *, tty: bool, n: int = 3) -> tuple[int, str, str]:
    """`cleo-rules memory ingest` of ``n`` documents in a process of its own, its stderr a terminal (a pty) or a pipe;
    returns (exit code, stdout, stderr as the terminal or the pipe got it)."""
    import os
    import pty

    path = tmp_path / "notes.jsonl"
    path.write_text("".join(json.dumps({"type": "document", "id": f"n{i}", "title": f"Note {i}", "date": "2025-01-01",
                                        "text": f"Note {i} about a leaking tap."}) + "\n" for i in range(n)))
    argv = [str(Path(sys.executable).parent / "cleo-rules"), "memory", "ingest", "--db", str(tmp_path / "mem"), str(path)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "100"}
    if not tty:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
        return done.returncode, done.stdout, done.stderr
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the process closed the terminal's last end
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    out = proc.stdout.read().decode() if proc.stdout else ""
    return proc.wait(timeout=300), out, seen.decode(errors="replace")


def test_ingest_shows_progress_in_a_terminal_however_small_and_ends_with_its_summary(tmp_path):
    code, out, terminal = ingest_process(tmp_path, tty=True, n=3)
    assert code == 0, terminal
    assert "Ingesting" in terminal and "100%" in terminal  # three lines, far under any size threshold
    assert re.fullmatch(SUMMARY.format(source=re.escape(str(tmp_path / "notes.jsonl")), n=3), out.splitlines()[-1])


def test_ingest_shows_no_progress_when_stderr_is_not_a_terminal_and_ends_with_its_summary(tmp_path):
    code, out, err = ingest_process(tmp_path, tty=False, n=3)
    assert code == 0, err
    assert "Ingesting" not in err and "%" not in err
    assert re.fullmatch(SUMMARY.format(source=re.escape(str(tmp_path / "notes.jsonl")), n=3), out.splitlines()[-1])
    assert len(out.splitlines()) == 1  # the summary is the whole of stdout
