"""What the commands share: the pack and history options, finding and naming the pack used, exit codes.

The memory store's ``--db`` and its opener are in :mod:`.store`.
"""

from __future__ import annotations

import re
from pathlib import Path

import click

# The exit codes of cleo_rules.codes.CATEGORIES, as every command's --help states them.
EXIT_CODES_HELP = (
    "Exit codes: 0 clean; 1 findings in the pack or corpus; 2 usage, input or environment error "
    "(bad arguments, a missing extra); 3 internal error."
)

PACK_HELP = ("Rule pack: a directory, its pack.yaml, or an installed pack's name. Default: $CLEO_RULES_PACK, "
             "else [tool.cleo-rules] pack in the nearest pyproject.toml, else ./rules if it holds a pack.yaml, "
             "else the bundled cleo-en.")

pack_option = click.option("--pack", "pack_dir", default=None, metavar="DIR|NAME", help=PACK_HELP)


def no_such_command(name: str, known) -> str:
    """``No such command 'clasify'. Did you mean 'classify'?``: the nearest of the ``known`` commands, if any."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    text = f"No such command {name!r}."
    if len(close) == 1:
        text += f" Did you mean {close[0]!r}?"
    elif close:
        text += f" Did you mean one of {', '.join(repr(c) for c in close)}?"
    return text


class SuggestingGroup(click.Group):
    """A group of commands that answers a mistyped command with the nearest ones (``memory serch``: did you
    mean 'search'?), whatever version of click is installed."""

    def resolve_command(self, ctx, args):
        name = click.utils.make_str(args[0])
        normalize = ctx.token_normalize_func
        if (not ctx.resilient_parsing and not name.startswith("-") and self.get_command(ctx, name) is None
                and (normalize is None or self.get_command(ctx, normalize(name)) is None)):
            raise click.UsageError(no_such_command(name, self.list_commands(ctx)), ctx)
        return super().resolve_command(ctx, args)


def history_items(texts) -> list:
    """``-H`` values as history items: ``"assistant: ..."`` is the assistant's reply, anything else the user's.

    The items are those of the one history format (:mod:`cleo_rules.history`):
    a string for a user message, ``{"role": "assistant", "content": ...}``
    for a reply. A leading ``"user: "`` is dropped, so a user message that
    itself starts with "assistant:" can be given as ``"user: assistant: ..."``.
    """
    items: list = []
    for text in texts:
        head, sep, rest = text.partition(":")
        role = head.strip().lower()
        if sep and role == "assistant":
            items.append({"role": "assistant", "content": rest.strip()})
        elif sep and role == "user":
            items.append(rest.strip())
        else:
            items.append(text)
    return items


def _history(ctx, param, values) -> list:
    return history_items(values)


#: ``--history/-H``, the same on every command that takes the conversation before a message: the command
#: gets the history items (:func:`history_items`), oldest first
history_option = click.option(
    "--history", "-H", multiple=True, metavar="TEXT", callback=_history,
    help="An earlier turn, oldest first; repeat for more. A user message, or the assistant's reply when it starts "
         "with 'assistant:' ('user:' marks a user message that would otherwise look like one).")


def find(spec):
    """The pack a command uses (:func:`cleo_rules.pack.discovery.find_pack`)."""
    from ..pack.discovery import find_pack

    return find_pack(spec)


def is_installed_path(path) -> bool:
    """Whether ``path`` lies in an installed distribution (:func:`cleo_rules.resources.in_installed_distribution`)."""
    from ..resources import in_installed_distribution

    return in_installed_distribution(path)


def shown(path, name: str) -> str:
    """How text output names the directory of pack ``name``: ``<installed pack cleo-en>`` for an installed one (a path
    into site-packages says nothing to a reader), else as everywhere (:func:`~cleo_rules.reading.load.display`)."""
    from ..reading.load import display

    return f"<installed pack {name}>" if is_installed_path(path) else display(path)


def plain(text: str, found, name: str, pack=None) -> str:
    """``text`` (a report for people) with the installed pack's directory, and its corpus's, named as :func:`shown`
    names them, and so the directories of the installed packs it is built on (those of the compiled ``pack``, else
    those its manifest names); any other text is returned as it is. SARIF, JUnit, GitHub and JSON output keep real
    paths."""
    from ..corpus.files import corpus_dir_of
    from ..pack.compose import base_dirs
    from ..reading.load import display

    packs = [(Path(found.path), name)]
    if pack is not None:
        packs += [(b.path, b.name) for b in pack.composition.bases]
    else:
        packs += [(layer.path, layer.name) for layer in base_dirs(Path(found.path))]
    for path, who in packs:
        if not is_installed_path(path):
            continue
        for where, label in ((corpus_dir_of(path), f"<installed pack {who} corpus>"),
                             (Path(path), f"<installed pack {who}>")):
            for form in {str(where), display(where), str(Path(where).resolve())}:
                text = re.sub(re.escape(form) + r"(?![\w.-])", lambda _m, label=label: label, text)
    return text


def pack_line(pack, found) -> str:
    """``cleo-en 1.0.0 (hash) at rules (./rules)``: the pack used, for people; a pack built on others adds its
    bases (``, on cleo-en 1.0.0 (hash)``)."""
    line = f"{pack.name} {pack.version} ({pack.content_hash}) at {shown(found.path, pack.name)} ({found.describe()})"
    return line + "".join(f", on {b.name} {b.version} ({b.content_hash})" for b in pack.composition.bases)


def composition_lines(pack) -> list[str]:
    """What a pack built on others is made of, for people: each base and where it is, the rules left out."""
    lines = [f"built on: {b.name} {b.version} ({b.content_hash}) at {shown(b.path, b.name)}"
             for b in pack.composition.bases]
    for what in ("disabled", "replaced"):
        changes = getattr(pack.composition, what).values()
        if changes:
            lines.append(f"{what}: " + ", ".join(f"{c.rule} of {c.of} (by {c.by})" for c in changes))
    return lines


def pack_record(pack, found) -> dict:
    """The pack used, for ``--json`` (:meth:`~cleo_rules.pack.discovery.FoundPack.record`)."""
    return found.record(pack)


def load_lenient(found, *, quiet: bool = False):
    """Compile the pack ``found`` names, warning on stderr about its own examples that fail.

    ``explain`` and ``classify`` work on such a pack (a designer needs them
    most then); ``check`` stays strict. Returns ``(pack, example problems)``.
    """
    from ..pack.compile import compile_with_examples

    pack, problems = compile_with_examples(found.path)
    errors = [p for p in problems if p.severity == "error"]
    if errors and not quiet:
        n = len(errors)
        click.echo(f"Warning: {n} of the pack's own examples {'fails' if n == 1 else 'fail'} "
                   f"(`cleo-rules check` refuses the pack until they pass):", err=True)
        for p in errors[:10]:
            click.echo(plain(f"  {p.location}: {p.rule}: {p.message}", found, pack.name), err=True)
        if n > 10:
            click.echo(f"  ... and {n - 10} more", err=True)
    return pack, problems


# -- JSON Lines streams (classify --jsonl, turn --jsonl) ------------------------------------------


def stream_lines(stream):
    """``(line number, (message, history) or error)`` for each non-blank line of a ``--jsonl`` stream.

    Lines are read one at a time from the stream's bytes (so a line that is
    not UTF-8 is that line's error, not the end of the stream) through
    :func:`cleo_rules.jsonl.read_lines`. Only the shape is checked here: an
    object with a ``"message"`` string and an optional ``"history"`` array (or
    null); what a history item may be is the library's to judge.
    """
    from ..jsonl import JsonLineError, json_type, read_lines

    for number, value in read_lines(getattr(stream, "buffer", stream)):
        if isinstance(value, JsonLineError):
            yield number, value
            continue
        if not isinstance(value, dict):
            yield number, JsonLineError("E320", f'a line must be an object {{"message": ..., "history": [...]}}, '
                                                f"not {json_type(value)}", line=number)
            continue
        message, history = value.get("message"), value.get("history")
        if not isinstance(message, str):
            what = "missing" if "message" not in value else f"{json_type(message)}, not a string"
            yield number, JsonLineError("E320", f'"message" is {what}', line=number, pointer="/message")
            continue
        if history is None:
            history = []
        if not isinstance(history, list):
            yield number, JsonLineError("E320", f'"history" must be an array of earlier messages, oldest first, '
                                                f"not {json_type(history)}", line=number, pointer="/history")
            continue
        yield number, (message, history)


def history_error(exc: Exception, number: int):
    """The error of a line whose history the library refused (a ``TypeError`` or ``ValueError``)."""
    from ..jsonl import JsonLineError

    index = getattr(exc, "index", None)  # a HistoryError names the item
    pointer = f"/history/{index}" if isinstance(index, int) else "/history"
    return JsonLineError("E321", f"history: {exc}", line=number, pointer=pointer)


def error_line(error) -> str:
    """The output line for a line that failed: ``{"error": {...}, "line": n}``."""
    import json

    return json.dumps({"error": error.to_dict(), "line": error.line}, ensure_ascii=False)
