"""The corpus's values: one :class:`Case`, its history's turns, and the error raised about corpus files."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import CleoError, Problem

CROSS = "(cross-rule)"
HAND = "(hand-written)"
ROLES = ("user", "assistant")


@dataclass(frozen=True)
class CaseTurn(Mapping):
    """One role-tagged turn of a case's history: ``{"role": "user" | "assistant", "content": str}``.

    A mapping, so it is handed to :meth:`Pack.classify` as it is, and a frozen
    value, so a case stays hashable. A plain string in a history is a user
    message, as everywhere in cleo-rules.
    """

    role: str
    content: str

    def __getitem__(self, key):
        if key == "role":
            return self.role
        if key == "content":
            return self.content
        raise KeyError(key)

    def __iter__(self):
        return iter(("role", "content"))

    def __len__(self):
        return 2

    def to_dict(self) -> dict:
        return {"role": self.role, "content": self.content}


def history_item(item):
    """A history item as a case holds it: a string, or a :class:`CaseTurn` for ``{role, content}``.

    Raises ``ValueError`` for anything else (a role other than user or
    assistant, content that is not a string).
    """
    if isinstance(item, str):
        return item
    if isinstance(item, CaseTurn):
        return item
    if isinstance(item, Mapping):
        role, content = item.get("role"), item.get("content")
        if role not in ROLES:
            raise ValueError(f"role must be \"user\" or \"assistant\", found {role!r}")
        if not isinstance(content, str):
            raise ValueError("content must be a string")
        if set(item) - {"role", "content"}:
            raise ValueError(f"unknown key(s) {', '.join(sorted(map(str, set(item) - {'role', 'content'})))}")
        return CaseTurn(role, content)
    raise ValueError(f"an item must be a string or {{role, content}}, found {type(item).__name__}")


def plain_item(item):
    """A history item as JSON: the string, or ``{"role", "content"}``."""
    return item.to_dict() if isinstance(item, CaseTurn) else item


def role_tagged(history) -> bool:
    """Whether a history holds role-tagged turns (any ``{role, content}`` item)."""
    return any(isinstance(h, CaseTurn) for h in history)


def user_turns(history) -> list[str]:
    """The user's messages in a history, oldest first."""
    return [h if isinstance(h, str) else h.content for h in history
            if isinstance(h, str) or h.role == "user"]


@dataclass(frozen=True)
class Case:
    """One message and what the pack must make of it.

    ``expect`` is the kind it must get (``None``: any kind will do, for a
    case that only says which rule must not fire, or what referent is found).
    ``not_kind``, when set, is a kind it must not get: a correction's request
    form ("try that one") may be anything but a correction.
    ``rule``, when set, must fire (a positive of that rule); every rule in
    ``not_rules`` must not fire (a negative of those rules). Rules are
    classification rules or referent rules; a referent rule "fires" when it
    is the rule that found the decision's referent.

    ``history`` is the conversation before the message, oldest first:
    strings (user messages) and :class:`CaseTurn` items (``{role, content}``).
    With a history the query is checked too: a follow-up must be searched
    combined with ``anchor`` (by default the last user message of
    ``history``), anything else as typed. ``query``, when set, must equal the
    query exactly.

    ``has_referent`` says whether the case checks the referent: then
    ``referent`` is the text that must be found (by ``rule`` when that is a
    referent rule), or ``None``: no referent rule may find one (only the
    referent rules in ``not_rules``, when it names some).

    ``group`` is the rule id whose file the case came from, :data:`CROSS` for
    cross-rule cases, :data:`HAND` for hand-written cases that name no rule;
    ``file`` and ``line`` say where it is written (empty and 0 for a case
    generated in memory), :attr:`source` the two as ``file:line``.

    ``open`` marks a saved regression the pack does not get right yet
    (``open: true`` in ``regressions.yaml``, as semgrep's ``todoruleid``):
    it is run and reported, but its failing never fails the corpus, and once
    it passes the report asks for it to be closed. Only a case of the
    regressions file can be open (:mod:`.files` refuses the key anywhere
    else), never a generated one.
    """

    id: str
    message: str
    expect: str | None
    rule: str | None = None
    not_rules: tuple[str, ...] = ()
    history: tuple = ()
    anchor: str | None = None
    query: str | None = None
    group: str = CROSS
    generated: bool = True
    file: str = ""
    line: int = 0
    referent: str | None = None
    has_referent: bool = False
    open: bool = False
    not_kind: str | None = None

    @property
    def source(self) -> str:
        """Where the case is written, ``file:line``; empty for a case generated in memory."""
        return f"{self.file}:{self.line}" if self.file else ""

    def to_dict(self) -> dict:
        d: dict[str, object] = {"id": self.id, "message": self.message}
        if self.expect is not None:
            d["expect"] = self.expect
        if self.rule:
            d["rule"] = self.rule
        if self.not_rules:
            d["not"] = list(self.not_rules)
        if self.not_kind is not None:
            d["not_kind"] = self.not_kind
        if self.history:
            d["history"] = [plain_item(h) for h in self.history]
        if self.has_referent:
            d["referent"] = self.referent
        if self.anchor is not None:
            d["anchor"] = self.anchor
        if self.query is not None:
            d["query"] = self.query
        if self.open:
            d["open"] = True
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


def problem(code, message, file="", line=0, col=0, *, rule=None, pointer="", help="", rank=50,
            severity="error") -> Problem:
    return Problem(code=code, message=message, file=file, line=line, col=col, pointer=pointer, rule=rule,
                   help=help, rank=rank, severity=severity)
