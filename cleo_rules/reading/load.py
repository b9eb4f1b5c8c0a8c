"""Read a pack directory's YAML files, keeping where every value came from.

Only plain YAML is accepted: the standard scalar types, lists and mappings.
Tags that construct objects (``!!python/object``, ``!!binary``, custom ``!tags``),
anchors and aliases, duplicate keys, nesting deeper than :data:`MAX_YAML_DEPTH`,
scalars that cannot be read as their tag says (``!!int abc``, an integer of
thousands of digits, a sexagesimal ``1:30``) and numbers that are not finite
(``.nan``, ``.inf``) are errors with a position. Files are bounded in number
and size and must be regular files, and a manifest cannot name a file
outside its pack directory.

Positions are counted as editors count them: U+0085, U+2028 and U+2029,
which YAML 1.1 reads as line breaks, are ordinary characters here (in a
comment or a string alike).
"""

from __future__ import annotations

import hashlib
import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import Problem
from ..incremental import Memo
from . import flow

MANIFEST = "pack.yaml"
MAX_FILES = 64
MAX_FILE_BYTES = 1 << 20  # 1 MiB
MAX_YAML_DEPTH = 64  # nested lists and mappings in one file

# YAML 1.1 line breaks that editors show as characters: read as placeholders, restored in strings.
_UNICODE_BREAKS = "\x85\u2028\u2029"

_ALLOWED_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:seq",
    "tag:yaml.org,2002:map",
}


def pointer_join(pointer: str, token) -> str:
    token = str(token).replace("~", "~0").replace("/", "~1")
    return f"{pointer}/{token}"


@dataclass(frozen=True)
class LoadedFile:
    """One YAML file as loaded: its document, with the position of every value and key in it.

    ``values`` and ``keys`` map a JSON pointer to a 1-based ``(line, col)``;
    ``styles`` maps a pointer to the scalar style (``None`` plain, ``'"'``,
    ``"'"``, ``"|"``, ``">"``) so a regex error can point inside the string.
    """

    path: Path
    display: str
    data: Any
    values: dict = field(default_factory=dict, compare=False)
    keys: dict = field(default_factory=dict, compare=False)
    styles: dict = field(default_factory=dict, compare=False)

    def where(self, pointer: str, *, key: bool = False) -> tuple[int, int]:
        """Best known position for ``pointer``: the key when asked, else the value.

        Falls back to the nearest ancestor that has a position.
        """
        table = self.keys if key else self.values
        p = pointer
        while True:
            if p in table:
                return table[p]
            if key and p in self.values:
                return self.values[p]
            if not p:
                return (1, 1)
            p = p.rsplit("/", 1)[0]

    def problem(self, code, message, pointer="", *, rule=None, help="", key=False, rank=50, offset=0, severity="error"):
        line, col = self.where(pointer, key=key)
        return Problem(code=code, message=message, file=self.display, line=line, col=col + offset,
                       pointer=pointer, rule=rule, help=help, rank=rank, severity=severity)


#: documents read without a problem, by the SHA-256 of their text, at most 16 MiB of text (see :func:`parse_yaml`)
PARSED = _parsed = Memo(16 << 20)


class _Reject(Exception):
    def __init__(self, problem_args):
        self.problem_args = problem_args


class _Loader(yaml.SafeLoader):
    """SafeLoader that refuses aliases while composing (no expansion bombs) and deep nesting."""

    def __init__(self, stream):
        super().__init__(stream)
        self.depth = 0

    def compose_node(self, parent, index):
        if self.depth >= MAX_YAML_DEPTH:
            mark = self.peek_event().start_mark
            raise _Reject(("E102", f"lists and mappings nested more than {MAX_YAML_DEPTH} levels deep",
                           mark.line + 1, mark.column + 1, "flatten the structure; rule files need a few levels"))
        self.depth += 1
        try:
            return self._compose_node(parent, index)
        finally:
            self.depth -= 1

    def _compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            mark = event.start_mark
            raise _Reject(("E112", "anchors and aliases are not supported in rule files",
                           mark.line + 1, mark.column + 1,
                           "write the repeated value out in full"))
        event = self.peek_event()
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            mark = event.start_mark
            raise _Reject(("E112", f"anchor &{anchor} is not supported in rule files",
                           mark.line + 1, mark.column + 1, "remove the anchor and write values out in full"))
        return super().compose_node(parent, index)


_TAG_NAMES = {"tag:yaml.org,2002:int": "an integer", "tag:yaml.org,2002:float": "a number",
              "tag:yaml.org,2002:bool": "true or false", "tag:yaml.org,2002:null": "null"}


