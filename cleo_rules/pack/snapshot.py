"""A compiled :class:`~cleo_rules.pack.model.Pack` as plain data, and back: what the pack cache stores.

:func:`to_data` turns a pack into JSON types only (strings, numbers,
booleans, null, lists and objects), and :func:`from_data` builds the same
pack from them without reading, validating or linting a file again: its
settings, rules (every field), templates, slots, lexicon and referent
words, the manifest and every rule file as loaded, with the position of every
value, and the prefilter's requirements of each pattern, which the matcher
would otherwise work out again. Patterns are compiled again from their text,
exactly as the compiler compiles them.

Nothing here can run code or name one: a type is read back only from a fixed
list (the rule class of each registered family and two enumerations), never
looked up by a name the data chooses; rules are stored by their family's file
kind and each is read back as the class of the family registered for that
kind, which must be the class it was written from (a family registered from
outside the package is stored like a bundled one; the cache's key holds its
code, :func:`family_code`). A family whose rules are not
instances of its ``rule_class``, a dataclass, is not stored, and the reason is
logged. What depends on
where the pack is read from (its directory, each file's path and how
messages name it, relative to the working directory) is not stored but
given to :func:`from_data`, so the same entry serves a pack from any
directory and any working directory; so are the directories of the packs a
composed pack is built on (:mod:`.compose`), whose files are stored like its
own.

A value of a type this module does not know raises :class:`Unstorable`: such
a pack is simply not cached.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import sys
from enum import Enum
from pathlib import Path
from types import MappingProxyType
from typing import Any

import regex

from .. import families
from ..kinds import FileKind, RuleKind
from ..reading.load import MANIFEST as _MANIFEST, LoadedFile, display, resolve_member
from .model import NOTHING, Base, LeftOut, Composition, Pack, PackSettings

__all__ = ["FORMAT", "Unstorable", "family_code", "from_data", "relocated", "rule_class", "to_data"]

#: the layout of the data; a change here changes every cache key
FORMAT = 3

_ENUMS = {cls.__name__: cls for cls in (RuleKind, FileKind)}


class Unstorable(Exception):
    """The pack holds a value :func:`to_data` cannot write as plain data."""


def _enc(value) -> Any:
    """``value`` as JSON types; every container tagged with its type, so it reads back as it was."""
    if isinstance(value, Enum):
        kind = type(value).__name__
        if _ENUMS.get(kind) is not type(value):
            raise Unstorable(f"enumeration {kind}")
        return {"$enum": [kind, value.value]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return {"$list": [_enc(v) for v in value]}
    if isinstance(value, tuple):
        return {"$tuple": [_enc(v) for v in value]}
    if isinstance(value, (dict, MappingProxyType)):
        if not all(isinstance(k, str) for k in value):
            raise Unstorable("a mapping with keys that are not strings")
        tag = "$dict" if isinstance(value, dict) else "$mapping"
        return {tag: [[k, _enc(v)] for k, v in value.items()]}
    if isinstance(value, frozenset):
        return {"$frozenset": [_enc(v) for v in value]}
    raise Unstorable(f"a value of type {type(value).__name__}")


def _dec(value) -> Any:
    if not isinstance(value, dict):
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        raise ValueError(f"not a stored value: {type(value).__name__}")
    (tag, body), = value.items()
    if tag == "$list":
        return [_dec(v) for v in body]
    if tag == "$tuple":
        return tuple(_dec(v) for v in body)
    if tag == "$dict":
        return {k: _dec(v) for k, v in body}
    if tag == "$mapping":
        return MappingProxyType({k: _dec(v) for k, v in body})
    if tag == "$frozenset":
        return frozenset(_dec(v) for v in body)
    if tag == "$enum":
        kind, member = body
        return _ENUMS[kind](member)
    raise ValueError(f"unknown tag {tag!r}")


def _source(src: LoadedFile) -> dict:
    """A file as loaded; its document and position tables are plain YAML values already."""
    return {"data": src.data, "values": src.values, "keys": src.keys, "styles": src.styles}


def _read_source(doc: dict, path: Path) -> LoadedFile:
    return LoadedFile(path=path, display=display(path), data=doc["data"],
                  values={k: tuple(v) for k, v in doc["values"].items()},
                  keys={k: tuple(v) for k, v in doc["keys"].items()}, styles=dict(doc["styles"]))


def rule_class(kind: str) -> type:
    """The class the rules of the family registered for the file ``kind`` are stored and read back as;
    :class:`Unstorable`, saying why, when there is no such family or its ``rule_class`` is not a dataclass."""
    try:
        cls = families.family(kind).rule_class
    except KeyError:
        raise Unstorable(f"rules of the file kind {kind!r}, for which no family is registered") from None
    if cls is None or not dataclasses.is_dataclass(cls):
        raise Unstorable(f"the rule family {kind!r} names no dataclass as its rule_class")
    return cls


@functools.lru_cache(maxsize=None)
def _class_code(cls: type) -> str | None:
    """SHA-256 of the source of the module ``cls`` is defined in (of the class alone when its module has no file,
    as in ``__main__`` run with ``-c``); None when neither can be read. Once per class: the code a process runs
    is the code it imported."""
    module = sys.modules.get(cls.__module__)
    where = getattr(module, "__file__", None)
    if where:
        try:
            return hashlib.sha256(Path(where).read_bytes()).hexdigest()
        except OSError:
            pass
    import inspect

    try:
        return hashlib.sha256(inspect.getsource(cls).encode()).hexdigest()
    except (OSError, TypeError):
        return None


def family_code(family: families.Family) -> str | None:
    """SHA-256 of what a rule family registered from outside the package compiles with: its settings (kind, rule
    kind, list key, listing, what it decides, its schema when it gives one) and the source of every module its
    class, its classes between it and :class:`~cleo_rules.families.Family`, and its rule class are defined in.
    None when some source cannot be read: packs are then compiled without the cache. What the cache's key
    holds of it (:mod:`.cache`)."""
    classes = [c for c in type(family).__mro__ if c.__module__.split(".")[0] != "cleo_rules" and c is not object]
    if family.rule_class is not None:
        classes.append(family.rule_class)
    codes = [_class_code(c) for c in classes]
    if any(code is None for code in codes):
        return None
    schema = family.schema if isinstance(family.schema, str) else json.dumps(family.schema, sort_keys=True, default=str)
    settings = [family.kind, family.rule_kind, family.items, family.listed, str(family.decides), schema,
                [f"{c.__module__}.{c.__qualname__}" for c in classes]]
    return hashlib.sha256(json.dumps([settings, codes]).encode()).hexdigest()


def _rule(rule, cls: type, files: dict[str, int]) -> dict:
    kind = type(rule).__name__
    if type(rule) is not cls:
        raise Unstorable(f"a rule of class {kind}, not its family's {cls.__name__}")
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(rule):
        value = getattr(rule, f.name)
        if f.name == "compiled":  # compiled again from the pattern, as the compiler does
            fields[f.name] = value is not None
        elif f.name == "file":  # named by the file's place in the pack: how it is shown depends on where
            if value not in files:
                raise Unstorable(f"rule {rule.id} names file {value!r}, which is not one of the pack's")
            fields[f.name] = files[value]
        else:
            fields[f.name] = _enc(value)
    return {"class": kind, "fields": fields}


def _read_rule(doc: dict, cls: type, shown: list[str]):
    if doc["class"] != cls.__name__:
        raise ValueError(f"a rule of class {doc['class']!r} stored, where {cls.__name__} is registered")
    fields = {}
    for name, value in doc["fields"].items():
        if name == "compiled":
            continue
        fields[name] = shown[value] if name == "file" else _dec(value)
    if doc["fields"].get("compiled"):
        fields["compiled"] = regex.compile(fields["pattern"])
    return cls(**fields)


def to_data(pack: Pack) -> dict:
    """``pack`` as JSON types; :class:`Unstorable` when it holds a value this module cannot write."""
    if pack.manifest is None:
        raise Unstorable("a pack without its manifest")
    names = list(pack.sources)
    shown = [src.display for src in pack.sources.values()]
    shown += [src.display for base in pack.composition.bases for src in base.sources.values()]
    files = {display: i for i, display in reversed(list(enumerate(shown)))}
    settings = {f.name: _enc(getattr(pack.settings, f.name)) for f in dataclasses.fields(PackSettings)}
    rules = {str(kind): [_rule(r, rule_class(kind), files) for r in given] for kind, given in pack.family_rules.items()}
    return {
        "format": FORMAT,
        "identity": {k: _enc(getattr(pack, k)) for k in ("name", "version", "locale", "description")},
        "content_hash": pack.content_hash,
        "settings": settings,
        "rules": rules,
        "context": _enc(pack.context),
        "slots": _enc(pack.slots),
        "slots_seed": _enc(pack.slots_seed),
        "lexicon": {k: sorted(v) for k, v in pack.lexicon.items()},
        "referent_words": _enc(pack.referent_words),
        "requirements": _enc(pack.matcher.requirements),
        "manifest": _source(pack.manifest),
        "files": names,
        "sources": [_source(src) for src in pack.sources.values()],
        "composition": _composition(pack),
    }


def _composition(pack: Pack) -> dict:
    """What a composed pack is built on; its bases' files as its own are stored (not where they are)."""
    bases = []
    for base in pack.composition.bases:
        if base.manifest is None:
            raise Unstorable(f"base {base.name} without its manifest")
        bases.append({"name": base.name, "version": base.version, "hash": base.content_hash, "spec": base.spec,
                      "origin": base.origin, "manifest": _source(base.manifest), "files": list(base.sources),
                      "sources": [_source(src) for src in base.sources.values()]})
    changes = {what: [[c.rule, c.by, c.of] for c in getattr(pack.composition, what).values()]
               for what in ("disabled", "replaced")}
    return {"bases": bases, **changes}


