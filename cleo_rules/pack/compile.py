"""Compile a pack directory into an immutable :class:`Pack`.

Stages: read the manifest and files (:mod:`.load`), validate each against its
JSON Schema and lint (:mod:`.validate`, :mod:`.backtracking`), build the
:class:`~cleo_rules.matcher.Matcher`, then check every example,
counterexample and request form against the compiled pack. All problems are
collected; any error raises :class:`~cleo_rules.errors.PackError` with the
most useful one first.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

import regex

from ..decision import Decision
from ..errors import PackError, PackNotFound, Problem
from ..explain import Explanation
from ..matcher import Matcher
from ..resources import rules_dir
from . import backtracking
from .load import MANIFEST, MAX_FILES, Source, load_yaml, pointer_join, resolve_member
from .validate import check_combine, file_kind, schema_problems

DEFAULT_CONTEXT = {
    "header": "Memory recalled for this turn (searched for: {query}):",
    "snippet": "- From the conversation \"{title}\" ({date}): {text}",
    "passage": "- From the document \"{title}\" ({date}): {text}",
    "skipped": "No memory search was made for this turn.",
    "empty": "A memory search was made for this turn (searched for: {query}); it found nothing relevant.",
    "footer": "",
}


@dataclass(frozen=True)
class Settings:
    min_chars: int = 10
    max_follow_up_words: int = 12
    combine: str = "{anchor}\n{message}"
    timeout_ms: float = 50
    max_scan_chars: int = 4000
    anchor_lookback: int = 50
    referents: bool = True
    combine_resolved: str = "{referent}\n{message}"
    reply_words: int = 20
    max_referent_words: int = 12
    antecedent_reach: int = 6


@dataclass(frozen=True)
class VocabSet:
    id: str
    role: str
    description: str
    words: tuple[str, ...]
    token_patterns: tuple[str, ...]
    examples: tuple[str, ...]
    counterexamples: tuple[str, ...]
    file: str
    line: int
    generate: Mapping | None = None
    kind: str = "vocabulary"


@dataclass(frozen=True)
class PatternRule:
    id: str
    kind: str  # "follow_up" or "correction"
    description: str
    pattern: str
    examples: tuple[str, ...]
    counterexamples: tuple[str, ...]
    file: str
    line: int
    request_forms: tuple[str, ...] = ()
    max_content_words: int | None = None
    min_content_words: int = 0
    max_content_before: int | None = None
    generate: Mapping | None = None
    compiled: Any = field(default=None, compare=False, repr=False)
    max_words: int | None = None
    unless_name_before: bool = False
    unless_name: bool = False
    head_in: str | None = None
    after_vocabulary: bool = False
    requires_antecedent: bool = False

    @property
    def guarded(self) -> bool:
        """Whether a match must also pass a check on the text as typed or on the lexicon."""
        return self.unless_name_before or self.unless_name or self.head_in is not None

    @property
    def topic_bounded(self) -> bool:
        """Whether the rule bounds the topic words around its match."""
        return self.max_content_words is not None or bool(self.min_content_words) \
            or self.max_content_before is not None


@dataclass(frozen=True)
class ReferentRule:
    """A rule of a ``referents`` file: referring words and how their referent is selected."""

    id: str
    description: str
    pattern: str
    select: str
    examples: tuple  # of mappings: message, history, referent
    counterexamples: tuple
    file: str
    line: int
    reach: int | None = None
    compiled: Any = field(default=None, compare=False, repr=False)
    kind: str = "referent"
    unless_name: bool = False


class Pack:
    """A compiled, immutable rule pack.

    ``classify(message, history=())`` returns a :class:`Decision`;
    ``explain`` also lists every rule tried. Attributes: ``name``,
    ``version``, ``locale``, ``content_hash``, ``settings``, ``rules``,
    ``context`` (templates for the context block), ``slots`` (corpus fillers),
    ``referent_rules`` and ``lexicon`` (word sets by name).
    """

    __slots__ = ("name", "version", "locale", "description", "path", "content_hash", "settings",
                 "vocab_sets", "follow_ups", "corrections", "context", "slots", "slots_seed", "referent_rules",
                 "lexicon", "referent_words", "_matcher", "_frozen")

    def __init__(self, *, name, version, locale, description, path, content_hash, settings,
                 vocab_sets, follow_ups, corrections, context, slots, slots_seed, referent_rules=(),
                 lexicon=MappingProxyType({}), referent_words=MappingProxyType({})):
        for key, value in locals().items():
            if key != "self":
                object.__setattr__(self, key, value)
        object.__setattr__(self, "_matcher",
                           Matcher(settings, vocab_sets, follow_ups, corrections, (name, version, content_hash),
                                   referent_rules=referent_rules, lexicon=lexicon, referent_words=referent_words))
        object.__setattr__(self, "_frozen", True)

    def __setattr__(self, key, value):
        raise AttributeError("a compiled Pack is immutable")

    def __repr__(self):
        return f"<Pack {self.name} {self.version} ({self.content_hash}) from {self.path}>"

    @property
    def rules(self) -> tuple:
        """Every classification rule: corrections, vocabulary sets, follow-up patterns.

        (A message is tried against the corrections, then the follow-up
        patterns, then the vocabulary test; ``referent_rules`` are apart.)
        """
        return self.corrections + self.vocab_sets + self.follow_ups

    def rule(self, rule_id: str):
        for r in self.rules + self.referent_rules:
            if r.id == rule_id:
                return r
        raise KeyError(rule_id)

    def classify(self, message: str, history=()) -> Decision:
        """Classify ``message`` given the conversation before it, oldest first.

        History items are strings (user messages) or ``{"role": "user" |
        "assistant", "content": str}`` (see :mod:`cleo_rules.history`).
        """
        return self._matcher.classify(message, history)

    def explain(self, message: str, history=()) -> Explanation:
        """The decision on ``message`` and every rule's part in it, from the same walk as :meth:`classify`."""
        return self._matcher.explain(message, history)

    def kind_of(self, message: str) -> str:
        return self._matcher.kind_of(message)

    @property
    def matcher(self) -> Matcher:
        return self._matcher


