"""The decision made on one user turn: a frozen value.

What kind of turn this is, which rule said so, where in the message the
rule matched, and the query to search (``None`` when nothing is searched).
Made by :class:`cleo_rules.matcher.Matcher`; read by the turn, the trace, the
corpus runner and the command line.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["CORRECTION", "Decision", "FOLLOW_UP", "KINDS", "SKIP", "SUBSTANTIVE", "make_decision"]

SKIP = "skip"
CORRECTION = "correction"
FOLLOW_UP = "follow_up"
SUBSTANTIVE = "substantive"
#: The kinds of turn, in the order the matcher decides them.
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
        """Whether retrieval searches anything for this turn."""
        return self.query is not None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["span"] = list(self.span) if self.span else None
        return d


def make_decision(**fields) -> Decision:
    """A :class:`Decision` from all of its fields, set in one step.

    The same object the dataclass constructor makes (equal, hashed alike),
    at half the cost: a frozen dataclass sets each field through
    ``object.__setattr__``, and this runs once per message. Every field
    must be given.
    """
    decision = object.__new__(Decision)
    object.__setattr__(decision, "__dict__", fields)
    return decision