def _sources_in(directory: Path, names, docs) -> dict[str, LoadedFile]:
    paths = []
    for name in names:
        member = resolve_member(directory, name)
        if member is None:
            raise ValueError(f"file {name!r} is outside {directory}")
        paths.append(member)
    return dict(zip(names, (_read_source(s, p) for s, p in zip(docs, paths, strict=True)), strict=True))


def _read_composition(doc: dict, base_dirs) -> Composition:
    if len(doc["bases"]) != len(base_dirs):
        raise ValueError(f"{len(doc['bases'])} bases stored, {len(base_dirs)} found")
    if not doc["bases"]:
        return NOTHING
    from ..reading.load import MANIFEST

    bases = tuple(Base(b["name"], b["version"], b["hash"], Path(where), b["spec"], b["origin"],
                       _read_source(b["manifest"], Path(where) / MANIFEST),
                       MappingProxyType(_sources_in(Path(where), b["files"], b["sources"])))
                  for b, where in zip(doc["bases"], base_dirs, strict=True))
    changes = {what: MappingProxyType({r: LeftOut(r, by, of) for r, by, of in doc[what]})
               for what in ("disabled", "replaced")}
    return Composition(bases, **changes)


def from_data(doc: dict, pack_dir: Path, manifest_path: Path, base_dirs=()) -> Pack:
    """The pack :func:`to_data` wrote, read from ``pack_dir`` (its manifest ``manifest_path``), built on the packs
    in ``base_dirs`` (the directories of its bases, in the order they apply).

    Raises ``ValueError``, ``KeyError`` or ``TypeError`` on data it did not write.
    """
    if doc.get("format") != FORMAT:
        raise ValueError(f"stored format {doc.get('format')!r}, not {FORMAT}")
    own = _sources_in(pack_dir, doc["files"], doc["sources"])
    composition = _read_composition(doc["composition"], base_dirs)
    shown = [src.display for src in own.values()]
    shown += [src.display for base in composition.bases for src in base.sources.values()]
    rules = {}
    for kind, given in doc["rules"].items():
        try:
            cls = rule_class(kind)
        except Unstorable as exc:
            raise ValueError(str(exc)) from None
        rules[kind] = tuple(_read_rule(r, cls, shown) for r in given)
    requirements = _dec(doc["requirements"])  # one per pattern the matcher tries, in its order (it checks the count)
    identity = {k: _dec(v) for k, v in doc["identity"].items()}
    return Pack(**identity, path=pack_dir, content_hash=doc["content_hash"],
                settings=PackSettings(**{k: _dec(v) for k, v in doc["settings"].items()}),
                family_rules=rules, context=_dec(doc["context"]), slots=_dec(doc["slots"]),
                slots_seed=_dec(doc["slots_seed"]),
                lexicon=MappingProxyType({k: frozenset(v) for k, v in doc["lexicon"].items()}),
                referent_words=_dec(doc["referent_words"]), requirements=requirements,
                manifest=_read_source(doc["manifest"], manifest_path),
                sources=MappingProxyType(own), composition=composition)


