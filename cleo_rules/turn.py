"""One turn end to end: classify, shape, search, build the context, trace.

:class:`Recall` holds what is expensive to set up, a compiled rule pack and an
open memory store (with its embedding model), and runs any number of turns
with them::

    >>> from cleo_rules.turn import Recall                       # doctest: +SKIP
    >>> recall = Recall.open("memory/")                         # doctest: +SKIP
    >>> t = recall.turn("Yes, go with the second one.",
    ...                 history=["Compare the two van insurance quotes"])  # doctest: +SKIP
    >>> t.kind, t.query                                         # doctest: +SKIP
    ('follow_up', 'Compare the two van insurance quotes\\nYes, go with the second one.')

Each call returns a :class:`Turn`: the classifier's decision, the results
(empty when nothing was searched), the context block for the model, the
stage timings and the id of the trace row. Nothing is searched when the
decision has no query; the context block then says that no search was made.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from typing import TYPE_CHECKING

from .context import build_context
from .retrieval.memory import Memory, check_k, check_sources
from .kinds import Source
from .trace import Tracer, TraceSettings, now_iso

if TYPE_CHECKING:
    from .decision import Decision
    from .pack.model import Pack

DEFAULT_K = 5


@dataclass(frozen=True)
class Turn:
    """The outcome of one turn.

    ``timings`` holds seconds per stage: ``classify``, ``embed``, ``search``,
    ``metadata`` (the batched title/date/text lookup), ``context``, ``trace``
    and ``total``; the retrieval stages are 0 when nothing was searched.
    ``trace_id`` is the id of the trace row, ``None`` when tracing is off or
    the write failed.
    """

    decision: Decision
    results: tuple = ()
    context: str = ""
    timings: dict = field(default_factory=dict)
    trace_id: int | None = None
    time: str = ""

    @property
    def kind(self) -> str:
        return self.decision.kind

    @property
    def rule(self) -> str | None:
        return self.decision.rule

    @property
    def query(self) -> str | None:
        """The query searched, ``None`` when no search was made."""
        return self.decision.query

    @property
    def searched(self) -> bool:
        return self.decision.query is not None

    def to_dict(self, *, timings: bool = False) -> dict:
        """JSON-ready: kind, rule, query, anchor, results, context (and timings)."""
        d = {
            "kind": self.decision.kind,
            "rule": self.decision.rule,
            "query": self.decision.query,
            "anchor": self.decision.anchor,
            "results": [r.to_dict() for r in self.results],
            "context": self.context,
        }
        if self.decision.note:
            d["note"] = self.decision.note
        if timings:
            d["timings"] = {k: round(v, 6) for k, v in self.timings.items()}
        return d


class Recall:
    """Runs turns against one rule pack and one memory store.

    ``store`` is an open memory (a :class:`~cleo_rules.retrieval.MemoryStore`,
    a :class:`~cleo_rules.retrieval.postgres.PgStore`, or anything else
    implementing :class:`~cleo_rules.retrieval.memory.Memory`);
    ``pack`` a compiled :class:`~cleo_rules.pack.model.Pack` (the bundled
    default when ``None``). ``k`` results are asked for per search, from
    ``sources``, with the store's score floor unless ``floor`` is given.
    ``trace=False`` writes no traces; ``trace={"redact": True}`` keeps no
    user text in them, ``trace={"max_chars": n}`` at most ``n`` characters of
    each text (see :class:`~cleo_rules.trace.TraceSettings`). As in the
    store, a ``k`` that is not an integer is a ``TypeError``; ``k < 1``, an
    unknown source or an unknown trace setting a ``ValueError``.
    """

    def __init__(self, store: Memory, pack: Pack | None = None, *, k: int = DEFAULT_K,
                 sources: str | Sequence[str] = tuple(Source),
                 floor: float | None = None, trace: bool | Mapping | TraceSettings = True):
        self.k = check_k(k)
        self.sources = tuple(s.value for s in check_sources(sources))
        if pack is None:
            from .pack.compile import load_pack

            pack = load_pack()
        self.store = store
        self.pack = pack
        self.floor = floor
        self.tracer = Tracer.from_settings(store.traces, trace)

    @classmethod
    def open(cls, location, *, pack=None, embedder=None, model_path=None, **kwargs) -> Recall:
        """Open the memory at ``location`` and load ``pack`` (a Pack, a path or ``None``).

        ``location`` is a store directory (the embedded store) or a
        ``postgresql://`` URL (see :func:`~cleo_rules.retrieval.locate.open_memory`).
        Needs the ``[memory]`` extra, and for a URL the ``[postgres]`` extra
        (:class:`~cleo_rules.errors.MissingExtra` without it).
        """
        from .memory_backends import store_imports

        with store_imports(location):
            from .retrieval.locate import open_memory

        if pack is None or not hasattr(pack, "classify"):
            from .pack.compile import load_pack

            pack = load_pack(pack)
        store = open_memory(location, embedder=embedder, model_path=model_path)
        return cls(store, pack, **kwargs)

    @property
    def templates(self):
        return self.pack.context

    def turn(self, message: str, history: Sequence[str | Mapping[str, str]] = ()) -> Turn:
        """Run one turn: ``message`` given the conversation before it, ``history``, oldest first.

        History items are strings (the user's messages) or ``{"role": "user" |
        "assistant", "content": str}`` mappings, so the assistant's replies can
        be given too (see :mod:`cleo_rules.history`); a malformed item raises
        :class:`~cleo_rules.history.HistoryError` (a ``TypeError`` and a
        ``ValueError``) before anything is searched.
        """
        started = now_iso()
        t0 = time.perf_counter()
        decision = self.pack.classify(message, history=tuple(history))
        t1 = time.perf_counter()
        timings = {"classify": t1 - t0, "embed": 0.0, "search": 0.0, "metadata": 0.0}

        results: tuple = ()
        if decision.query is not None:
            response = self.store.search(decision.query, k=self.k, sources=self.sources, floor=self.floor)
            results = tuple(response.results)
            for stage in ("embed", "search", "metadata"):
                timings[stage] = float(response.timings.get(stage, 0.0))

        t2 = time.perf_counter()
        context = build_context(self.templates, query=decision.query, results=results,
                                message=decision.message, kind=decision.kind)
        t3 = time.perf_counter()
        timings["context"] = t3 - t2

        composition = getattr(self.pack, "composition", None)  # what the pack is built on, kept in the trace
        trace_id = self.tracer.record(time=started, decision=decision, results=results, timings=timings, k=self.k,
                                      bases=composition.bases if composition is not None else ())
        t4 = time.perf_counter()
        timings["trace"] = t4 - t3 if self.tracer.enabled else 0.0
        timings["total"] = t4 - t0
        return Turn(decision=decision, results=results, context=context, timings=timings,
                    trace_id=trace_id, time=started)

    __call__ = turn

    def replay(self, messages: Sequence[str]) -> list[Turn]:
        """Run ``messages`` as one conversation, each with the ones before as history."""
        turns = []
        for i, message in enumerate(messages):
            turns.append(self.turn(message, history=messages[:i]))
        return turns

    def close(self) -> None:
        self.store.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
