"""The corpus's values: one :class:`Case`, and the error raised about corpus files."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import CleoError, Problem

KINDS = ("skip", "correction", "follow_up", "substantive")
CROSS = "(cross-rule)"
HAND = "(hand-written)"


@dataclass(frozen=True)
class Case:
    """One message and what the pack must make of it.

    ``expect`` is the kind it must get. ``rule``, when set, must fire (a
    positive of that rule); every rule in ``not_rules`` must not fire (a
    negative of those rules). With ``history``, the query is checked too: a
    follow-up must be searched combined with ``anchor`` (by default the last
    message of ``history``), anything else as typed. ``query``, when set, must
    equal the query exactly. ``group`` is the rule id whose file the case came
    from, :data:`CROSS` for cross-rule cases, :data:`HAND` for hand-written
    cases that name no rule; ``source`` is ``file:line``.
    """

    id: str
    message: str
    expect: str
    rule: str | None = None
    not_rules: tuple[str, ...] = ()
    history: tuple[str, ...] = ()
    anchor: str | None = None
    query: str | None = None
    group: str = CROSS
    generated: bool = True
    source: str = ""

    @property
    def direction(self) -> str:
        """``positive``, ``negative`` or ``other`` (names no rule)."""
        if self.rule:
            return "positive"
        if self.not_rules:
            return "negative"
        return "other"

    def to_dict(self) -> dict:
        d: dict[str, object] = {"id": self.id, "message": self.message, "expect": self.expect}
        if self.rule:
            d["rule"] = self.rule
        if self.not_rules:
            d["not"] = list(self.not_rules)
        if self.history:
            d["history"] = list(self.history)
        if self.anchor is not None:
            d["anchor"] = self.anchor
        if self.query is not None:
            d["query"] = self.query
        if self.source:
            d["source"] = self.source
        return d


class CorpusError(CleoError):
    """The corpus cannot be built or read: bad templates, malformed corpus files.

    ``problems`` lists every finding, each naming the file, line, rule and
    case where it can.
    """

    code = "E200"

    def __init__(self, problems, summary: str = "corpus problem"):
        problems = sorted(problems, key=lambda p: (p.severity != "error", p.rank, p.file, p.line, p.col))
        self.problems = tuple(problems)
        count = sum(1 for p in self.problems if p.severity == "error")
        lead = self.problems[0].format() if self.problems else "no details"
        super().__init__(f"{summary} ({count} error{'s' if count != 1 else ''})\n{lead}")
        self.summary = summary

    def report(self) -> str:
        errors = sum(1 for p in self.problems if p.severity == "error")
        lines = [self.summary + ":"] + [p.format() for p in self.problems]
        lines.append(f"{errors} error{'s' if errors != 1 else ''}")
        return "\n".join(lines)


def problem(code, message, file="", line=0, col=0, *, rule=None, pointer="", help="", rank=50) -> Problem:
    return Problem(code=code, message=message, file=file, line=line, col=col, pointer=pointer, rule=rule,
                   help=help, rank=rank)
