"""Memos: what a process keeps of the packs it compiles and judges, by content, so that judging a pack again after
a small edit redoes only what the edit changed (the playground's rule editing, :mod:`cleo_rules.editing`). Not to
be confused with a tenant's memory store (:mod:`cleo_rules.retrieval`), which holds conversations and documents.

Each memo is a :class:`Memo` (or a ``functools.lru_cache`` registered with :func:`memoized`) keyed by
everything its value is made of: a file's text, a pattern's text, a group's hash, a pack's decision key
(:func:`cleo_rules.corpus.judge.decision_key`). A key never names a value made of anything else, so what is
found is what would be worked out again: nothing is ever stale, and nothing is kept beyond the process (the
code is its own; what a corpus run decided is also stored in the compiled-pack cache, under a key that adds the
code: :mod:`cleo_rules.corpus.decisions_cache`). :func:`clear_memos` empties them all: a judgement then starts
from nothing in this process, as the first one does.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Memo", "Recent", "clear_memos", "memoized"]

_T = TypeVar("_T")

_every: list[Callable[[], None]] = []


class Memo:
    """A map bounded by the total ``weight`` of its values (a text's length, by default one each),
    least recently used dropped first; safe across threads."""

    def __init__(self, budget: int):
        self.budget = budget
        self._items: OrderedDict = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()
        _every.append(self.clear)

    def get(self, key):
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return found[0]

    def put(self, key, value, weight: int = 1) -> None:
        if weight > self.budget:
            return
        with self._lock:
            old = self._items.pop(key, None)
            self._weight += weight - (old[1] if old is not None else 0)
            self._items[key] = (value, weight)
            while self._weight > self.budget:
                _, (_, gone) = self._items.popitem(last=False)
                self._weight -= gone

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._weight = 0

    def __len__(self) -> int:
        return len(self._items)


class Recent(Generic[_T]):
    """What a process read back from entries of one ``kind`` of the compiled-pack cache
    (:class:`cleo_rules.pack.cache.Store`), or stored in them, most recently (at most ``size``), each kept with its
    entry as the file system showed it then (``store.seen``): :meth:`get` gives it back while the entry is still
    that file, unchanged, so what was read and decoded once is not read and decoded again. An entry rewritten,
    damaged or removed since is read again, or what it holds made again, as the first time."""

    def __init__(self, kind: str, size: int):
        self.kind = kind
        self._memo = Memo(size)

    def get(self, store, key: str) -> _T | None:
        """What :meth:`put` kept for ``key`` in ``store`` while its entry is unchanged (then marked recently used,
        as reading it would), or None."""
        found = self._memo.get((str(store.root), key))
        if found is None or found[1] != store.seen(key, self.kind):
            return None
        self._keep(store, key, found[0], touch=True)
        return found[0]

    def put(self, store, key: str, value: _T) -> None:
        """Keep ``value``, just read from or written to the entry of ``key`` in ``store`` (which marked the entry
        recently used), with the entry as it is now; nothing when there is no entry."""
        self._keep(store, key, value, touch=False)

    def _keep(self, store, key: str, value: _T, *, touch: bool) -> None:
        seen = store.seen(key, self.kind, touch=touch)
        if seen is not None:
            self._memo.put((str(store.root), key), (value, seen))

    def clear(self) -> None:
        self._memo.clear()


def memoized(fn):
    """Register ``fn``, a ``functools.lru_cache``, to be emptied by :func:`clear_memos`; returns it."""
    _every.append(fn.cache_clear)
    return fn


def clear_memos() -> None:
    """Empty every memo: what is judged next is worked out from nothing."""
    for clear in list(_every):
        clear()