def _scalar(node, loader, restore):
    """The value of a scalar node, or :class:`_Reject` when it cannot be read as its tag says."""
    at = (node.start_mark.line + 1, node.start_mark.column + 1)
    shown = node.value if len(node.value) <= 40 else node.value[:37] + "..."
    if node.tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float") and ":" in node.value:
        raise _Reject(("E103", f"{shown!r} reads as a sexagesimal (base 60) number", *at,
                       "write the number in decimal, or quote the value if it is text"))
    try:
        value = loader.construct_object(node)
    except (ValueError, TypeError, KeyError, OverflowError) as exc:
        what = _TAG_NAMES.get(node.tag, node.tag)
        why = f"{shown!r} has {len(node.value)} characters, too many digits to read as an integer" \
            if "digits" in str(exc) else f"{shown!r} is tagged {what} but is not one"
        raise _Reject(("E103", why, *at,
                       "write a plain value of that type, or quote it and drop the tag if it is text")) from None
    if isinstance(value, float) and not math.isfinite(value):
        raise _Reject(("E104", f"{shown!r} is not a finite number", *at,
                       "write a number such as 50; NaN and infinity turn every bound off"))
    if isinstance(value, str) and restore:
        value = value.translate(restore)
    return value


def _convert(node, pointer, src_values, src_keys, styles, loader, display, restore=None, runs=None):
    """Turn a composed node into plain data, recording positions.

    ``runs`` maps the position of a ``[`` to the strings :mod:`.flow` read from
    its sequence, which the loader was given blanked (empty).
    """
    src_values[pointer] = (node.start_mark.line + 1, node.start_mark.column + 1)
    tag = node.tag
    if tag not in _ALLOWED_TAGS:
        raise _Reject(("E111", f"YAML tag {tag!r} is not allowed in rule files",
                       node.start_mark.line + 1, node.start_mark.column + 1,
                       "use plain strings, numbers, booleans, lists and mappings; remove the tag"))
    if isinstance(node, yaml.MappingNode):
        out = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag not in _ALLOWED_TAGS:
                raise _Reject(("E111", "mapping keys must be plain strings",
                               key_node.start_mark.line + 1, key_node.start_mark.column + 1,
                               "write the key as a plain word"))
            key = _scalar(key_node, loader, restore)
            if not isinstance(key, str):
                key = str(key) if not isinstance(key, bool) else str(key).lower()
            child = pointer_join(pointer, key)
            if key in out:
                first = src_keys.get(child, (0, 0))
                raise _Reject(("E113", f"duplicate key {key!r} (first at line {first[0]})",
                               key_node.start_mark.line + 1, key_node.start_mark.column + 1,
                               "a key may appear once per mapping; merge or remove one of them"))
            src_keys[child] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            out[key] = _convert(value_node, child, src_values, src_keys, styles, loader, display, restore, runs)
        return out
    if isinstance(node, yaml.SequenceNode):
        if runs and not node.value and node.flow_style:
            run = runs.get(src_values[pointer])
            if run is not None:
                return _splice(run, node, pointer, src_values, styles, restore)
        return [
            _convert(item, pointer_join(pointer, i), src_values, src_keys, styles, loader, display, restore, runs)
            for i, item in enumerate(node.value)
        ]
    styles[pointer] = node.style
    return _scalar(node, loader, restore)


class _NotFlow(Exception):
    """A sequence :mod:`.flow` read is not what the loader saw there: the file is read by the loader alone."""


def _splice(run, node, pointer, src_values, styles, restore) -> list:
    """The strings of a blanked flow sequence, with their positions, as the loader would have read them."""
    close = (node.end_mark.line + 1, node.end_mark.column)  # the "]": the mark is just past it
    depth = pointer.count("/") + 1  # of the strings: deeper than MAX_DEPTH is the loader's error to report
    if run.used or depth >= MAX_YAML_DEPTH or close != run.close:
        raise _NotFlow
    run.used = True
    items = run.items if restore is None else [s.translate(restore) for s in run.items]
    for i, place in enumerate(run.places):
        child = f"{pointer}/{i}"
        src_values[child] = place
        styles[child] = '"'
    return list(items)


def _placeholders(text: str) -> tuple[str, dict | None]:
    """``text`` with U+0085, U+2028 and U+2029 swapped for private-use characters it does not hold.

    Returns the text and the table that turns the placeholders back (None when none was needed).
    """
    if not any(ch in text for ch in _UNICODE_BREAKS):
        return text, None
    free = (chr(c) for c in range(0xF8FF, 0xE000, -1) if chr(c) not in text)
    there = {ch: next(free) for ch in _UNICODE_BREAKS}
    return text.translate({ord(k): v for k, v in there.items()}), {ord(v): k for k, v in there.items()}


def load_yaml(path: Path, display: str | None = None) -> tuple[LoadedFile | None, list[Problem]]:
    """Load one rule file. Returns ``(source, [])`` or ``(None, problems)``."""
    display = display or str(path)
    try:
        st = path.stat()
    except OSError as exc:
        return None, [Problem("E108", f"cannot read file: {exc.strerror or exc}", display, rank=1,
                              help="check the path in the manifest's files list")]
    if not stat.S_ISREG(st.st_mode):  # a FIFO would hang the read, a device never end
        return None, [Problem("E108", "cannot read file: not a regular file", display, rank=1,
                              help="name a plain file; a directory, FIFO or device cannot be a rule file")]
    size = st.st_size
    if size > MAX_FILE_BYTES:
        return None, [Problem("E114", f"file is {size} bytes, over the limit of {MAX_FILE_BYTES}", display,
                              line=1, col=1, rank=1, help="split the file or trim it")]
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:  # a directory named like a file, a file gone since stat
        return None, [Problem("E108", f"cannot read file: {exc.strerror or exc}", display, rank=1,
                              help="check the path names a readable file")]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, [Problem("E116", "file is not valid UTF-8", display, line=line, col=col, rank=1,
                              help="save the file as UTF-8")]
    if len(raw) > MAX_FILE_BYTES:  # grew since stat
        return None, [Problem("E114", f"file is over the limit of {MAX_FILE_BYTES} bytes", display,
                              line=1, col=1, rank=1, help="split the file or trim it")]
    return parse_yaml(text, path, display)