def _display(path: Path) -> str:
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else str(path)


def _find_manifest(path) -> tuple[Path, Path]:
    p = Path(path) if path is not None else rules_dir()
    if p.is_dir():
        manifest = p / MANIFEST
    else:
        manifest, p = p, p.parent
    if not manifest.is_file():
        where = Path(path) if path is not None else p
        raise PackNotFound(f"no rule pack at {_display(where)}: {MANIFEST} not found")
    return p, manifest


def _pattern_source(rule: dict) -> str | None:
    pat = rule.get("pattern")
    if isinstance(pat, list):
        return "|".join(f"(?:{p})" for p in pat)
    return pat if isinstance(pat, str) else None


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


def control_problems(src: Source, ptr: str, rid: str | None, pattern: str) -> list[Problem]:
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


def _regex_problems(src: Source, ptr: str, rid: str | None, pattern: str) -> tuple[Any, list[Problem]]:
    """Compile one pattern and lint it. Returns ``(compiled or None, problems)``."""
    control = control_problems(src, ptr, rid, pattern)
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
    problems = control
    if compiled.groupindex:
        problems.append(src.problem("E138", f"pattern uses named group(s) {', '.join(compiled.groupindex)}", ptr,
                                    rule=rid, rank=4, help="use (?:...) instead; rule patterns are combined and names would clash"))
    if compiled.search("", timeout=0.5) is not None:
        problems.append(src.problem("E139", "pattern matches the empty message", ptr, rule=rid, rank=4,
                                    help="a rule must require some text; check for a pattern that is all optional"))
    why = backtracking.static_risk(pattern) or backtracking.probe(compiled, pattern)
    if why:
        problems.append(src.problem("E131", f"pattern can backtrack catastrophically: {why}", ptr, rule=rid, rank=3,
                                    help="avoid nested repeats like (\\w+\\s?)+ and overlapping alternatives like (a|aa)+; "
                                         "bound the repeat ({0,4}) or make each round end in a fixed character"))
    return compiled, problems


