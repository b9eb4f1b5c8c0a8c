"""Classification of one message with a compiled pack.

The decision is a frozen value: what kind of turn this is, which rule said so,
where in the message the rule matched, and the query to search (``None`` when
nothing is searched).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

SKIP = "skip"
CORRECTION = "correction"
FOLLOW_UP = "follow_up"
SUBSTANTIVE = "substantive"
KINDS = (SKIP, CORRECTION, FOLLOW_UP, SUBSTANTIVE)


@dataclass(frozen=True)
class Decision:
    """What to do with one user turn.

    ``span`` is ``(start, end)`` in the original message (Python string
    indices) of the text the rule matched, ``matched`` that text. ``query`` is
    what retrieval should search: ``None`` for ``skip``, the message as typed
    for ``substantive`` and ``correction`` (and for a ``follow_up`` with no
    substantive message in history), else the pack's combine template over
    ``anchor`` (the last substantive message in history) and the message.
    """

    kind: str
    rule: str | None
    span: tuple[int, int] | None
    matched: str | None
    query: str | None
    anchor: str | None
    message: str
    pack: str
    pack_version: str
    pack_hash: str
    note: str | None = None  # e.g. "timeout in correction.already-tried"

    @property
    def searched(self) -> bool:
        return self.query is not None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["span"] = list(self.span) if self.span else None
        return d
