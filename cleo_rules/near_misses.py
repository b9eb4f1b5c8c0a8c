"""A near miss in a designer's words: what the rule needs, and what the message lacks.

:class:`~cleo_rules.explain.NearMiss` carries the walk's own words for what
stopped a rule (``detail``, as ``explain --all`` prints them). A designer
reading ``explain`` asks two other things: what does this rule need, and what
is it about my message that it does not have? :func:`needs_and_lacks`
answers both from the rule (its key at work, its own description) and the
span the rule tested, in the pack's terms (a key of the rule file, a setting
of ``pack.yaml``, the lexicon's sets, the vocabulary), never in the
matcher's.
"""

from __future__ import annotations

import re

from .text import WORD

__all__ = ["needs_and_lacks"]

_TOPIC = re.compile(r"(?P<outside>\d+) topic word\(s\) outside the match(?:.*?, (?P<before>\d+) before it)?")
_MISSING = re.compile(r"words? not in the vocabulary: (?P<words>[^()]+?)(?: \(the test stops at the first\))?$")
_TOPIC_WORDS = "topic words (words the vocabulary does not cover)"


def _describe(rule) -> str:
    """What ``rule`` is for: its description's first clause (before its examples), or ``""``."""
    text = " ".join(str(getattr(rule, "description", "") or "").split())
    first = re.split(r" \(|; |(?<=[.?!:])\s", text, maxsplit=1)[0].rstrip(" .,:")
    if len(first) > 100:
        first = first[:99].rstrip() + "\u2026"
    head = first.split(" ", 1)[0]
    if head[:1].isupper() and (len(head) == 1 or head[1:].islower()):  # "A short question", not "FAQ" or "I"
        first = first[0].lower() + first[1:] if head != "I" else first
    return first


def _tested(matched: str | None, span) -> str:
    return f"{matched!r} ({span[0]}..{span[1]})" if matched is not None and span is not None else "its match"


def _guard(setting, rule, detail: str, tested: str, matched: str | None) -> tuple[str, str]:
    if setting == "head_in":
        group = getattr(rule, "head_in", None) or "nouns"
        words = WORD.findall((matched or "").lower())
        words = re.findall(r"\w+", matched or "") if words else words
        last = f": {words[-1]!r} is not one" if words else ""
        return (f"the phrase it matches to end on a word of the lexicon's {group!r} set (head_in: {group})",
                f"such a word at the end of {tested}, the phrase the pattern took{last}")
    if setting == "unless_name":
        return ("a message that names no subject of its own (unless_name: a named subject needs no referent)",
                f"a message free of names: {detail}")
    if setting == "unless_name_before":
        return ("no name or person before its match (unless_name_before)", f"a start free of names: {detail}")
    if setting == "after_assistant":
        return ("to come right after a reply of the assistant's (after_assistant)", f"such a reply: {detail}")
    if setting == "names_reply":
        return ("the assistant's last reply to say what its match names (names_reply)",
                f"that reply, for {tested}: {detail}")
    return ("its guard to let the match stand", detail)


def _words(n) -> str:
    return f"{n} topic word{'' if n == 1 else 's'} (words the vocabulary does not cover)"


def _topic(setting, rule, detail: str, tested: str) -> tuple[str, str]:
    counts = _TOPIC.search(detail)
    outside = counts.group("outside") if counts else "?"
    before = counts.group("before") if counts and counts.group("before") is not None else "?"
    if setting == "min_content_words":
        return (f"at least {_words(rule.min_content_words)} besides its match (min_content_words)",
                f"them: it has {outside} besides {tested}")
    if setting == "max_content_words":
        return (f"at most {_words(rule.max_content_words)} besides its match (max_content_words)",
                f"a message that spare: it has {outside} besides {tested}")
    if setting == "max_content_before":
        return (f"at most {_words(rule.max_content_before)} before its match (max_content_before)",
                f"a start that spare: it has {before} before {tested}")
    return (f"{_TOPIC_WORDS} around its match within its bounds", f"that, for {tested}: {detail}")


def _vocabulary(detail: str) -> tuple[str, str]:
    needs = "every word of the message in the pack's vocabulary (its vocabulary sets)"
    missing = _MISSING.search(detail)
    if missing:
        words = [w.strip() for w in missing.group("words").split(",") if w.strip()]
        shown = ", ".join(repr(w) for w in words)
        first = " (the first word outside it: the test stops there)" if "stops at the first" in detail else ""
        return needs, f"{shown} in the vocabulary{first}"
    if detail == "only filler words":
        return needs, "a word that is not filler: it has only filler words"
    return needs, detail


def needs_and_lacks(reason: str, setting: str | None, detail: str, rule=None, *, matched: str | None = None,
                    span=None, words: int = 0, length: int = 0, settings=None) -> tuple[str, str]:
    """``(needs, lacks)`` for a near miss: what ``rule`` needs, and what the message lacks, in words.

    ``reason`` and ``setting`` are the near miss's (:data:`~cleo_rules.explain.REASONS`), ``detail`` the walk's
    own words, ``matched`` and ``span`` the span the rule tested (its match), ``words`` and ``length`` the
    message's words and characters, ``settings`` the pack's settings (its limits).
    """
    tested = _tested(matched, span)
    if reason == "no_match":
        what = _describe(rule)
        return (f"a match of its pattern ({what})" if what else "a match of its pattern",
                "a match: words the pattern looks for are in the message, but not in the form it takes")
    if reason in ("word_cap", "too_long"):
        if setting == "max_scan_chars" and settings is not None:
            return (f"a message of at most {settings.max_scan_chars} characters (max_scan_chars)",
                    f"a message that short: it has {length} characters")
        cap = getattr(rule, "max_words", None) if setting == "max_words" else \
            getattr(settings, "max_follow_up_words", None)
        if cap is None:
            return ("a shorter message", detail)
        return (f"a message of at most {cap} words ({setting or 'max_follow_up_words'})",
                f"a message that short: it has {words} words")
    if reason == "guard":
        return _guard(setting, rule, detail, tested, matched)
    if reason == "no_antecedent":
        return ("an earlier turn that mentions what its match names (requires_antecedent)",
                f"such a turn, for {tested}: {detail}")
    if reason == "topic_words":
        return _topic(setting, rule, detail, tested)
    if reason == "no_referent":
        select = getattr(rule, "select", None) or "its selector"
        return (f"an option in the conversation's recent turns for its selector to pick (select: {select})",
                f"such an option: its selector ({select}) found none for {tested}")
    if reason == "timeout":
        limit = f" within {settings.timeout_ms:g} ms" if settings is not None else ""
        return (f"its search to finish{limit} (timeout_ms)",
                "a search in time: it ran out twice, so the message is searched as typed")
    if reason == "test":
        return _vocabulary(detail)
    return ("its stage to take the match", f"what its stage asks, for {tested}: {detail}")
