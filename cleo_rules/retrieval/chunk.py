"""Turning documents into passages and conversations into snippets.

Both are plain functions of their input, so re-ingesting the same item with the
same settings always yields the same pieces.

Passages
    A document's text is cut into sentences (at ``.``, ``!`` or ``?`` followed
    by white space, and at blank lines). Sentences are packed greedily into
    chunks of at most ``size`` words; the next chunk starts far enough back
    that it repeats at most ``overlap`` words of the previous one, always
    moving forward by at least one sentence. A sentence longer than ``size``
    words is cut into pieces of ``size`` words. No chunk spans more than
    ``max_chars`` characters: a run of text without white space longer than
    that is cut every ``max_chars`` characters. Each chunk keeps the
    character span it covers in the original text.

Snippets
    A conversation is cut into *exchanges*: a user message together with the
    replies that follow it up to the next user message (messages before the
    first user message form an exchange of their own). An exchange's text is
    its messages as ``role: text`` lines. An exchange longer than ``size``
    words is cut into passages as above. Nothing else is added to the text:
    the conversation's title and date are stored once, on the conversation,
    and joined in at search time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_CHUNK_SIZE = 120
"""Words per passage or snippet (all-MiniLM-L6-v2 reads at most 256 word pieces)."""

DEFAULT_CHUNK_OVERLAP = 30
"""Words a passage may repeat from the one before it."""

DEFAULT_CHUNK_MAX_CHARS = 2_000
"""Characters a passage or snippet may hold at most, however few its words.

A text without white space is one "word": without this bound a 20 MB one
would be stored, searched and put into the context as a single passage.
(The model reads about 1,000 characters of English text anyway.)
"""

_WORD = re.compile(r"\S+")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n\s*\n")


@dataclass(frozen=True)
class Chunk:
    """A piece of a text: the piece itself and its ``[start, end)`` character span."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Snippet:
    """A piece of a conversation: its text and the messages it covers (0-based, inclusive)."""

    text: str
    first_message: int
    last_message: int


def check_chunking(size: int, overlap: int, max_chars: int = DEFAULT_CHUNK_MAX_CHARS) -> None:
    """Raise ``ValueError`` unless ``size >= 1``, ``0 <= overlap < size`` and ``max_chars >= 1``."""
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ValueError(f"chunk size must be a positive number of words, not {size!r}")
    if not isinstance(overlap, int) or isinstance(overlap, bool) or not 0 <= overlap < size:
        raise ValueError(f"chunk overlap must be at least 0 and less than the chunk size ({size}), not {overlap!r}")
    if not isinstance(max_chars, int) or isinstance(max_chars, bool) or max_chars < 1:
        raise ValueError(f"chunk max_chars must be a positive number of characters, not {max_chars!r}")


def _units(text: str, size: int, max_chars: int) -> list[tuple[int, int, int]]:
    """Sentences of ``text`` as ``(start, end, words)``; long ones cut to ``size`` words and ``max_chars``.

    A "word" longer than ``max_chars`` (a run without white space) is cut
    into pieces of ``max_chars`` characters, each counted as a word.
    """
    units = []
    pos = 0
    bounds = [m.start() for m in _SENTENCE_END.finditer(text)] + [len(text)]
    for stop in bounds:
        first = last = -1
        count = 0
        for m in _WORD.finditer(text, pos, stop):
            for start in range(m.start(), m.end(), max_chars):
                end = min(start + max_chars, m.end())
                if count and (count >= size or end - first > max_chars):
                    units.append((first, last, count))
                    count = 0
                if not count:
                    first = start
                last = end
                count += 1
        if count:
            units.append((first, last, count))
        pos = stop
    return units


def chunk_text(text: str, size: int = DEFAULT_CHUNK_SIZE, overlap: int = DEFAULT_CHUNK_OVERLAP,
               max_chars: int = DEFAULT_CHUNK_MAX_CHARS) -> list[Chunk]:
    """Cut ``text`` into chunks of at most ``size`` words and ``max_chars`` characters that overlap by at most ``overlap`` words.

    >>> [c.text for c in chunk_text("One two. Three four. Five six.", size=4, overlap=2)]
    ['One two. Three four.', 'Three four. Five six.']
    >>> [c.text for c in chunk_text("abcdefghij", max_chars=4)]
    ['abcd', 'efgh', 'ij']
    >>> chunk_text("   ")
    []
    """
    check_chunking(size, overlap, max_chars)
    units = _units(text, size, max_chars)
    chunks: list[Chunk] = []
    i = 0
    while i < len(units):
        j, words = i, 0
        while j < len(units) and (j == i or (words + units[j][2] <= size and units[j][1] - units[i][0] <= max_chars)):
            words += units[j][2]
            j += 1
        start, end = units[i][0], units[j - 1][1]
        chunks.append(Chunk(text[start:end], start, end))
        if j >= len(units):
            break
        # step back over whole sentences while they fit in the overlap
        nxt, carried = j, 0
        while nxt - 1 > i and carried + units[nxt - 1][2] <= overlap:
            nxt -= 1
            carried += units[nxt][2]
        i = nxt
    return chunks


def conversation_snippets(messages, size: int = DEFAULT_CHUNK_SIZE, overlap: int = DEFAULT_CHUNK_OVERLAP,
                          max_chars: int = DEFAULT_CHUNK_MAX_CHARS) -> list[Snippet]:
    """Cut a conversation (a list of ``{"role", "text"}``) into exchange snippets.

    >>> msgs = [{"role": "user", "text": "Hi"}, {"role": "assistant", "text": "Hello"},
    ...         {"role": "user", "text": "Bye"}]
    >>> [(s.text, s.first_message, s.last_message) for s in conversation_snippets(msgs)]
    [('user: Hi\\nassistant: Hello', 0, 1), ('user: Bye', 2, 2)]
    """
    check_chunking(size, overlap, max_chars)
    groups: list[list[int]] = []
    for position, message in enumerate(messages):
        if not groups or message["role"] == "user":
            groups.append([position])
        else:
            groups[-1].append(position)
    snippets = []
    for group in groups:
        lines = [f"{messages[p]['role']}: {messages[p]['text'].strip()}" for p in group]
        text = "\n".join(lines)
        if len(text) <= max_chars and len(_WORD.findall(text)) <= size:
            snippets.append(Snippet(text, group[0], group[-1]))
            continue
        starts = []  # character offset of each message's line in ``text``
        offset = 0
        for line in lines:
            starts.append(offset)
            offset += len(line) + 1
        for chunk in chunk_text(text, size, overlap, max_chars):
            first = max(k for k, s in enumerate(starts) if s <= chunk.start)
            last = max(k for k, s in enumerate(starts) if s < chunk.end)
            snippets.append(Snippet(chunk.text, group[first], group[last]))
    return snippets