def _tup(v) -> tuple:
    return tuple(v) if isinstance(v, list) else ()


def compile_pack(path=None, *, check_examples: bool = True) -> Pack:
    """Load, validate, lint and compile the pack at ``path`` (default: bundled).

    With ``check_examples`` (the default) every example, counterexample and
    request form must do what it says, or :class:`PackError` is raised.
    """
    pack, sources = _compile(path)
    if check_examples:
        problems = example_problems(pack, sources)
        if any(p.severity == "error" for p in problems):
            raise PackError(problems, pack=_display(Path(pack.path)))
    return pack


def compile_with_examples(path=None) -> tuple[Pack, list[Problem]]:
    """Compile the pack at ``path`` and check its examples without refusing it for them.

    Returns ``(pack, problems)``: ``problems`` are the examples,
    counterexamples and request forms that fail (placed at ``file:line:col``),
    for commands that still work on such a pack (``explain``, ``classify``)
    and say what fails. Any other problem raises :class:`PackError` as
    :func:`compile_pack` does.
    """
    pack, sources = _compile(path)
    return pack, example_problems(pack, sources)


def _compile(path) -> tuple[Pack, dict[str, Source]]:
    """The compiled pack and its rule files by display name; raises on every problem but failing examples."""
    pack_dir, manifest_path = _find_manifest(path)
    problems: list[Problem] = []
    manifest, found = load_yaml(manifest_path, _display(manifest_path))
    if manifest is None:
        raise PackError(found, pack=_display(pack_dir))
    problems += schema_problems(manifest, "pack")
    mdata = manifest.data if isinstance(manifest.data, dict) else {}
    name = mdata.get("pack", "?")
    given_settings = mdata.get("settings")
    raw_settings = given_settings if isinstance(given_settings, dict) else {}
    try:
        settings = Settings(**{k: v for k, v in raw_settings.items() if k in Settings.__dataclass_fields__})
    except TypeError:  # pragma: no cover - schema catches wrong keys first
        settings = Settings()
    if isinstance(settings.combine, str):
        problems += check_combine(manifest, settings.combine)
    if isinstance(settings.combine_resolved, str):
        problems += check_combine(manifest, settings.combine_resolved, "combine_resolved", ("referent", "message"))
    context = dict(DEFAULT_CONTEXT)
    given_context = mdata.get("context")
    if isinstance(given_context, dict):
        context.update({k: v for k, v in given_context.items() if isinstance(v, str)})

    given_files = mdata.get("files")
    files = given_files if isinstance(given_files, list) else []
    if len(files) > MAX_FILES:
        problems.append(manifest.problem("E118", f"{len(files)} files listed, at most {MAX_FILES}", "/files", rank=1,
                                         help="merge rule files"))
        files = files[:MAX_FILES]
    sources: list[tuple[Source, str]] = []
    for i, fname in enumerate(files):
        ptr = pointer_join("/files", i)
        member = resolve_member(pack_dir, fname) if isinstance(fname, str) else None
        if member is None:
            problems.append(manifest.problem("E119", f"file {fname!r} is outside the pack directory", ptr, rank=1,
                                             help="list files by a path inside the pack, without '..' or a leading '/'"))
            continue
        if not member.is_file():
            problems.append(manifest.problem("E115", f"file {fname!r} not found in {_display(pack_dir)}", ptr, rank=1,
                                             help="create the file or remove it from the files list"))
            continue
        src, found = load_yaml(member, _display(member))
        if src is None:
            problems += found
            continue
        kind, found = file_kind(src)
        problems += found
        if kind is None:
            continue
        problems += schema_problems(src, kind)
        sources.append((src, kind))

    vocab_sets: list[VocabSet] = []
    follow_ups: list[PatternRule] = []
    corrections: list[PatternRule] = []
    slots: dict[str, tuple[str, ...]] = {}
    slots_seed = 0
    referent_rules: list[ReferentRule] = []
    lexicon: dict[str, frozenset[str]] = {}
    referent_words: dict[str, tuple[str, ...]] = {}
    seen_ids: dict[str, tuple[Source, str]] = {}
    seen_words: dict[str, tuple[str | None, Source, str]] = {}
    wants_lexicon: list[tuple[Source, str, str, str]] = []

    def claim_id(src, ptr, rid):
        if not isinstance(rid, str):
            return False
        if rid in seen_ids:
            first_src, first_ptr = seen_ids[rid]
            line, col = first_src.where(first_ptr)
            problems.append(src.problem("E132", f"duplicate rule id {rid!r} (first defined at {first_src.display}:{line}:{col})",
                                        ptr, rule=rid, rank=2, help="give every rule a unique id"))
            return False
        seen_ids[rid] = (src, ptr)
        return True

    for src, kind in sources:
        data = src.data
        if kind == "slots":
            if isinstance(data.get("slots"), dict):
                for sname, fillers in data["slots"].items():
                    if isinstance(fillers, list):
                        slots[sname] = tuple(str(f) for f in fillers)
            if isinstance(data.get("seed"), int):
                slots_seed = data["seed"]
            continue
        if kind == "lexicon":
            for sname, entry in (data.get("sets") or {}).items():
                if isinstance(entry, dict) and isinstance(entry.get("words"), list):
                    lexicon[sname] = lexicon.get(sname, frozenset()) | frozenset(
                        w for w in entry["words"] if isinstance(w, str))
            continue
        if kind == "referents":
            for key in ("time_words", "clause_verbs"):
                if isinstance(data.get(key), list):
                    referent_words[key] = referent_words.get(key, ()) + tuple(
                        w for w in data[key] if isinstance(w, str))
        items = data.get("sets" if kind == "vocabulary" else "rules")
        if not isinstance(items, list):
            continue
        base = "/sets" if kind == "vocabulary" else "/rules"
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            ptr = pointer_join(base, i)
            given_id = item.get("id")
            rid = given_id if isinstance(given_id, str) else None
            ok = claim_id(src, pointer_join(ptr, "id"), rid)
            line = src.where(ptr)[0]
            if kind == "vocabulary":
                words = [w for w in _tup(item.get("words")) if isinstance(w, str)]
                for j, w in enumerate(words):
                    key = " ".join(regex.findall(r"\w+(?:'\w+)*", w.casefold()))
                    wptr = pointer_join(pointer_join(ptr, "words"), j)
                    if not key:
                        problems.append(src.problem("E142", f"vocabulary entry {w!r} has no word in it", wptr, rule=rid,
                                                    rank=6, help="remove the entry; punctuation is ignored when matching"))
                        continue
                    if key in seen_words:
                        other, osrc, optr = seen_words[key]
                        line_o, col_o = osrc.where(optr)
                        same = other == rid
                        problems.append(src.problem(
                            "E133",
                            f"vocabulary entry {w!r} is listed twice in {rid}" if same else
                            f"vocabulary entry {w!r} is also in {other} ({osrc.display}:{line_o}:{col_o}); the sets contradict",
                            wptr, rule=rid, rank=6,
                            help="remove the repeat" if same else "a word belongs to one set, or which rule fires is ambiguous; keep it in one"))
                    else:
                        seen_words[key] = (rid, src, wptr)
                tps = []
                for j, tp in enumerate(_tup(item.get("token_patterns"))):
                    compiled, found = _regex_problems(src, pointer_join(pointer_join(ptr, "token_patterns"), j), rid, tp)
                    problems += found
                    if compiled is not None:
                        tps.append(tp)
                if ok and rid is not None:
                    vocab_sets.append(VocabSet(
                        id=rid, role=item.get("role", "filler"), description=item.get("description", ""),
                        words=tuple(words), token_patterns=tuple(tps), examples=_tup(item.get("examples")),
                        counterexamples=_tup(item.get("counterexamples")), file=src.display, line=line,
                        generate=item.get("generate")))
                continue
            pattern = _pattern_source(item)
            if not isinstance(pattern, str):
                continue
            pptr = pointer_join(ptr, "pattern")
            if isinstance(item.get("pattern"), list):
                compiled = None
                for j, alt in enumerate(item["pattern"]):
                    c, found = _regex_problems(src, pointer_join(pptr, j), rid, alt)
                    problems += found
                if not any(p.rule == rid and p.code in ("E130",) for p in problems):
                    compiled, found = _regex_problems(src, pptr, rid, pattern)
                    problems += [p for p in found if p.code not in ("E131", "E140")]
            else:
                compiled, found = _regex_problems(src, pptr, rid, pattern)
                problems += found
            low, high = item.get("min_content_words"), item.get("max_content_words")
            if isinstance(low, int) and isinstance(high, int) and low > high:
                problems.append(src.problem(
                    "E141", f"min_content_words ({low}) is above max_content_words ({high}): "
                            "no message can fire this rule", pointer_join(ptr, "min_content_words"), rule=rid, rank=4,
                    help="lower min_content_words or raise max_content_words; both count the topic words outside "
                         "the match"))
            if compiled is None or not ok or rid is None:
                continue
            if kind == "referents":
                referent_rules.append(ReferentRule(
                    id=rid, description=item.get("description", ""), pattern=pattern, select=item.get("select", ""),
                    examples=_tup(item.get("examples")), counterexamples=_tup(item.get("counterexamples")),
                    file=src.display, line=line, reach=item.get("reach"), compiled=compiled,
                    unless_name=bool(item.get("unless_name"))))
                continue
            rule = PatternRule(
                id=rid, kind="correction" if kind == "corrections" else "follow_up",
                description=item.get("description", ""), pattern=pattern,
                examples=_tup(item.get("examples")), counterexamples=_tup(item.get("counterexamples")),
                file=src.display, line=line, request_forms=_tup(item.get("request_forms")),
                max_content_words=item.get("max_content_words"),
                min_content_words=item.get("min_content_words") or 0,
                max_content_before=item.get("max_content_before"), generate=item.get("generate"), compiled=compiled,
                max_words=item.get("max_words"), unless_name_before=bool(item.get("unless_name_before")),
                unless_name=bool(item.get("unless_name")), head_in=item.get("head_in"),
                after_vocabulary=bool(item.get("after_vocabulary")),
                requires_antecedent=bool(item.get("requires_antecedent")))
            if rule.head_in is not None:
                wants_lexicon.append((src, pointer_join(ptr, "head_in"), rid, rule.head_in))
            (corrections if kind == "corrections" else follow_ups).append(rule)

    for src, ptr, rid, set_name in wants_lexicon:
        if set_name not in lexicon:
            known = ", ".join(sorted(lexicon)) or "none: the pack lists no lexicon file"
            problems.append(src.problem("E143", f"head_in names lexicon set {set_name!r}, which the pack does not have",
                                        ptr, rule=rid, rank=4, help=f"use one of the lexicon's sets ({known})"))
    if any(p.severity == "error" for p in problems):
        raise PackError(problems, pack=_display(pack_dir))

    digest = hashlib.sha256(json.dumps([manifest.data] + [s.data for s, _ in sources],
                                       sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()[:16]
    pack = Pack(name=name, version=mdata.get("version", "0.0.0"), locale=mdata.get("locale", ""),
                description=mdata.get("description", ""), path=pack_dir, content_hash=digest, settings=settings,
                vocab_sets=tuple(vocab_sets), corrections=tuple(corrections),
                follow_ups=tuple(sorted(follow_ups, key=lambda r: r.after_vocabulary)),  # in the order tried
                context=MappingProxyType(context), slots=MappingProxyType(slots), slots_seed=slots_seed,
                referent_rules=tuple(referent_rules), lexicon=MappingProxyType(lexicon),
                referent_words=MappingProxyType(referent_words))
    return pack, {src.display: src for src, _ in sources}


def _rule_pointer(src: Source, rule_id: str) -> str:
    for base in ("/sets", "/rules"):
        items = src.data.get(base[1:]) if isinstance(src.data, dict) else None
        if isinstance(items, list):
            for i, item in enumerate(items):
                if isinstance(item, dict) and item.get("id") == rule_id:
                    return pointer_join(base, i)
    return ""


def _referent_problems(pack: Pack, rule: ReferentRule, src: Source, base: str) -> list[Problem]:
    """A referent rule's examples must find their referent by this rule; its counterexamples nothing by it."""
    from ..history import read_history
    from ..text import normalize

    problems = []
    finder = pack.matcher.referents
    for key, cases in (("examples", rule.examples), ("counterexamples", rule.counterexamples)):
        for j, case in enumerate(cases):
            if not isinstance(case, Mapping):
                continue
            ptr = pointer_join(pointer_join(base, key), j)
            message = case.get("message", "")
            history = read_history(case.get("history") or ())  # the schema has checked its shape
            found = finder.find(normalize(message[: pack.settings.max_scan_chars]), message, history)
            got = "nothing" if found is None else f"{found.text!r} by {found.rule}"
            if key == "examples":
                want = case.get("referent")
                if found is None or found.rule != rule.id or found.text != want:
                    help = ("another referent rule is tried first and answers; narrow it or reorder the rules"
                            if found is not None and found.rule != rule.id else
                            "check the pattern matches the referring words, and that the history offers the referent")
                    problems.append(src.problem("E145", f"example {message!r} should find {want!r} by this rule, "
                                                f"but finds {got}", ptr, rule=rule.id, rank=8, help=help))
            elif found is not None and found.rule == rule.id:
                problems.append(src.problem("E146", f"counterexample {message!r} finds {found.text!r} by this rule",
                                            ptr, rule=rule.id, rank=8,
                                            help="narrow the pattern, or change the counterexample's history"))
    return problems


_TOPIC_NOTE = re.compile(r"(?P<outside>\d+) topic word\(s\) outside the match.*?(?:, (?P<before>\d+) before it)?$")


def _order(pack: Pack, rule_id: str) -> int:
    """Where ``rule_id`` is tried: corrections in file order, follow-up patterns in file order, the vocabulary test."""
    ids = [r.id for r in pack.corrections] + [r.id for r in pack.follow_ups]
    return ids.index(rule_id) if rule_id in ids else len(ids)


def _taker(pack: Pack, rule, other: str) -> str:
    """``other``, the rule that took a message, placed in the order relative to ``rule``."""
    kind = pack.rule(other).kind
    what = {"correction": "a correction", "follow_up": "a follow-up pattern", "vocabulary": "the vocabulary test"}[kind]
    if kind == "vocabulary" and rule.kind == "vocabulary":
        return f"the vocabulary test, which names {other}"
    side = "earlier" if _order(pack, other) < _order(pack, rule.id) else "later"
    return f"{other} ({what}, {side} in the order)"


def example_miss(pack: Pack, rule, message: str, history=()) -> str:
    """Why ``message``, an example of ``rule``, does not fire it, and what to do: from :meth:`Pack.explain`.

    Names the rule that took the message (earlier or later in the order:
    corrections, follow-up patterns, the vocabulary test) or the bound that
    stopped it (``min_chars``, ``max_follow_up_words``,
    ``min/max_content_words``, ``max_content_before``).
    """
    ex = pack.explain(message, history)
    d = ex.decision
    s = pack.settings
    if d.kind == "skip":
        return (f"it is under min_chars ({s.min_chars}) characters, so it is skipped before any rule is tried; "
                f"lengthen the example or lower min_chars in pack.yaml")
    mine = next((a for a in ex.attempts if a.rule == rule.id), None)
    if mine is not None and mine.note == "timed out":
        return "this rule's pattern ran out of time on it; simplify the pattern (see E131) or shorten the example"
    taken = f"{_taker(pack, rule, d.rule)} takes it" if d.rule and d.rule != rule.id else ""
    if rule.kind == "correction":
        if mine is not None and mine.span is not None:
            return f"{taken} first; narrow {d.rule} or move the example to it"
        return (f"this rule's pattern does not match it{' and ' + taken if taken else ''}; widen the pattern "
                f"(it sees lower-case text with plain quotes), or remove the example")
    if d.kind == "correction":
        return f"{taken}: corrections are tried before follow-ups; narrow {d.rule} or move the example to it"
    if len(ex.words) > s.max_follow_up_words:
        return (f"it has {len(ex.words)} words, over max_follow_up_words ({s.max_follow_up_words}), so no follow-up "
                f"pattern or vocabulary test applies; shorten the example or raise max_follow_up_words in pack.yaml")
    if rule.kind == "follow_up":
        if mine is not None and not mine.tried and taken:
            return f"{taken} first; narrow {d.rule} or move the example to it"
        if mine is None or mine.span is None:
            return (f"this rule's pattern does not match it{' and ' + taken if taken else ''}; widen the pattern "
                    f"(it sees lower-case text with plain quotes), or remove the example")
        if not mine.fired:
            m = _TOPIC_NOTE.match(mine.note)
            outside = int(m.group("outside")) if m else None
            before = int(m.group("before")) if m and m.group("before") else None
            bounds = []
            if outside is not None and outside < rule.min_content_words:
                bounds.append(f"min_content_words ({rule.min_content_words}) wants at least that many topic words "
                              f"outside the match, it has {outside}")
            if outside is not None and rule.max_content_words is not None and outside > rule.max_content_words:
                bounds.append(f"max_content_words ({rule.max_content_words}) allows at most that many topic words "
                              f"outside the match, it has {outside}")
            if before is not None and rule.max_content_before is not None and before > rule.max_content_before:
                bounds.append(f"max_content_before ({rule.max_content_before}) allows at most that many topic words "
                              f"before the match, it has {before}")
            why = "; ".join(bounds) or mine.note
            then = f", and {taken}" if taken else ""
            return (f"the pattern matches {mine.matched!r} but a bound stops it: {why}{then}; "
                    f"change the bound or the example")
        return f"{taken} first; narrow {d.rule} or move the example to it"
    # a vocabulary set
    if d.rule and pack.rule(d.rule).kind != "vocabulary":
        return f"{taken}: follow-up patterns are tried before the vocabulary test; narrow {d.rule} or move the example"
    test = next((a for a in reversed(ex.attempts) if a.stage == "vocabulary"), None)
    if test is not None and not test.fired:
        return f"the vocabulary test does not hold: {test.note}; add them to a vocabulary set, or remove the example"
    if d.rule and d.rule != rule.id:
        other = pack.rule(d.rule)
        return (f"the vocabulary test names {d.rule}: its role {other.role!r} outranks this set's {rule.role!r} "
                f"(choice, nod, negation, closing, request, anaphor); move the example to {d.rule}")
    return "add its missing words to this set"


def example_case(item) -> tuple[str, tuple]:
    """An example as ``(message, history)``: a string, or ``{message, history}`` for one that needs a conversation."""
    if isinstance(item, Mapping):
        return str(item.get("message", "")), tuple(item.get("history") or ())
    return item, ()


def example_problems(pack: Pack, sources: dict[str, Source]) -> list[Problem]:
    """Every example must fire its rule; counterexamples and request forms must not."""
    problems = []
    for rule in pack.referent_rules:
        src = sources[rule.file]
        problems += _referent_problems(pack, rule, src, _rule_pointer(src, rule.id))
    for rule in pack.rules:
        src = sources[rule.file]
        base = _rule_pointer(src, rule.id)
        want_kind = "follow_up" if rule.kind == "vocabulary" else rule.kind

        def said(d: Decision) -> str:
            if d.kind == "skip":
                return f"skipped (under {pack.settings.min_chars} characters)"
            return f"classified {d.kind}" + (f" by {d.rule}" if d.rule else "")

        filler = getattr(rule, "role", None) == "filler"
        for j, item in enumerate(rule.examples):
            msg, history = example_case(item)
            d = pack.classify(msg, history)
            if filler:  # filler never names a decision: its examples need only be follow-ups
                if d.kind != "follow_up":
                    problems.append(src.problem("E134", f"example {msg!r} should be a follow-up thanks to these words, but it is {said(d)}",
                                                pointer_join(pointer_join(base, "examples"), j), rule=rule.id, rank=8,
                                                help=example_miss(pack, rule, msg, history)))
                continue
            if d.rule != rule.id or d.kind != want_kind:
                help = example_miss(pack, rule, msg, history)
                problems.append(src.problem("E134", f"example {msg!r} does not fire this rule: it is {said(d)}",
                                            pointer_join(pointer_join(base, "examples"), j), rule=rule.id, rank=8, help=help))
        for j, item in enumerate(rule.counterexamples):
            msg, history = example_case(item)
            d = pack.classify(msg, history)
            if filler and d.kind == "follow_up" and d.rule and d.rule.startswith("vocab"):
                problems.append(src.problem("E135", f"counterexample {msg!r} is a vocabulary follow-up ({d.rule})",
                                            pointer_join(pointer_join(base, "counterexamples"), j), rule=rule.id, rank=8,
                                            help="a word in it is low-content by mistake; remove it from the vocabulary"))
            elif d.rule == rule.id:
                problems.append(src.problem("E135", f"counterexample {msg!r} fires this rule"
                                            + (f" on {d.matched!r}" if d.matched else ""),
                                            pointer_join(pointer_join(base, "counterexamples"), j), rule=rule.id, rank=8,
                                            help="narrow the pattern (word boundaries, required words) or remove the counterexample"))
        for j, msg in enumerate(getattr(rule, "request_forms", ())):
            d = pack.classify(msg)
            if d.kind != "follow_up" or d.rule == rule.id:
                problems.append(src.problem("E136", f"request form {msg!r} must classify follow_up, but it is {said(d)}",
                                            pointer_join(pointer_join(base, "request_forms"), j), rule=rule.id, rank=7,
                                            help="a request ('try that one') is not a correction: narrow the correction pattern, "
                                                 "or add the request's words to the vocabulary"))
    return problems


def load_pack(path=None, *, check_examples: bool = True, require=None) -> Pack:
    """Load the pack at ``path`` (a directory or its ``pack.yaml``); the bundled pack by default.

    ``path`` may also be the name of an installed pack (entry point group
    ``cleo_rules.packs``, see :mod:`.sources`). ``require``, a version range
    such as ``">=1.0,<2"`` or ``"^1.2"``, refuses a pack outside it.

    Raises :class:`~cleo_rules.errors.PackError` listing every problem,
    best first, :class:`~cleo_rules.errors.PackVersionError` for a version
    outside ``require``, or :class:`~cleo_rules.errors.PackNotFound`.
    """
    from .sources import check_version, resolve_pack

    pack = compile_pack(resolve_pack(path), check_examples=check_examples)
    check_version(pack, require)
    return pack
