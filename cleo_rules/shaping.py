"""A follow-up's query, built from parts of the conversation.

A follow-up is searched as one of the pack's templates over three parts:

``anchor``    the user's last substantive message (earlier nods, follow-ups,
              corrections and skips are passed over);
``referent``  what the follow-up points at, found in the conversation by the
              pack's referent rules (:mod:`cleo_rules.referents`): "the second
              one" becomes the second option the assistant offered. When no rule
              finds one, the referent is the leading ``reply_words`` words of the
              assistant's last reply (what a nod or "tell me more" answers),
              unless ``reply_words`` is 0;
``message``   the message as typed.

Each template line whose parts are all empty is left out, so the default
``"{anchor}\\n{referent}\\n{message}"`` over a history of plain strings (user
messages only, hence no referent) is exactly ``"{anchor}\\n{message}"``. The
pack setting ``referents: false`` leaves the referent out always. With nothing
to combine (no anchor, no referent) the message is searched as typed. Every part
is returned as a :class:`~cleo_rules.decision.Part` saying where it came from.
:func:`as_follow_up` shapes any message so: what combining would have searched
for a message the pack decided otherwise (a correction is never combined).
"""

from __future__ import annotations

import string

from .decision import Part
from .history import ASSISTANT

__all__ = ["as_follow_up", "render", "shape"]

NOTHING_TO_COMBINE = "no substantive message in history; searched as typed"


def render(template: str, **parts: str) -> str:
    """``template`` over ``parts``, leaving out every line whose fields are all empty."""
    lines = []
    formatter = string.Formatter()
    for line in template.split("\n"):
        fields = [f for _, f, _, _ in formatter.parse(line) if f is not None]
        if fields and not any(parts.get(f) for f in fields):
            continue
        lines.append(line.format(**parts))
    return "\n".join(lines)


def _reply_excerpt(history, words: int, max_chars: int):
    """The leading ``words`` words of the assistant's last reply that says anything in its first ``max_chars``
    characters (no reply is read further)."""
    for said in reversed(history):
        if said.role != ASSISTANT:
            continue
        text = said.content[:max_chars]
        if text and not text.isspace():
            kept = text.split()[:words]  # not empty: the text is not all white space
            end = text.index(kept[-1], text.index(kept[0])) + len(kept[-1]) if len(kept) > 1 else \
                text.index(kept[0]) + len(kept[0])
            start = text.index(kept[0])
            return Part("referent", " ".join(kept), ASSISTANT, said.turn, said.index, (start, end), None)
    return None


def shape(matcher, message: str, normalized: str, history, recorder=None, candidates=None):
    """``(query, parts, note)`` for a follow-up ``message`` given ``history`` (:class:`~cleo_rules.history.Said` items).

    ``candidates``, when given, are the indices of the referent rules the
    prefilter found the message can match; the others are not searched.
    """
    settings = matcher.settings
    template = settings.combine
    found = referent = None
    if settings.referents and any(s.role == ASSISTANT for s in history):
        found = matcher.referents.find(normalized, message, history, recorder, candidates=candidates)
        if found is not None:
            template = settings.combine_resolved
            referent = Part("referent", found.text, found.said.role, found.said.turn, found.said.index, found.span,
                            found.rule)
        elif settings.reply_words and "{referent}" in template:
            referent = _reply_excerpt(history, settings.reply_words, settings.max_scan_chars)
        if referent is not None and recorder is not None:
            recorder.referent(referent)
    fields = [f for _, f, _, _ in string.Formatter().parse(template) if f]
    parts: list[Part] = []
    if "anchor" in fields:
        anchor = matcher.anchor(history)
        if anchor is not None:
            parts.append(Part("anchor", anchor.content, anchor.role, anchor.turn, anchor.index,
                              (0, len(anchor.content)), None))
    if referent is not None and "referent" in fields:
        parts.append(referent)
    message_part = Part("message", message, "message")
    if not parts:
        return message, (message_part,), NOTHING_TO_COMBINE
    parts.append(message_part)
    texts = {p.name: p.text for p in parts}
    query = render(template, anchor=texts.get("anchor", ""), referent=texts.get("referent", ""), message=message)
    order = {name: i for i, name in enumerate(fields)}
    return query, tuple(sorted(parts, key=lambda p: order.get(p.name, 99))), None


def as_follow_up(pack, message: str, history=()):
    """``(query, parts, note)`` that ``message`` would be searched with were it a follow-up of ``history``.

    The same shaping a follow-up gets (:func:`shape`), from the same parts,
    whatever the pack decided the message is: what combining would have
    searched for a correction, which is never combined. With nothing to
    combine it is the message as typed, its only part, and a note saying so.
    ``pack`` is a compiled :class:`~cleo_rules.pack.model.Pack`; ``history``
    is read as :meth:`~cleo_rules.pack.model.Pack.classify` reads it (a
    malformed item raises :class:`~cleo_rules.history.HistoryError`).
    """
    from .history import read_history
    from .text import normalize

    matcher = pack.matcher
    return shape(matcher, message, normalize(message[: matcher.settings.max_scan_chars]), read_history(history))
