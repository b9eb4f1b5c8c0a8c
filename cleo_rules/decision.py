"""The decision made on one user turn: a frozen value.

What kind of turn this is, which rule said so, where in the message the
rule matched, and the query to search (``None`` when nothing is searched).
Made by :class:`cleo_rules.matcher.Matcher`; read by the turn, the trace, the
corpus runner and the command line.
"""

from __future__ import annotations

from dataclasses import dataclass

from .kinds import DecisionKind

__all__ = ["Decision", "Part", "make_decision"]


@dataclass(frozen=True, slots=True)
class Part:
    """One part of a shaped query, and where it came from.

    ``name`` is the template field it fills: ``anchor`` (the user's last
    substantive message), ``referent`` (what the follow-up points at) or
    ``message``. ``source`` is ``message`` (this turn), ``user`` or
    ``assistant``; for an earlier turn, ``turn`` is its number among that
    speaker's turns (from 1), ``index`` its position in the history given and
    ``span`` where in that turn's text the part was taken. ``rule`` names the
    rule that found a referent.
    """

    name: str
    text: str
    source: str
    turn: int | None = None
    index: int | None = None
    span: tuple[int, int] | None = None
    rule: str | None = None

    @property
    def where(self) -> str:
        """``"the message"``, ``"user turn 2"``, ``"assistant turn 3, 10..24"``."""
        if self.source == "message":
            return "the message"
        where = f"{self.source} turn {self.turn}"
        return where + (f", {self.span[0]}..{self.span[1]}" if self.span else "")

    def to_dict(self) -> dict:
        return {"name": self.name, "text": self.text, "source": self.source, "turn": self.turn, "index": self.index,
                "span": list(self.span) if self.span else None, "rule": self.rule}


@dataclass(frozen=True)
class Decision:
    """What to do with one user turn.

    ``kind`` is a :class:`~cleo_rules.kinds.DecisionKind` (a string:
    ``"skip"``, ``"correction"``, ``"follow_up"``, ``"substantive"``).
    ``span`` is ``(start, end)`` in the original message (Python string
    indices) of the text the rule matched, ``matched`` that text. ``query`` is
    what retrieval should search: ``None`` for ``skip``, the message as typed
    for ``substantive`` and ``correction`` (and for a ``follow_up`` with nothing
    in the conversation to combine it with), else the pack's combine template
    over its ``parts``: ``anchor`` (the last substantive user message), the
    ``referent`` the follow-up points at in the conversation (with role-tagged
    history), and the message. ``parts`` lists the parts searched, in template
    order, each with where it came from; it is empty for a skipped turn.
    """

    kind: DecisionKind
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
    parts: tuple[Part, ...] = ()

    @property
    def referent(self) -> str | None:
        """The referent part's text, if the query has one."""
        for part in self.parts:
            if part.name == "referent":
                return part.text
        return None

    @property
    def searched(self) -> bool:
        """Whether retrieval searches anything for this turn."""
        return self.query is not None

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "parts"}
        d["span"] = list(self.span) if self.span else None
        d["parts"] = [p.to_dict() for p in self.parts]
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
