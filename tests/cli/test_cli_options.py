"""The options every command shares: one ``--db`` (reading ``CLEO_MEMORY_DB``) opened one way, one ``-H``.

The commands are read from the click tree itself, so a command added with
an option of its own fails here.
"""

from __future__ import annotations

import json

import click
import pytest
from hypothesis import given, strategies as st

from cleo_rules.cli import cli, main
from cleo_rules.cli.common import history_items
from cleo_rules.errors import UsageError

#: every command that works on a memory store (``demo`` builds one: see the test below)
STORE_COMMANDS = {"memory ingest", "memory search", "memory stats", "memory rebuild", "memory delete",
                  "memory tenants", "turn", "relevance sample", "relevance score"}
HISTORY_COMMANDS = {"classify", "explain", "turn"}


def commands(group=cli, prefix=()):
    """``{"memory ingest": command, ...}``: every command of the tree, subcommands by their full name."""
    ctx = click.Context(group)
    out = {}
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            out.update(commands(command, (*prefix, name)))
        else:
            out[" ".join((*prefix, name))] = command
    return out


COMMANDS = commands()


def option(command, name):
    return next((p for p in command.params if p.name == name), None)


def test_the_tree_is_read():
    assert {"check", "classify", "corpus check", "memory ingest", "turn", "demo", "relevance score"} <= set(COMMANDS)


def test_every_command_that_takes_a_store_has_the_one_db_option():
    with_db = {name for name, command in COMMANDS.items() if option(command, "db") is not None}
    assert with_db - {"demo"} == STORE_COMMANDS
    for name in STORE_COMMANDS:
        db = option(COMMANDS[name], "db")
        assert isinstance(db, click.Option)
        assert (db.opts, db.secondary_opts, db.required, db.multiple, db.envvar) == (
            ["--db"], [], True, False, "CLEO_MEMORY_DB"), name
        assert "CLEO_MEMORY_DB" in (db.help or ""), name


def test_demo_builds_its_sample_elsewhere_and_never_reads_the_environment():
    db = option(COMMANDS["demo"], "db")
    assert db is not None and db.envvar is None and not db.required
    assert "CLEO_MEMORY_DB is not read" in (db.help or "")


ARGV = {
    "memory ingest": ["memory", "ingest", "FILE"],
    "memory search": ["memory", "search", "boiler"],
    "memory stats": ["memory", "stats"],
    "memory rebuild": ["memory", "rebuild"],
    "memory delete": ["memory", "delete", "--conversation", "c1"],
    "turn": ["turn", "Which engineer fixed the boiler?"],
    "relevance sample": ["relevance", "sample", "--n", "1"],
    "relevance score": ["relevance", "score", "--judgments", "FILE"],
}


@pytest.mark.parametrize("name", sorted(STORE_COMMANDS - {"memory tenants"}))
def test_every_store_command_reads_the_environment_and_opens_the_store_one_way(name, tmp_path, monkeypatch, capsys):
    """Without --db the store is $CLEO_MEMORY_DB, opened through the library's open_memory."""
    from cleo_rules.retrieval import locate

    opened = []

    def spy(location, embedder=None, **options):
        opened.append((location, options.get("create", False)))
        raise UsageError(f"opened {location}")

    monkeypatch.setattr(locate, "open_memory", spy)
    where = tmp_path / "from-the-environment"
    monkeypatch.setenv("CLEO_MEMORY_DB", str(where))
    existing = tmp_path / "file.jsonl"
    existing.write_text("\n", encoding="utf-8")
    argv = [str(existing) if a == "FILE" else a for a in ARGV[name]]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert (exc.value.code, err) == (2, f"Error: opened {where}\n")
    assert opened == [(str(where), name == "memory ingest")]  # only ingest creates a store


def test_memory_tenants_reads_the_environment_too(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CLEO_MEMORY_DB", str(tmp_path))
    with pytest.raises(SystemExit) as exc:
        main(["memory", "tenants"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.startswith(f"Error: memory tenants lists the tenants of a PostgreSQL database "
                                              f"(--db postgresql://...); {str(tmp_path)[:80]} is a directory")


def test_without_db_or_the_environment_a_store_command_says_so(monkeypatch, capsys):
    monkeypatch.delenv("CLEO_MEMORY_DB", raising=False)
    with pytest.raises(SystemExit) as exc:
        main(["memory", "stats"])
    assert exc.value.code == 2 and "Missing option '--db'" in capsys.readouterr().err


def test_every_command_that_takes_history_has_the_one_H_option():
    with_history = {name for name, command in COMMANDS.items() if option(command, "history") is not None}
    assert with_history == HISTORY_COMMANDS
    shapes = set()
    for name in HISTORY_COMMANDS:
        h = option(COMMANDS[name], "history")
        assert isinstance(h, click.Option)
        shapes.add((tuple(h.opts), h.multiple, h.callback, h.help))
    assert len(shapes) == 1
    (opts, multiple, callback, help_), = shapes
    assert opts == ("--history", "-H") and multiple and callback is not None and "assistant:" in (help_ or "")


@pytest.mark.parametrize("command", ["classify", "explain"])
def test_H_gives_the_assistants_reply_to_the_rule_commands(command, capsys):
    argv = [command, "Yes, go with the second one.", "-H", "Compare the two van insurance quotes",
            "-H", "assistant: Hadley quotes 2,140 a year and Cresswell 1,865.", "--json"]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 0
    doc = json.loads(capsys.readouterr().out)
    decision = doc if command == "classify" else doc["decision"]
    assert decision["query"] == "Compare the two van insurance quotes\nCresswell 1,865\nYes, go with the second one."


words = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@given(words)
def test_an_assistant_prefix_is_a_reply_and_a_user_prefix_a_user_message(text):
    assert history_items([f"assistant:{text}"]) == [{"role": "assistant", "content": text.strip()}]
    assert history_items([f"  Assistant :{text}"]) == [{"role": "assistant", "content": text.strip()}]
    assert history_items([f"user:{text}"]) == [text.strip()]
    assert history_items([f"user: assistant:{text}"]) == [f"assistant:{text}".strip()]


@given(st.lists(words, max_size=5))
def test_anything_else_is_a_user_message_as_typed(texts):
    plain = [t for t in texts if t.partition(":")[0].strip().lower() not in ("user", "assistant") or ":" not in t]
    assert history_items(plain) == plain