def parse_yaml(text: str, path: Path, display: str, *, min_flow_items: int = flow.MIN_ITEMS
               ) -> tuple[LoadedFile | None, list[Problem]]:
    """Parse the text of one file as :func:`load_yaml` does (no size check: the caller bounds it).

    Long flow sequences of plain strings (a generated word list) are read by
    :mod:`.flow` when the loader confirms where they are; the result is the
    same, and any problem is found by the loader reading the whole text.

    A text read without a problem is remembered by its content (:data:`PARSED`, at
    most 16 MiB of text, least recently used dropped): the same text read again, at
    any path, is the same document with the same positions, so an unchanged file
    of a pack being edited is not parsed again. The document is shared: nothing
    may change it (nothing does; a test holds to it).
    """
    digest = (hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest(), min_flow_items)
    known = _parsed.get(digest)
    if known is not None:
        data, values, keys, styles = known
        return LoadedFile(path, display, data, values, keys, styles), []
    found = _parse_text(text, path, display, min_flow_items)
    src = found[0]
    if src is not None and not found[1]:
        _parsed.put(digest, (src.data, src.values, src.keys, src.styles), len(text))
    return found


def _parse_text(text: str, path: Path, display: str, min_flow_items: int) -> tuple[LoadedFile | None, list[Problem]]:
    """:func:`parse_yaml` without its memory."""
    if text.startswith("\ufeff"):
        text = text[1:]
    text, restore = _placeholders(text)
    runs = flow.find_runs(text, min_flow_items) if "\r" not in text else []
    if runs:
        found = _parse(flow.blank(text, runs), path, display, restore, {(r.line, r.col): r for r in runs})
        if found is not None and found[0] is not None and all(r.used for r in runs):
            return found
    found = _parse(text, path, display, restore)
    assert found is not None  # without runs nothing is refused
    return found


def _parse(text: str, path: Path, display: str, restore, runs=None) -> tuple[LoadedFile | None, list[Problem]] | None:
    """The loader on ``text``; None when ``runs`` were given and one is not where the loader found a sequence."""
    loader = None
    values, keys, styles = {}, {}, {}
    try:
        loader = _Loader(text)  # checks every character first
        node = loader.get_single_node()
        if node is None:
            return None, [Problem("E117", "file is empty", display, line=1, col=1, rank=2,
                                  help="a rule file needs at least a `kind` key")]
        data = _convert(node, "", values, keys, styles, loader, display, restore, runs)
    except _NotFlow:
        return None
    except _Reject as rej:
        code, msg, line, col, hint = rej.problem_args
        return None, [Problem(code, msg, display, line=line, col=col, rank=1, help=hint)]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        what = exc.problem or "malformed YAML"
        if exc.context:
            what = f"{exc.context}: {what}" if "while" not in exc.context else f"{what} ({exc.context})"
        return None, [Problem("E110", f"YAML syntax error: {what}", display, line=line, col=col, rank=0,
                              help="check indentation, colons and quoting around this position")]
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (NUL, other controls)
        line = text.count("\n", 0, exc.position) + 1
        col = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        what = f"U+{exc.character:04X}" if isinstance(exc.character, int) else repr(exc.character)
        return None, [Problem("E110", f"YAML syntax error: the character {what} is not allowed in YAML",
                              display, line=line, col=col, rank=0,
                              help="remove it; in a double-quoted string write a control character as an escape (\\t)")]
    except yaml.YAMLError as exc:
        return None, [Problem("E110", f"YAML error: {exc}", display, line=1, col=1, rank=0,
                              help="check the file is plain YAML")]
    finally:
        if loader is not None:
            loader.dispose()
    return LoadedFile(path=path, display=display, data=data, values=values, keys=keys, styles=styles), []


def resolve_member(pack_dir: Path, name: str) -> Path | None:
    """The path of a file named in the manifest, or None if it escapes the pack."""
    if not isinstance(name, str) or not name or "\x00" in name:
        return None
    candidate = Path(name)
    if candidate.is_absolute() or ".." in candidate.parts:
        return None
    full = (pack_dir / candidate)
    try:
        real = Path(os.path.realpath(full))
        root = Path(os.path.realpath(pack_dir))
    except OSError:
        return None
    if real != root and root not in real.parents:
        return None
    return full


def display(path) -> str:
    """How a path is named in messages: relative to the working directory when inside it, else as given."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive
        return str(path)
    return rel if not rel.startswith("..") else str(path)
