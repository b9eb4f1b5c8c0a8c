"""A choice that names what it picks: "Brightline, please." after an offer of Brightline and Zego.

No rule pattern can list the options an assistant will offer, so a message
that only names one of them ("Thursday works for me.", "I will take the
Wednesday slot.") would be taken as substantive and searched without the
subject. :func:`named_choice` reads the assistant's last reply for an offer
(the options its referent reading finds, or a coordinated list in one
sentence: "Tuesday at 9 am, Wednesday at 2 pm or Thursday at 11 am") and
takes the message as a choice when

* it asks nothing (no question mark, no opening question word: "Who was
  Henderson?" asks about a name the reply said, it picks nothing),
* it names exactly one option (a word of that option, not a function word,
  nor a figure, and no word of another option's that the option does not
  share), and
* every other word of the message is in the pack's vocabulary (nods, choice
  words, filler, "please"), but for at most one word right after the option's
  ("the Wednesday slot"); or the message opens by acting on what it names (a
  verb of deciding or ordering after at most a nod: "go with", "book", "put",
  "order", "take", "reserve", "use"), when it may say why or for whom in up
  to :data:`ACTING_WORDS` words ("Go with Hadley, their excess is lower.",
  "Put the blue one aside for the customer who rang.").

The matcher then decides a follow-up by the pack's choice vocabulary set (the
set whose role is ``choice``; a pack without one has no named choices), whose
referent is that option. Everything read is bounded: the reply to
``max_scan_chars``, the message to ``max_follow_up_words`` words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .history import ASSISTANT
from .text import normalize

__all__ = ["NamedChoice", "named_choice"]

#: A sentence's coordinated list: two or more short items joined by commas, ending with "or"/"and" and one more.
_LIST = re.compile(r"(?:[^,.;:?!\n]{1,60}, ){1,7}[^,.;:?!\n]{1,60},? (?:or|and) [^,.;:?!\n]{1,60}")
_ITEM_SPLIT = re.compile(r",? (?:or|and) |, ")
_WORD = re.compile(r"\w+")
#: The most words a message that opens by acting on the option it names may have.
ACTING_WORDS = 20
#: A message that opens by acting on an option: a verb of deciding, booking or ordering, after at most a nod.
_ACTING = re.compile(r"^(?:(?:ok|okay|right|fine|great|yes|yeah|sure|perfect|then|so|and)\W+)*(?:(?:let's|lets|we'll|i'll|"
                     r"we will|i will|we should|please|just)\s+)?(?:go with|go for|stick with|take|book|order|put|use|"
                     r"pick|choose|reserve|hold|keep|set aside|confirm|accept|buy)\b")
#: Words that open a question.
_ASKING = frozenset({"what", "who", "whom", "whose", "which", "when", "where", "why", "how", "is", "are", "was",
                     "were", "does", "do", "did", "has", "have", "had", "can", "could", "would", "will", "should"})


@dataclass(frozen=True, slots=True)
class NamedChoice:
    """The option a message names, where the offer said it, and the words of the message that name it."""

    text: str
    said: object           # the offer's turn (a Said)
    span: tuple[int, int]  # the option in the offer's text
    words: tuple[int, int]  # token indices (first, end) in the message's normalised words


def _listed(text: str) -> list[tuple[int, str]]:
    """``(start, item)`` of the items of the first coordinated list in ``text``; the first item loses its
    lead-in (up to its first capitalised word but "I": "I can do Tuesday at 9 am" gives "Tuesday at 9 am")."""
    m = _LIST.search(text)
    if m is None:
        return []
    out, pos = [], m.start()
    for piece in _ITEM_SPLIT.split(m.group()):
        start = text.index(piece, pos)
        pos = start + len(piece)
        out.append((start, piece))
    first_start, first = out[0]
    cap = re.search(r"\b(?!I\b)[A-Z]", first)
    if cap is None:
        return []
    out[0] = (first_start + cap.start(), first[cap.start():])
    return [(s, item.strip()) for s, item in out if item.strip()]


def _offer(matcher, history):
    """The options of the assistant's last reply: ``(said, [(start, text), ...])``, or None."""
    last = next((s for s in reversed(history) if s.role == ASSISTANT), None)
    if last is None:
        return None
    content = last.content[: matcher.settings.max_scan_chars]
    found = matcher.referents.offer((last,), reach=1)
    options = [(o.start, o.text) for o in found[1]] if found is not None else _listed(content)
    return (last, options) if len(options) >= 2 else None


def named_choice(matcher, normalized: str, tokens, history) -> NamedChoice | None:
    """The option of the last offer that the message (``normalized``, its ``tokens``) picks by name, or None."""
    acting = _ACTING.match(normalized) is not None
    if not history or len(tokens) > (ACTING_WORDS if acting else matcher.settings.max_follow_up_words) \
            or "?" in normalized:
        return None  # a question about an option ("who was X?") asks about it: it does not pick it
    if tokens and tokens[0] in _ASKING:
        return None  # the same, typed without its question mark
    offer = _offer(matcher, history)
    if offer is None:
        return None
    said, options = offer
    function = matcher.referents.function_words
    keys = []
    for _, text in options:
        words = {w for w in _WORD.findall(normalize(text)) if w not in function and not w.isdigit() and len(w) > 1}
        keys.append(words)
    named = [i for i, words in enumerate(keys) if words & set(tokens)]
    if len(named) != 1:
        return None
    index = named[0]
    own = keys[index]
    others = set().union(*(k for i, k in enumerate(keys) if i != index)) - own
    if others & set(tokens):
        return None
    hits = [i for i, t in enumerate(tokens) if t in own]
    first, end = hits[0], hits[-1] + 1
    rest = [t for i, t in enumerate(tokens) if not first <= i < end]
    after = end  # one word right after the option's may be its head noun ("the Wednesday slot")
    _, covered, _ = matcher.context.vocabulary.cover(rest) if rest else (None, [], None)
    uncovered = [i for i, c in zip([i for i in range(len(tokens)) if not first <= i < end], covered) if not c]
    if uncovered and uncovered != [after] and not acting:
        return None
    start, text = options[index]
    return NamedChoice(text, said, (start, start + len(text)), (first, end))
