"""The corpus a pack's templates generate, kept in the compiled-pack cache beside the pack.

Whether ``corpus/generated/`` is stale is decided by generating every
rule's cases again and comparing them with the files (:func:`.run.find_stale`):
most of a ``check`` after the pack itself. The cases depend only on the
pack's files and the code, which is what the pack's cache key is made of
(:func:`cleo_rules.pack.cache.key_of`), so :func:`generated` stores them
under that key, as plain JSON, and reads them back for the same pack; the
comparison with the files is made every time. A pack the cache does not know
(compiled without it, or whose files changed since) is generated afresh, and
templates with problems raise as :func:`.generate.generate` does, with nothing
stored.
"""

from __future__ import annotations

import dataclasses
import logging

from ..incremental import Recent
from ..pack import cache
from .generate import Group, generate
from .model import Case, CaseTurn

__all__ = ["generated"]

log = logging.getLogger("cleo_rules")

_KIND = "corpus"
_FORMAT = 1
#: the cases read back or stored most recently, so that a process judging the same pack again (the same files, in
#: that directory or another) does not read and decode them again
_recent: Recent[list[Group]] = Recent(_KIND, 2)


def generated(pack) -> list[Group]:
    """:func:`.generate.generate` for ``pack``, read back from the cache when it holds this very pack's cases."""
    wanted = cache.key_of(pack)
    store = cache.Store.open() if wanted is not None else None
    if store is not None and wanted is not None:
        kept = _recent.get(store, wanted)
        if kept is not None:
            return _copied(kept)
        doc = store.read(wanted, kind=_KIND)
        if doc is not None:
            try:
                kept = _read(doc)
            except (KeyError, TypeError, ValueError) as exc:
                log.debug("corpus cache entry %s not used: %s: %s", wanted, type(exc).__name__, exc)
            else:
                _recent.put(store, wanted, kept)
                return _copied(kept)
    groups = generate(pack)
    if store is not None and wanted is not None:
        kept = _copied(groups)  # as they are now
        cache.store_entry(store, wanted, lambda: _write(kept), kind=_KIND,
                          written=lambda: _recent.put(store, wanted, kept))
    return groups


def _copied(groups: list[Group]) -> list[Group]:
    """Groups of their own holding the same cases (a case is never changed; a group's list of them may be)."""
    return [Group(g.name, g.source, g.hash, list(g.cases), g.templates) for g in groups]


def _case(case: Case) -> dict:
    out: dict = {}
    for f in dataclasses.fields(Case):
        value = getattr(case, f.name)
        if f.name == "history":
            value = [h.to_dict() if isinstance(h, CaseTurn) else h for h in value]
            if not all(isinstance(h, (str, dict)) for h in value):
                raise TypeError("a history item of another type")
        elif f.name == "not_rules":
            value = list(value)
        elif value is not None and not isinstance(value, (str, int, bool)):
            raise TypeError(f"case field {f.name} holds a {type(value).__name__}")
        out[f.name] = value
    return out


def _write(groups: list[Group]) -> dict:
    return {"format": _FORMAT, "groups": [
        {"name": g.name, "source": g.source, "hash": g.hash, "templates": g.templates,
         "cases": [_case(c) for c in g.cases]} for g in groups]}


def _read_case(doc: dict) -> Case:
    fields = dict(doc)
    fields["not_rules"] = tuple(fields["not_rules"])
    fields["history"] = tuple(CaseTurn(h["role"], h["content"]) if isinstance(h, dict) else h
                              for h in fields["history"])
    return Case(**fields)


def _read(doc: dict) -> list[Group]:
    if doc.get("format") != _FORMAT:
        raise ValueError(f"stored format {doc.get('format')!r}")
    return [Group(g["name"], g["source"], g["hash"], [_read_case(c) for c in g["cases"]], g["templates"])
            for g in doc["groups"]]
