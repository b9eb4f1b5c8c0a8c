"""Schema validation and lints, with every problem placed.

jsonschema reports where in the *document* a problem is (``absolute_path``);
:class:`~cleo_rules.reading.load.LoadedFile` knows where each document value sits in
the *file*. Joining the two gives ``file:line:col``, the JSON pointer and the
rule id for every finding. Messages are rewritten for people, with one line
of help each; the most relevant (jsonschema's ``relevance``) come first.

The lint reads one pattern (:func:`lint_pattern`: its size before it is
compiled, its control characters, named groups, empty matches and
backtracking judged); a pack's templates are linted where they are read
(:mod:`cleo_rules.pack.templates`). Names follow one convention: ``find_*``
and ``lint_*`` return problems, ``check_*`` raise.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import unicodedata
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import regex
from jsonschema import validators
from jsonschema.exceptions import relevance
from jsonschema.protocols import Validator

from .. import timed
from ..errors import Problem
from ..jsonl import json_type
from ..kinds import FileKind
from ..resources import schemas_dir
from . import backtracking, bounds
from ..incremental import Memo
from .load import LoadedFile, pointer_join

_TYPE_NAMES = {"string": "a string", "integer": "a whole number", "number": "a number", "array": "a list",
               "object": "a mapping", "boolean": "true or false", "null": "nothing"}


@lru_cache(maxsize=None)
def validator(name: str) -> Validator:
    """The validator of the bundled schema ``name`` (``schemas/<name>.schema.json``)."""
    with open(schemas_dir() / f"{name}.schema.json", encoding="utf-8") as fh:
        return validator_of(json.load(fh))


def validator_of(schema: Mapping) -> Validator:
    """A validator of ``schema``, a JSON Schema (a rule family's own), as the bundled ones are read."""
    cls = validators.validator_for(schema)
    # JSON Schema counts 10.0 as an integer; a count in a rule file is written as a whole number
    whole = cls.TYPE_CHECKER.redefine("integer", lambda _, v: isinstance(v, int) and not isinstance(v, bool))
    return validators.extend(cls, type_checker=whole)(schema)


def rule_id_at(data, pointer: str) -> str | None:
    """The id of the rule or set that ``pointer`` falls inside, if any."""
    parts = pointer.split("/")
    if len(parts) >= 3 and parts[1] in ("rules", "sets") and isinstance(data, dict):
        items = data.get(parts[1])
        if not isinstance(items, list):
            return None
        try:
            item = items[int(parts[2])]
        except (ValueError, IndexError):
            return None
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            return item["id"]
    return None


def _describe(error, source: LoadedFile) -> list[Problem]:
    """Turn one jsonschema error into one or more placed problems."""
    pointer = "".join(pointer_join("", p) for p in error.absolute_path)
    rule = rule_id_at(source.data, pointer)
    v = error.validator
    schema = error.schema if isinstance(error.schema, dict) else {}
    inst = error.instance
    mk = lambda code, msg, help, ptr=pointer, key=False: source.problem(code, msg, ptr, rule=rule, help=help, key=key)

    if v == "additionalProperties" and isinstance(inst, dict):
        allowed = sorted(schema.get("properties", {}))
        out = []
        for extra in sorted(set(inst) - set(allowed)):
            guess = difflib.get_close_matches(extra, allowed, n=1)
            hint = f"did you mean {guess[0]!r}? " if guess else ""
            out.append(mk("E121", f"unknown key {extra!r}",
                          f"{hint}allowed keys here: {', '.join(allowed)}", pointer_join(pointer, extra), key=True))
        return out
    if v == "required" and isinstance(inst, dict):
        missing = [k for k in error.validator_value if k not in inst]
        out = []
        for key in missing:
            help = f"add `{key}:`"
            if key in ("examples", "counterexamples", "request_forms"):
                help += " with at least one message; every rule is tested in both directions"
            elif key == "description":
                help += " with one sentence saying what the rule recognises"
            out.append(mk("E122", f"missing required key {key!r}", help))
        return out
    if v == "type":
        want = error.validator_value
        want_s = " or ".join(_TYPE_NAMES.get(str(w), str(w)) for w in (want if isinstance(want, list) else [want]))
        help = f"write {want_s} here"
        if want == "string" and isinstance(inst, bool):
            help = ("quote it: YAML reads yes/no/on/off/true/false as booleans, "
                    "so write 'yes' in quotes")
        elif want == "string" and isinstance(inst, (int, float)):
            help = f"quote the value so YAML keeps it as text: '{inst}'"
        elif want == "integer" and isinstance(inst, float):
            help = f"write {int(inst)}, without the decimal point" if inst.is_integer() else "write a whole number"
        elif want == "array" and isinstance(inst, str):
            help = f"make it a list: [{json.dumps(inst)}]"
        return [mk("E123", f"expected {want_s}, found {json_type(inst, as_yaml=True)}", help)]
    if v == "oneOf" and pointer.endswith("/pattern"):
        if isinstance(inst, list):  # a list with an item that is not a string: point at the item
            for j, item in enumerate(inst):
                if not isinstance(item, str):
                    return [mk("E123", f"expected a regex string, found {json_type(item, as_yaml=True)}",
                               "write each pattern of the list as a quoted string", pointer_join(pointer, j))]
        return [mk("E123", f"expected a regex string or a list of them, found {json_type(inst, as_yaml=True)}",
                   "write the pattern as a quoted string")]
    if v == "oneOf" and pointer.startswith("/extends/"):
        if isinstance(inst, dict):  # the mapping's own fault: a key misspelt, or no pack
            own = [e for e in error.context or () if e.validator != "type"]  # the string form's is a type error
            if own:
                return _describe(sorted(own, key=relevance)[0], source)
        return [mk("E123", f"expected a pack (its name, or a directory) or a mapping {{pack, version}}, found "
                           f"{json_type(inst, as_yaml=True)}",
                   "write cleo-en, ./base, or {pack: cleo-en, version: '^1.0'}")]
    if v == "const":
        return [mk("E124", f"{pointer.rsplit('/', 1)[-1] or 'value'} must be {error.validator_value!r}, found {inst!r}",
                   f"set it to {error.validator_value!r}")]  # a rule file's kind names its family already
    if v == "enum":
        return [mk("E124", f"{inst!r} is not one of {', '.join(map(repr, error.validator_value))}",
                   f"use one of: {', '.join(map(str, error.validator_value))}")]
    if v in ("minItems", "minProperties"):
        n = error.validator_value
        return [mk("E125", f"needs at least {n} item{'s' if n != 1 else ''}, has {len(inst)}",
                   "add items; rules are tested in both directions" if "example" in pointer else "add items")]
    if v == "maxItems":
        return [mk("E125", f"has {len(inst)} items, at most {error.validator_value} allowed", "remove items")]
    if v == "minLength":
        return [mk("E125", "must not be empty", "write a value or remove the entry")]
    if v == "uniqueItems":
        return [mk("E126", "items must be unique", "remove the repeated item")]
    if v == "pattern":
        desc = schema.get("description", "")
        parts = [part for part in pointer.split("/") if part and not part.isdigit()]
        what = parts[-1] if parts else "value"
        if what == "files":
            what, desc = "file name", "a .yaml file inside the pack directory, named relative to pack.yaml"
        return [mk("E127", f"{inst!r} is not a valid {what}", desc or f"it must match {error.validator_value}")]
    if v in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return [mk("E128", f"{inst!r} is out of range ({v} {error.validator_value})", schema.get("description", ""))]
    return [mk("E120", error.message, schema.get("description", "see the schema in schemas/"))]


def find_schema_problems(source: LoadedFile, schema: str | Mapping) -> list[Problem]:
    """Every way ``source`` breaks a JSON Schema, placed and worded for people.

    ``schema`` is a bundled schema's name (``"pack"``, ``"corrections"``) or
    a schema itself (a rule family's own, :attr:`Family.schema
    <cleo_rules.families.Family.schema>`).
    """
    key = (id(source.data), schema) if isinstance(schema, str) else None
    known = _checked.get(key) if key is not None else None
    if known is not None and known[0] is source.data:  # the very document (shared by the loader's memory)
        return [p if p.file != known[1] else dataclasses.replace(p, file=source.display) for p in known[2]]
    check = validator(schema) if isinstance(schema, str) else validator_of(schema)
    errors = sorted(check.iter_errors(source.data), key=relevance)
    problems: list[Problem] = []
    for rank, error in enumerate(errors):
        for p in _describe(error, source):
            problems.append(Problem(**{**p.__dict__, "rank": 10 + rank}))
    if key is not None:
        _checked.put(key, (source.data, source.display, tuple(problems)))
    return problems


#: the findings of a bundled schema on a document, by the document's identity: a document the loader remembers
#: (:func:`~cleo_rules.reading.load.parse_yaml`) is checked once, however often the file is read
_checked = Memo(256)


def read_kind(source: LoadedFile, known: Sequence[str]) -> tuple[str | None, list[Problem]]:
    """The ``kind:`` of a rule file, one of ``known``; else None and the problem, placed at the ``kind:`` (or
    at the file's start when it has none), with the known kinds and the nearest one."""
    data = source.data
    if not isinstance(data, dict):
        found = json_type(data, as_yaml=True)
        return None, [source.problem("E120", f"a rule file must be a mapping, found {found}", "",
                                     help="start the file with `kind: ...`", rank=5)]
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in known:
        if "kind" not in data:
            return None, [source.problem("E122", "missing required key 'kind'", "",
                                         help=f"add `kind:` with one of {', '.join(known)}", rank=5)]
        guess = difflib.get_close_matches(str(kind), [str(k) for k in known], n=1)
        hint = f"did you mean {guess[0]!r}? " if guess else ""
        return None, [source.problem("E124", f"unknown file kind {kind!r}", "/kind",
                                     help=f"{hint}kinds: {', '.join(known)}", rank=5)]
    return kind, []


# What a control character in a pattern most likely came from: YAML double quotes read these escapes.
_CONTROL_NAMES = {
    "\x00": 'a NUL character ("\\0" in double quotes)',
    "\x07": 'a bell character ("\\a" in double quotes)',
    "\x08": 'a backspace ("\\b" in double quotes, so not a word boundary)',
    "\x0b": 'a vertical tab ("\\v" in double quotes)',
    "\x0c": 'a form feed ("\\f" in double quotes)',
    "\x1b": 'an escape character ("\\e" in double quotes)',
}
_LAYOUT = frozenset("\t\n\r")  # white space a verbose (?x) pattern may hold


def lint_control_characters(src: LoadedFile, ptr: str, rid: str | None, pattern: str) -> list[Problem]:
    """A pattern holding a control character: almost always a double-quoted YAML escape (``"\\bwhy"``)."""
    for i, ch in enumerate(pattern):
        if ch in _LAYOUT or unicodedata.category(ch) != "Cc":
            continue
        what = _CONTROL_NAMES.get(ch, f"the control character U+{ord(ch):04X}")
        style = src.styles.get(ptr)
        help = ("in YAML double quotes a backslash starts an escape (\"\\b\" is a backspace): write the pattern in "
                "single quotes ('\\bwhy'), or double each backslash (\"\\\\bwhy\")" if style == '"' else
                "remove the control character; write regex escapes such as \\b inside single quotes")
        return [src.problem("E140", f"pattern holds {what} at position {i}", ptr, rule=rid, rank=3, help=help)]
    return []


def lint_pattern(src: LoadedFile, ptr: str, rid: str | None, pattern: str) -> tuple[Any, list[Problem]]:
    """Compile one pattern and lint it. Returns ``(compiled or None, problems)``.

    The lints: a pattern too big to compile (E147, :mod:`.bounds`, judged
    before compiling), a control character (E140), a pattern that does not compile
    (E130), named groups (E138), a match on the empty message (E139), and
    catastrophic backtracking (E131, :mod:`.backtracking`).
    """
    too_big = bounds.size_problem(pattern)
    if too_big:  # before regex.compile, which would expand it
        return None, [src.problem("E147", too_big, ptr, rule=rid, rank=3,
                                  help="use an open repeat (+, *) or a smaller count; counted repeats of groups "
                                       "are copied out in full when compiled")]
    control = lint_control_characters(src, ptr, rid, pattern)
    try:
        compiled = regex.compile(pattern)
    except regex.error as exc:
        pos = getattr(exc, "pos", None)
        style = src.styles.get(ptr, "x")
        offset = 0
        if pos is not None and style in (None, "'", '"'):
            offset = pos + (0 if style is None else 1)
        where = f" at pattern position {pos}" if pos is not None else ""
        return None, [src.problem("E130", f"pattern does not compile: {getattr(exc, 'msg', exc)}{where}",
                                  ptr, rule=rid, offset=offset, rank=3,
                                  help="fix the regex syntax; in YAML prefer single quotes so backslashes stay as typed")]
    except ValueError as exc:  # flags that exclude each other, (?a)(?u): the engine raises no regex.error for them
        return None, [src.problem("E130", f"pattern does not compile: {exc}", ptr, rule=rid, rank=3,
                                  help="keep one of the flags (?a), (?u) and (?L); a rule's text is Unicode, so (?u), "
                                       "the default, is the one to keep")]
    problems = control
    if compiled.groupindex:
        problems.append(src.problem("E138", f"pattern uses named group(s) {', '.join(compiled.groupindex)}", ptr,
                                    rule=rid, rank=4, help="use (?:...) instead; rule patterns are combined and names would clash"))
    try:
        empty = timed.search(compiled.search, "", 0.5, tries=timed.GATE_TRIES)
    except TimeoutError:  # no pattern takes that long on nothing; the probe below judges slow ones
        empty = None
    if empty is not None:
        problems.append(src.problem("E139", "pattern matches the empty message", ptr, rule=rid, rank=4,
                                    help="a rule must require some text; check for a pattern that is all optional"))
    why = _risk(pattern, compiled)
    if why:
        problems.append(src.problem("E131", f"pattern can backtrack catastrophically: {why}", ptr, rule=rid, rank=3,
                                    help="avoid nested repeats like (\\w+\\s?)+ and overlapping alternatives like (a|aa)+; "
                                         "bound the repeat ({0,4}) or make each round end in a fixed character"))
    return compiled, problems


def _risk(pattern: str, compiled) -> str | None:
    """Why ``pattern`` can backtrack catastrophically (:func:`~.backtracking.static_risk`, then
    :func:`~.backtracking.probe`), or None; memoized by the pattern's text (:data:`_risks`), so the patterns of
    a pack being edited that did not change are not probed again. A probe that ran out of time is not memoized:
    the time may have been the machine's load, so the pattern is probed again the next time it is linted."""
    known = _risks.get(pattern)
    if known is not None:
        return known or None
    why = backtracking.static_risk(pattern)
    if why is None:
        why = backtracking.probe(compiled, pattern)
        if why is not None:
            return why
    _risks.put(pattern, why or "", len(pattern) + 64)
    return why


#: the backtracking verdict of each pattern linted, by its text (at most 4 MiB of patterns)
_risks = Memo(4 << 20)
