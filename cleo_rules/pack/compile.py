"""Compile a pack directory into an immutable :class:`~cleo_rules.pack.model.Pack`.

Stages: read the manifest and files (:mod:`.load`), validate each against its
JSON Schema and lint it (:mod:`.validate`, :mod:`.backtracking`), build the
rules and the :class:`~cleo_rules.matcher.Matcher` (:mod:`.model`), then check
every example, counterexample and request form against the compiled pack
(:mod:`.examples`). All problems are collected; any error raises
:class:`~cleo_rules.errors.PackError` with the most useful one first. The
pack keeps the files it was built from, with positions, and each rule its
pointer, so later stages place their findings without reading a file again.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import MappingProxyType

import regex

from ..errors import PackError, PackNotFound, Problem
from ..kinds import FileKind, RuleKind
from ..resources import rules_dir
from . import cache
from .examples import find_example_problems
from .load import MANIFEST, MAX_FILES, Source, display, load_yaml, pointer_join, resolve_member
from .model import DEFAULT_CONTEXT, Pack, PatternRule, ReferentRule, Settings, VocabSet
from .sources import check_version, resolve_pack
from .templates import lint_context

__all__ = ["compile_pack", "compile_with_examples", "load_pack"]


def _find_manifest(path) -> tuple[Path, Path]:
    p = Path(path) if path is not None else rules_dir()
    if p.is_dir():
        manifest = p / MANIFEST
    else:
        manifest, p = p, p.parent
    if not manifest.is_file():
        where = Path(path) if path is not None else p
        raise PackNotFound(f"no rule pack at {display(where)}: {MANIFEST} not found")
    if resolve_member(p, MANIFEST) is None:  # a link out of the pack: never read, never echoed
        raise PackError([Problem("E106", f"{MANIFEST} is a link to a file outside the pack directory",
                                 display(manifest), line=1, col=1, rank=0,
                                 help="put the manifest itself in the pack directory, or name the directory "
                                      "it lives in")], pack=display(p))
    return p, manifest


def _short(name) -> str:
    """A file name as a message shows it: at most 80 characters."""
    text = repr(name)
    return text if len(text) <= 80 else f"{text[:60]}...{text[-16:]} ({len(str(name))} characters)"


def _pattern_source(rule: dict) -> str | None:
    pat = rule.get("pattern")
    if isinstance(pat, list):  # an item that is not a string is the schema's finding
        return "|".join(f"(?:{p})" for p in pat) if all(isinstance(p, str) for p in pat) else None
    return pat if isinstance(pat, str) else None


def _tup(v) -> tuple:
    return tuple(v) if isinstance(v, list) else ()


def compile_pack(path=None, *, check_examples: bool = True) -> Pack:
    """Load, validate, lint and compile the pack at ``path`` (default: bundled).

    With ``check_examples`` (the default) every example, counterexample and
    request form must do what it says, or :class:`PackError` is raised.
    """
    pack = _compile_cached(path)
    if check_examples:
        problems = find_example_problems(pack)
        if any(p.severity == "error" for p in problems):
            raise PackError(problems, pack=display(Path(pack.path)))
    return pack


def compile_with_examples(path=None) -> tuple[Pack, list[Problem]]:
    """Compile the pack at ``path`` and check its examples without refusing it for them.

    Returns ``(pack, problems)``: ``problems`` are the examples,
    counterexamples and request forms that fail (placed at ``file:line:col``),
    for commands that still work on such a pack (``explain``, ``classify``)
    and say what fails. Any other problem raises :class:`PackError` as
    :func:`compile_pack` does.
    """
    pack = _compile_cached(path)
    return pack, find_example_problems(pack)


def _compile_cached(path) -> Pack:
    """:func:`_compile`, or the same pack read back from the compiled-pack cache (:mod:`.cache`) when nothing
    it is made of has changed."""
    pack_dir, manifest_path = _find_manifest(path)
    return cache.compiled(pack_dir, manifest_path, lambda: _compile(path))


def _compile(path) -> Pack:
    """The compiled pack, which keeps its files; raises on every problem but failing examples."""
    # only a pack not in the cache is validated: jsonschema is imported when one is
    from .validate import file_kind, find_schema_problems, lint_combine, lint_pattern

    pack_dir, manifest_path = _find_manifest(path)
    problems: list[Problem] = []
    manifest, found = load_yaml(manifest_path, display(manifest_path))
    if manifest is None:
        raise PackError(found, pack=display(pack_dir))
    problems += find_schema_problems(manifest, "pack")
    mdata = manifest.data if isinstance(manifest.data, dict) else {}
    name = mdata.get("pack", "?")
    given_settings = mdata.get("settings")
    raw_settings = given_settings if isinstance(given_settings, dict) else {}
    try:
        settings = Settings(**{k: v for k, v in raw_settings.items() if k in Settings.__dataclass_fields__})
    except TypeError:  # pragma: no cover - schema catches wrong keys first
        settings = Settings()
    if isinstance(settings.combine, str):
        problems += lint_combine(manifest, settings.combine)
    if isinstance(settings.combine_resolved, str):
        problems += lint_combine(manifest, settings.combine_resolved, "combine_resolved", ("referent", "message"))
    context = dict(DEFAULT_CONTEXT)
    given_context = mdata.get("context")
    problems += lint_context(manifest, given_context)
    if isinstance(given_context, dict):
        context.update({k: v for k, v in given_context.items() if isinstance(v, str)})

    given_files = mdata.get("files")
    files = given_files if isinstance(given_files, list) else []
    if len(files) > MAX_FILES:
        problems.append(manifest.problem("E118", f"{len(files)} files listed, at most {MAX_FILES}", "/files", rank=1,
                                         help="merge rule files"))
        files = files[:MAX_FILES]
    sources: list[tuple[str, Source, FileKind]] = []  # (name in the manifest, file, kind)
    for i, fname in enumerate(files):
        ptr = pointer_join("/files", i)
        member = resolve_member(pack_dir, fname) if isinstance(fname, str) else None
        if member is None:
            problems.append(manifest.problem("E119", f"file {_short(fname)} is outside the pack directory", ptr, rank=1,
                                             help="list files by a path inside the pack, without '..' or a leading '/'"))
            continue
        try:
            is_file = member.is_file()
        except OSError as exc:  # a name too long for the file system, a loop of links
            problems.append(manifest.problem("E108", f"cannot read file: {exc.strerror or exc} ({_short(fname)})", ptr,
                                             rank=1, help="name a file the file system can open"))
            continue
        if not is_file:
            problems.append(manifest.problem("E115", f"file {_short(fname)} not found in {display(pack_dir)}", ptr, rank=1,
                                             help="create the file or remove it from the files list"))
            continue
        src, found = load_yaml(member, display(member))
        if src is None:
            problems += found
            continue
        kind, found = file_kind(src)
        problems += found
        if kind is None:
            continue
        problems += find_schema_problems(src, kind)
        sources.append((fname, src, kind))

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

    for _, src, kind in sources:
        data = src.data
        if kind == FileKind.SLOTS:
            if isinstance(data.get("slots"), dict):
                for sname, fillers in data["slots"].items():
                    if isinstance(fillers, list):
                        slots[sname] = tuple(str(f) for f in fillers)
            if isinstance(data.get("seed"), int):
                slots_seed = data["seed"]
            continue
        if kind == FileKind.LEXICON:
            for sname, entry in (data.get("sets") or {}).items():
                if isinstance(entry, dict) and isinstance(entry.get("words"), list):
                    lexicon[sname] = lexicon.get(sname, frozenset()) | frozenset(
                        w for w in entry["words"] if isinstance(w, str))
            continue
        if kind == FileKind.REFERENTS:
            for key in ("time_words", "clause_verbs"):
                if isinstance(data.get(key), list):
                    referent_words[key] = referent_words.get(key, ()) + tuple(
                        w for w in data[key] if isinstance(w, str))
        items = data.get("sets" if kind == FileKind.VOCABULARY else "rules")
        if not isinstance(items, list):
            continue
        base = "/sets" if kind == FileKind.VOCABULARY else "/rules"
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            ptr = pointer_join(base, i)
            given_id = item.get("id")
            rid = given_id if isinstance(given_id, str) else None
            ok = claim_id(src, pointer_join(ptr, "id"), rid)
            line = src.where(ptr)[0]
            if kind == FileKind.VOCABULARY:
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
                    if not isinstance(tp, str):  # the schema's finding
                        continue
                    compiled, found = lint_pattern(src, pointer_join(pointer_join(ptr, "token_patterns"), j), rid, tp)
                    problems += found
                    if compiled is not None:
                        tps.append(tp)
                if ok and rid is not None:
                    vocab_sets.append(VocabSet(
                        id=rid, role=item.get("role", "filler"), description=item.get("description", ""),
                        words=tuple(words), token_patterns=tuple(tps), examples=_tup(item.get("examples")),
                        counterexamples=_tup(item.get("counterexamples")), file=src.display, line=line,
                        generate=item.get("generate"), pointer=ptr))
                continue
            pattern = _pattern_source(item)
            if not isinstance(pattern, str):
                continue
            pptr = pointer_join(ptr, "pattern")
            if isinstance(item.get("pattern"), list):
                compiled = None
                for j, alt in enumerate(item["pattern"]):
                    c, found = lint_pattern(src, pointer_join(pptr, j), rid, alt)
                    problems += found
                if not any(p.rule == rid and p.code in ("E130",) for p in problems):
                    compiled, found = lint_pattern(src, pptr, rid, pattern)
                    problems += [p for p in found if p.code not in ("E131", "E140")]
            else:
                compiled, found = lint_pattern(src, pptr, rid, pattern)
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
            if kind == FileKind.REFERENTS:
                referent_rules.append(ReferentRule(
                    id=rid, description=item.get("description", ""), pattern=pattern, select=item.get("select", ""),
                    examples=_tup(item.get("examples")), counterexamples=_tup(item.get("counterexamples")),
                    file=src.display, line=line, reach=item.get("reach"), compiled=compiled,
                    unless_name=bool(item.get("unless_name")), generate=item.get("generate"), pointer=ptr))
                continue
            rule = PatternRule(
                id=rid, kind=RuleKind.CORRECTION if kind == FileKind.CORRECTIONS else RuleKind.FOLLOW_UP,
                description=item.get("description", ""), pattern=pattern,
                examples=_tup(item.get("examples")), counterexamples=_tup(item.get("counterexamples")),
                file=src.display, line=line, request_forms=_tup(item.get("request_forms")),
                max_content_words=item.get("max_content_words"),
                min_content_words=item.get("min_content_words") or 0,
                max_content_before=item.get("max_content_before"), generate=item.get("generate"), compiled=compiled,
                max_words=item.get("max_words"), unless_name_before=bool(item.get("unless_name_before")),
                unless_name=bool(item.get("unless_name")), head_in=item.get("head_in"),
                after_vocabulary=bool(item.get("after_vocabulary")),
                requires_antecedent=bool(item.get("requires_antecedent")), pointer=ptr)
            if rule.head_in is not None:
                wants_lexicon.append((src, pointer_join(ptr, "head_in"), rid, rule.head_in))
            (corrections if kind == FileKind.CORRECTIONS else follow_ups).append(rule)

    for src, ptr, rid, set_name in wants_lexicon:
        if set_name not in lexicon:
            known = ", ".join(sorted(lexicon)) or "none: the pack lists no lexicon file"
            problems.append(src.problem("E143", f"head_in names lexicon set {set_name!r}, which the pack does not have",
                                        ptr, rule=rid, rank=4, help=f"use one of the lexicon's sets ({known})"))
    if any(p.severity == "error" for p in problems):
        raise PackError(problems, pack=display(pack_dir))

    digest = hashlib.sha256(json.dumps([manifest.data] + [s.data for _, s, _ in sources],
                                       sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()[:16]
    pack = Pack(name=name, version=mdata.get("version", "0.0.0"), locale=mdata.get("locale", ""),
                description=mdata.get("description", ""), path=pack_dir, content_hash=digest, settings=settings,
                vocab_sets=tuple(vocab_sets), corrections=tuple(corrections),
                follow_ups=tuple(sorted(follow_ups, key=lambda r: r.after_vocabulary)),  # in the order tried
                context=MappingProxyType(context), slots=MappingProxyType(slots), slots_seed=slots_seed,
                referent_rules=tuple(referent_rules), lexicon=MappingProxyType(lexicon),
                referent_words=MappingProxyType(referent_words), manifest=manifest,
                sources=MappingProxyType({fname: src for fname, src, _ in sources}))
    return pack


def load_pack(path=None, *, check_examples: bool = True, require=None) -> Pack:
    """Load the pack at ``path`` (a directory or its ``pack.yaml``); the bundled pack by default.

    ``path`` may also be the name of an installed pack (entry point group
    ``cleo_rules.packs``, see :mod:`.sources`). ``require``, a version range
    such as ``">=1.0,<2"`` or ``"^1.2"``, refuses a pack outside it.

    Raises :class:`~cleo_rules.errors.PackError` listing every problem,
    best first, :class:`~cleo_rules.errors.PackVersionError` for a version
    outside ``require``, or :class:`~cleo_rules.errors.PackNotFound`.
    """
    pack = compile_pack(resolve_pack(path), check_examples=check_examples)
    check_version(pack, require)
    return pack
