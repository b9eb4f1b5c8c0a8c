"""Saving a turn as a regression: a hand-written case in ``corpus/regressions.yaml`` beside the pack.

A designer who finds a message the pack gets wrong keeps it as a case:
its message, the conversation before it and the kind it should have::

    entry = regression_entry("Thanks!", ["Which van insurer covers tools?"], "skip", pack=pack)
    print(render_entry(entry))                       # the YAML to paste under `cases:`
    saved = save_regression(pack, entry)             # or append it to the pack's regressions.yaml

A case the pack gets wrong when it is saved is **open** (``open: true``,
semgrep's ``todoruleid``): every saved regression of a wrong turn fails by
definition, and an open case is reported by ``check`` without failing it or
the serving gate, until it passes and ``check`` asks for it to be closed.
A case the pack already gets right is saved closed: it holds from then on.

:func:`regression_entry` reads the history with the one history reader
(:func:`cleo_rules.history.read_history`): user turns are written as plain
strings, assistant turns as ``{role: assistant, content: ...}``, other roles
left out. The id is ``regression/`` and the message's first words, made
unique in the corpus.

:func:`save_regression` never writes into an installed cleo-rules package
(the bundled pack of a wheel: E205, the same rule ``corpus build`` keeps)
and only appends: the file's text is kept as it is, the case goes after the
last one, and the result is read back (plain YAML, the corpus schema, the
case where it should be) before it replaces the file in one rename; a file
laid out so that appending would not add the case (E206), or that the case
would take over the 1 MiB every corpus file is held to (E207), is left alone.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from ..errors import CleoError, UsageError
from ..history import ASSISTANT, read_history
from ..kinds import DecisionKind
from ..reading.load import MAX_FILE_BYTES
from .files import REGRESSIONS_FILE

__all__ = ["REGRESSIONS_FILE", "Saved", "regression_entry", "regressions_path", "render_entry", "save_regression"]

MAX_ID_WORDS = 6
_lock = threading.Lock()

_HEADER = """\
# Hand-written cases: messages seen in conversations and edge cases the
# templates do not reach. `cleo-rules corpus build` never touches this file.
kind: corpus
description: Regressions and edge cases, written by hand.
cases:
"""


@dataclass(frozen=True)
class Saved:
    """What :func:`save_regression` did: the case's ``id``, its ``yaml``, the ``file``, whether it was ``written``
    and whether the case is ``open`` (the pack does not get it right yet)."""

    id: str
    yaml: str
    file: Path
    written: bool
    open: bool = False

    def to_dict(self, display: str | None = None) -> dict:
        return {"id": self.id, "yaml": self.yaml, "file": display or str(self.file), "written": self.written,
                "open": self.open}


def regressions_path(pack) -> Path:
    """``corpus/regressions.yaml`` beside the pack directory."""
    from .run import default_corpus_dir

    return default_corpus_dir(pack) / REGRESSIONS_FILE


def _slug(message: str) -> str:
    words = re.findall(r"[a-z0-9]+", message.casefold())[:MAX_ID_WORDS]
    return "-".join(words) or "case"


def _taken_ids(corpus_dir: Path) -> set[str]:
    from . import files as cfiles

    if not corpus_dir.is_dir():
        return set()
    hand, gen, _ = cfiles.read_dir(corpus_dir)
    return {c.id for cf in (*hand, *gen) for c in cf.cases}


def regression_entry(message: str, history=(), expect: str = "substantive", *, pack=None, note: str | None = None,
                     case_id: str | None = None, open: bool | None = None) -> dict:
    """The case for ``message`` after ``history`` that must be classified ``expect``.

    ``pack`` (a compiled pack) makes the id unique in its corpus and, with
    no ``note`` given, records in the note what that pack decides now.
    ``open`` marks the case open (``open: true``); None (the default) lets
    ``pack`` decide: the case is open when that pack does not pass it, as
    the corpus judges it (kind, and with a history the query's shape).
    Raises :class:`~cleo_rules.errors.UsageError` for a kind that is not
    one, or a message that is not a string; the history's own errors are
    the history reader's (``TypeError``/``ValueError`` naming the item).
    """
    if not isinstance(message, str):
        raise UsageError(f"the message must be a string, not {type(message).__name__}")
    if expect not in set(DecisionKind):
        raise UsageError(f"expect must be one of {', '.join(DecisionKind)}, not {expect!r}")
    turns = read_history(history)
    plain_history: list = [t.content if t.role != ASSISTANT else {"role": ASSISTANT, "content": t.content}
                           for t in turns]
    if case_id is None:
        taken = _taken_ids(regressions_path(pack).parent) if pack is not None else set()
        base = f"regression/{_slug(message)}"
        case_id, n = base, 2
        while case_id in taken:
            case_id, n = f"{base}-{n}", n + 1
    entry: dict = {"id": case_id, "message": message}
    if plain_history:
        entry["history"] = plain_history
    entry["expect"] = expect
    if open is None:
        open = pack is not None and not _passes(pack, entry)
    if open:
        entry["open"] = True
    if note is None and pack is not None:
        d = pack.classify(message, history)
        got = d.kind + (f" by {d.rule}" if d.rule else "")
        note = f"Saved from the playground: {pack.name} {pack.version} ({pack.content_hash}) gave {got}."
    if note:
        entry["note"] = note
    return entry


def _passes(pack, entry: dict) -> bool:
    """Whether ``pack`` passes the case ``entry`` as its corpus would judge it."""
    from .judge import Evaluator
    from .model import Case, history_item

    case = Case(id=entry["id"], message=entry["message"], expect=entry["expect"], generated=False,
                history=tuple(history_item(h) for h in entry.get("history", ())))
    return Evaluator(pack).run(case).ok


#: characters a YAML file may not hold as they are (or reads as line breaks): written as escapes
_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")


def _q(value: str) -> str:
    """A YAML double-quoted scalar: a JSON string, with what YAML would not read back as it is escaped."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, ensure_ascii=False))


def render_entry(entry: dict) -> str:
    """``entry`` as one item of a ``cases:`` block list, two spaces in, as the hand-written cases are."""
    plain_id = re.fullmatch(r"[a-z0-9][a-z0-9/_.-]*", entry["id"]) is not None
    lines = [f"  - id: {entry['id'] if plain_id else _q(entry['id'])}", f"    message: {_q(entry['message'])}"]
    if entry.get("history"):
        lines.append("    history:")
        for item in entry["history"]:
            if isinstance(item, str):
                lines.append(f"      - {_q(item)}")
            else:
                lines.append(f"      - {{role: {item['role']}, content: {_q(item['content'])}}}")
    lines.append(f"    expect: {entry['expect']}")
    if entry.get("open"):
        lines.append("    open: true")
    if entry.get("note"):
        lines.append(f"    note: {_q(entry['note'])}")
    return "\n".join(lines) + "\n"


def _header(target: Path) -> str:
    from .files import schema_ref

    ref = schema_ref(target)
    return (f"# yaml-language-server: $schema={ref}\n#\n" if ref else "") + _HEADER


def _refuse_installed(pack, target: Path) -> None:
    from ..pack.discovery import display
    from ..resources import inside_package

    if inside_package(target):
        raise UsageError(f"{pack.name} is the bundled pack of an installed cleo-rules ({display(Path(pack.path))}); "
                         f"saving a regression never writes into the installed package", code="E205")


def _not_appended(shown: str, reason: str) -> CleoError:
    return CleoError(f"{shown}: {reason}; the case was not appended", code="E206")


def _full(shown: str, what: str) -> CleoError:
    return CleoError(f"{shown} {what}, over the limit of {MAX_FILE_BYTES} bytes (1 MiB) every corpus file is held "
                     f"to; the case was not appended", code="E207")


def _read_cases(path: Path, shown: str) -> list:
    """The ``cases`` of a hand-written corpus file, read as the corpus reads it (plain YAML, the schema)."""
    from ..reading.load import load_yaml
    from ..reading.validate import find_schema_problems

    src, problems = load_yaml(path, shown)
    if src is None or problems:
        raise _not_appended(shown, (problems[0].message if problems else "it cannot be read"))
    found = find_schema_problems(src, "corpus")
    if found:
        first = found[0]
        raise _not_appended(shown, f"line {first.line}: {first.message}")
    data = src.data if isinstance(src.data, dict) else {}
    cases = data.get("cases")
    return list(cases) if isinstance(cases, list) else []


def save_regression(pack, entry: dict, *, write: bool = True, path: Path | None = None) -> Saved:
    """Append ``entry`` (see :func:`regression_entry`) to the pack's ``regressions.yaml``, or only render it.

    ``write=False`` writes nothing and returns the YAML. The file (default:
    :func:`regressions_path`) is created with a header when the corpus
    directory has none. Raises :class:`~cleo_rules.errors.UsageError` (E205)
    for the bundled pack of an installed cleo-rules, and
    :class:`~cleo_rules.errors.CleoError` when the pack has no corpus
    directory (E203: ``cleo-rules corpus build`` makes one) or the file's
    layout would not take the case (E206); nothing is written then.
    """
    from .files import display

    target = Path(path) if path is not None else regressions_path(pack)
    block = render_entry(entry)
    if not write:
        return Saved(entry["id"], block, target, False, bool(entry.get("open")))
    _refuse_installed(pack, target)
    shown = display(target)
    if not target.parent.is_dir():
        # a corpus holds the generated cases too: one started with a single case would fail the pack's coverage
        raise CleoError(f"no corpus at {display(target.parent)}", code="E203")
    with _lock:
        try:
            size = target.stat().st_size
            if size > MAX_FILE_BYTES:  # never read whole: the corpus would not read it either
                raise _full(shown, f"is {size} bytes")
            old = target.read_text(encoding="utf-8")
        except FileNotFoundError:
            old = None
        except (OSError, UnicodeDecodeError) as exc:
            raise _not_appended(shown, f"it cannot be read ({exc})") from None
        before = _read_cases(target, shown) if old is not None else []
        text = (old.rstrip("\n") + "\n\n" if old is not None else _header(target)) + block
        if old is not None and re.search(r"^cases:\s*\[\s*\]\s*$", old, re.M):
            text = re.sub(r"^cases:\s*\[\s*\]\s*$", "cases:", old.rstrip("\n"), count=1, flags=re.M) + "\n" + block
        size = len(text.encode("utf-8"))
        if size > MAX_FILE_BYTES:
            raise _full(shown, f"would be {size} bytes with the case")
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
            layout = "its `cases:` list does not end the file, so the case would not be added to it"
            try:
                after = _read_cases(tmp, shown)
            except CleoError:
                raise _not_appended(shown, layout) from None
            if len(after) != len(before) + 1 or after[-1] != entry:
                raise _not_appended(shown, layout)
            if old is not None:
                os.chmod(tmp, target.stat().st_mode & 0o7777)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
    return Saved(entry["id"], block, target, True, bool(entry.get("open")))