def relocated(pack: Pack, pack_dir: Path, manifest_path: Path, base_dirs=()) -> Pack:
    """The pack ``from_data(to_data(pack), pack_dir, manifest_path, base_dirs)`` gives, without the round trip:
    what depends on where it is read from made anew, every value shared (a compiled pack is never changed).

    Raises :class:`Unstorable` for a pack :func:`to_data` would not store, ``ValueError`` as :func:`from_data`.
    """
    old = pack.composition.bases
    if pack.manifest is None or any(b.manifest is None for b in old):
        raise Unstorable("a pack, or a base, without its manifest")
    for kind, given in pack.family_rules.items():
        cls = rule_class(kind)
        if any(type(rule) is not cls for rule in given):
            raise Unstorable(f"a rule of {kind} not of its family's class {cls.__name__}")
    if len(old) != len(base_dirs):
        raise ValueError(f"{len(old)} bases, {len(base_dirs)} found")
    own = _moved_all(pack.sources, pack_dir)
    bases = tuple(dataclasses.replace(b, path=Path(where), manifest=_moved(b.manifest, Path(where) / _MANIFEST),
                                      sources=MappingProxyType(_moved_all(b.sources, Path(where))))
                  for b, where in zip(old, base_dirs, strict=True) if b.manifest is not None)
    before = [src.display for src in pack.sources.values()] + [src.display for b in old for src in b.sources.values()]
    after = [src.display for src in own.values()] + [src.display for b in bases for src in b.sources.values()]
    shown = {name: after[i] for i, name in reversed(list(enumerate(before)))}  # a name's first file, as to_data
    rules = {}
    for kind, given in pack.family_rules.items():
        if any(rule.file not in shown for rule in given):
            raise Unstorable(f"a rule of {kind} names a file that is not one of the pack's")
        rules[kind] = tuple(rule if shown[rule.file] == rule.file else dataclasses.replace(rule, file=shown[rule.file])
                            for rule in given)
    composition = dataclasses.replace(pack.composition, bases=bases) if bases else NOTHING
    same = all(new is old for kind, given in rules.items() for new, old in zip(given, pack.family_rules[kind]))
    return Pack(name=pack.name, version=pack.version, locale=pack.locale, description=pack.description,
                path=pack_dir, content_hash=pack.content_hash, settings=pack.settings, family_rules=rules,
                context=pack.context, slots=pack.slots, slots_seed=pack.slots_seed, lexicon=pack.lexicon,
                referent_words=pack.referent_words, requirements=pack.matcher.requirements,
                manifest=_moved(pack.manifest, manifest_path), sources=MappingProxyType(own),
                composition=composition, matcher=pack.matcher if same else None)  # the very rules: its matcher


def _moved(src: LoadedFile, path: Path) -> LoadedFile:
    return LoadedFile(path=path, display=display(path), data=src.data, values=src.values, keys=src.keys,
                      styles=src.styles)


def _moved_all(sources, directory: Path) -> dict[str, LoadedFile]:
    """``sources`` (each file by its name in a manifest) read from ``directory``, as :func:`from_data` finds them."""
    out = {}
    for name, src in sources.items():
        member = resolve_member(directory, name)
        if member is None:
            raise ValueError(f"file {name!r} is outside {directory}")
        out[name] = _moved(src, member)
    return out
