"""Names used across the project, each defined once, importable without any extra.

Values are the strings that decisions, results, traces, rule files and JSON
carry, so a member compares equal to its value (``DecisionKind.FOLLOW_UP ==
"follow_up"``, ``Source.CONVERSATION == "conversation"``) and is written as
that string by ``json`` and by f-strings. Members are listed in the order
they are applied or shown.

Three words are easy to confuse: a **decision kind** is what a turn is
(``follow_up``); a **rule kind** is what a compiled rule is
(``follow_up``: a follow-up pattern); a **file kind** is what a rule file
holds (``follow_ups``).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["DecisionKind", "FileKind", "RuleKind", "Source"]


class DecisionKind(StrEnum):
    """What a user turn is, in the order the matcher decides it."""

    SKIP = "skip"
    CORRECTION = "correction"
    FOLLOW_UP = "follow_up"
    SUBSTANTIVE = "substantive"


class RuleKind(StrEnum):
    """What a compiled rule is: the kind of turn it recognises, or a referent rule."""

    VOCABULARY = "vocabulary"
    FOLLOW_UP = "follow_up"
    CORRECTION = "correction"
    REFERENT = "referent"

    @property
    def decides(self) -> DecisionKind:
        """The kind of turn a message gets when this rule takes it (a vocabulary set makes a follow-up;
        a referent rule works on follow-ups)."""
        return DecisionKind.CORRECTION if self is RuleKind.CORRECTION else DecisionKind.FOLLOW_UP


class FileKind(StrEnum):
    """What a rule file holds: its ``kind:``, which names its JSON Schema too."""

    VOCABULARY = "vocabulary"
    FOLLOW_UPS = "follow_ups"
    CORRECTIONS = "corrections"
    REFERENTS = "referents"
    LEXICON = "lexicon"
    SLOTS = "slots"


class Source(StrEnum):
    """Where a stored piece comes from: a past conversation or a document."""

    CONVERSATION = "conversation"
    DOCUMENT = "document"
