"""The decisions a corpus run made, kept in the compiled-pack cache by what decides them.

Running the corpus is most of a ``check``: each case's message is classified
with its conversation. What a decision depends on is the pack's
:func:`~.judge.decision_key` (its settings, every rule of every family but
what never decides, the word lists) and the code that classifies, so the
decisions are stored under a key made of both, as every entry's key is made
(:func:`cleo_rules.pack.cache_key.code_key`): the decision key, the environment a
compiled pack is keyed by (every module of the package, Python and the
libraries) and the code of each rule family registered from outside the
package. A pack whose files changed
only in what does not decide (a description, a template, a case, its name or
version), a team pack adding nothing that decides, or the same pack in another
directory or another process, is judged from the decisions already made; the
judging itself, against each case's expectations, is done every time.

The entry is read only when a decision is not remembered in the process
(:data:`~.judge._decided`), and written when a run classified one afresh. An
entry holds the decisions of one run's messages, as plain JSON; a decision
read back carries the identity (name, version, hash) of the pack being judged,
as one made now would. A decision cut short by a pattern's time limit is never
stored. A pack with a rule of a family whose state cannot be written as data
has a decision key of its own process only (:func:`~.judge.decision_key`), so
nothing stored for it is ever found again.
"""

from __future__ import annotations

import logging

from ..decision import Decision, Part, make_decision
from ..kinds import DecisionKind
from ..pack import cache, cache_key

__all__ = ["Kept", "kept_for"]

log = logging.getLogger("cleo_rules")

_KIND = "decisions"
_FORMAT = 1


def entry_key(pack) -> str | None:
    """The key the decisions of ``pack`` are stored under; None when the code of an outside family cannot be read."""
    from .judge import decision_key

    return cache_key.code_key({"decisions": decision_key(pack)})


class Kept:
    """The decisions stored for one pack, read when first asked for (a run whose decisions this process remembers
    reads nothing); those given since, stored by :meth:`save` when one of them was classified afresh."""

    def __init__(self, pack, store: cache.Store, key: str):
        self._identity = (pack.name, pack.version, pack.content_hash)
        self._store = store
        self._key = key
        self._known: dict[tuple[str, str], list] | None = None
        self._used: dict[tuple[str, str], Decision] = {}
        self._added = False

    def stored(self) -> dict[tuple[str, str], list]:
        """The stored rows by ``(message, history JSON)``: read from the entry once; empty when there is none or it
        is not of this format."""
        if self._known is None:
            self._known = {}
            doc = self._store.read(self._key, kind=_KIND)
            if doc is not None:
                try:
                    if doc.get("format") != _FORMAT:
                        raise ValueError(f"stored format {doc.get('format')!r}")
                    self._known = {(m, h): row for m, h, row in doc["decisions"]
                                   if isinstance(m, str) and isinstance(h, str)}
                except (KeyError, TypeError, ValueError) as exc:
                    log.debug("decisions cache entry %s not used: %s: %s", self._key, type(exc).__name__, exc)
        return self._known

    def get(self, message: str, history: str) -> Decision | None:
        """The stored decision on ``message`` after ``history`` (its JSON, as the memo of decisions keys it), or None."""
        row = self.stored().get((message, history))
        if row is None:
            return None
        try:
            return _decision(message, row, self._identity)
        except (IndexError, KeyError, TypeError, ValueError) as exc:
            log.debug("a stored decision not used: %s: %s", type(exc).__name__, exc)
            return None

    def add(self, message: str, history: str, decision: Decision, *, classified: bool) -> None:
        """Keep ``decision`` (on ``message`` after ``history``) to be stored; ``classified`` when it was made now,
        not read back or remembered."""
        self._used.setdefault((message, history), decision)  # written as a row when stored
        self._added = self._added or classified

    @property
    def pending(self) -> bool:
        """Whether a decision was classified afresh since the last :meth:`save`."""
        return self._added

    def save(self) -> None:
        """Store the decisions given, when one was classified afresh (now, or later while an edit is judged:
        :func:`cleo_rules.pack.cache.written_later`)."""
        if not self._added:
            return
        used = list(self._used.items())
        self._added = False
        cache.store_entry(self._store, self._key, lambda: {
            "format": _FORMAT, "decisions": [[m, h, _row(d)] for (m, h), d in used]}, kind=_KIND)


def kept_for(pack) -> Kept | None:
    """The decisions stored for ``pack``'s decision key, read when first asked for; None without a cache."""
    store = cache.Store.open()
    key = entry_key(pack) if store is not None else None
    if store is None or key is None:
        return None
    return Kept(pack, store, key)


def _row(d: Decision) -> list:
    return [str(d.kind), d.rule, list(d.span) if d.span else None, d.query, d.anchor, d.note,
            [[p.name, p.text, p.source, p.turn, p.index, list(p.span) if p.span else None, p.rule] for p in d.parts]]


def _span(value) -> tuple[int, int] | None:
    if value is None:
        return None
    start, end = value
    if not (isinstance(start, int) and isinstance(end, int)):
        raise TypeError("a span of other than two integers")
    return start, end


def _decision(message: str, row: list, identity: tuple[str, str, str]) -> Decision:
    kind, rule, span, query, anchor, note, parts = row
    span = _span(span)
    name, version, digest = identity
    return make_decision(
        kind=DecisionKind(kind), rule=rule, span=span, matched=message[span[0]:span[1]] if span else None,
        query=query, anchor=anchor, message=message, pack=name, pack_version=version, pack_hash=digest, note=note,
        parts=tuple(Part(p[0], p[1], p[2], p[3], p[4], _span(p[5]), p[6]) for p in parts))
