"""The command line as another program runs it: a JSON Lines co-process, a missing extra, a bug.

Each test starts a real `python -m cleo_rules` process.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import textwrap
import threading

import pytest

from cleo_rules import codes
from cleo_rules.cli import main
from cleo_rules.errors import MissingExtra
from cleo_rules.extras import MEMORY_MODULES, memory_imports, missing_extra

MISSING = "Error: the memory store needs the [memory] extra: pip install 'cleo-rules[memory]'\n"


def _reader(stream, lines: queue.Queue) -> None:
    for line in iter(stream.readline, ""):
        lines.put(line)
    lines.put(None)


def test_classify_jsonl_answers_each_line_before_the_next_is_written(tmp_path):
    """A co-process writes one line and waits for one answer; stdin stays open throughout."""
    proc = subprocess.Popen([sys.executable, "-m", "cleo_rules", "classify", "--jsonl"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
    try:
        assert proc.stdin is not None
        answers = []
        for message in ("Yes, the second one.", "We tried that one already.", "What does the Leeds office cost?"):
            proc.stdin.write(json.dumps({"message": message, "history": ["Compare the two van quotes"]}) + "\n")
            proc.stdin.flush()
            try:
                answer = lines.get(timeout=30)
            except queue.Empty:
                pytest.fail(f"no answer to {message!r} within 30 s while stdin stays open")
            assert answer is not None, proc.stderr.read() if proc.stderr else ""
            answers.append(json.loads(answer))
        assert [a["kind"] for a in answers] == ["follow_up", "correction", "substantive"]
        assert answers[0]["query"] == "Compare the two van quotes\nYes, the second one."
    finally:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=30)
    assert proc.returncode == 0


# -- the [memory] extra ----------------------------------------------------------------------

BLOCK = textwrap.dedent("""\
    import sys
    for name in {modules!r}:
        sys.modules[name] = None  # as if the [memory] extra were not installed
    from cleo_rules.cli import main
    main({argv!r})
""")


def run_without_memory(argv, cwd):
    code = BLOCK.format(modules=sorted(MEMORY_MODULES), argv=argv)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=120)


@pytest.mark.parametrize("argv", [
    ["memory", "stats", "--db", "mem"],
    ["memory", "ingest", "--db", "mem", "--sample"],
    ["turn", "--db", "mem", "Yes, the second one."],
    ["demo"],
    ["relevance", "sample", "--db", "mem", "--n", "1"],
])
def test_memory_commands_without_the_extra(tmp_path, argv):
    (tmp_path / "mem").mkdir()
    result = run_without_memory(argv, tmp_path)
    assert (result.returncode, result.stderr, result.stdout) == (2, MISSING, "")


@pytest.mark.parametrize("argv", [
    ["check"],
    ["classify", "Yes, the second one.", "-H", "Compare the two van quotes"],
    ["explain", "We tried that one already."],
    ["corpus", "check"],
    ["packs"],
    ["memory", "--help"],
])
def test_rule_commands_without_the_extra(tmp_path, argv):
    result = run_without_memory(argv, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr


def test_missing_extra_in_the_library():
    assert missing_extra(ModuleNotFoundError("No module named 'hnswlib'", name="hnswlib")) is not None
    assert missing_extra(ModuleNotFoundError("No module named 'yaml'", name="yaml")) is None
    with pytest.raises(MissingExtra) as info:
        with memory_imports():
            raise ModuleNotFoundError("No module named 'sqlite_utils.db'", name="sqlite_utils.db")
    assert str(info.value) == MISSING[len("Error: "):-1] and info.value.exit_code == 2
    with pytest.raises(ModuleNotFoundError):
        with memory_imports():
            raise ModuleNotFoundError("No module named 'acme'", name="acme")


# -- a bug is one line and exit 3 ---------------------------------------------------------


def test_internal_error_is_one_line_and_exit_3(monkeypatch, capsys):
    from cleo_rules.cli import rules_cmds

    def broken(*args, **kwargs):
        raise RuntimeError("the matcher fell over")

    monkeypatch.setattr(rules_cmds, "load_lenient", broken)
    monkeypatch.delenv("CLEO_RULES_DEBUG", raising=False)
    with pytest.raises(SystemExit) as stop:
        main(["classify", "Yes, the second one."])
    assert stop.value.code == 3
    err = capsys.readouterr().err
    assert err == ("Error: internal error: RuntimeError: the matcher fell over (this is a bug in cleo-rules; "
                   "CLEO_RULES_DEBUG=1 shows the traceback)\n")
    assert "E000" in codes.observed()


def test_internal_error_traceback_on_request(monkeypatch, capsys):
    from cleo_rules.cli import rules_cmds

    monkeypatch.setattr(rules_cmds, "load_lenient", lambda *a, **k: 1 / 0)
    monkeypatch.setenv("CLEO_RULES_DEBUG", "1")
    with pytest.raises(SystemExit) as stop:
        main(["classify", "Yes, the second one."])
    assert stop.value.code == 3
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_console_script_help_works_in_a_fresh_interpreter(tmp_path):
    """`importlib.util` must be imported by the CLI itself (an installed wheel imports nothing else first)."""
    code = "import sys; sys.argv = ['cleo-rules', '--help']; from cleo_rules.cli import main; main()"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    result = subprocess.run([sys.executable, "-I", "-S", "-c", f"import sys; sys.path[:0] = {sys.path!r}; {code}"],
                            capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "Commands:" in result.stdout and "init" in result.stdout
