"""The conversation before a turn, in the one format cleo-rules accepts.

A history is a sequence, oldest first, whose items are either

* a string: a message the **user** wrote (the original format), or
* a mapping ``{"role": "user" | "assistant", "content": str}``: the
  chat-message convention of OpenAI and LangChain. ``content`` may also be a
  list of text parts (``[{"type": "text", "text": ...}, ...]``), as OpenAI
  allows; their texts are joined with a space.

Items of any other role (``system``, ``tool``, ``function``, ``developer``)
carry nothing the user or the assistant said in the conversation and are
passed over, as is an assistant item whose content is null (a message that
only calls tools). Anything else is malformed: :func:`read_history` raises
:class:`HistoryError` (both a ``TypeError`` and a ``ValueError``) naming the
item, ``history[3]``, and what is wrong; a history that is not a sequence at
all (one string, one mapping) is a ``TypeError``.

The result is a tuple of :class:`Said`: who said it, what, where it was in
the history, and its number among that speaker's turns (``user turn 2``),
which is how a query part records where it came from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["ASSISTANT", "USER", "HistoryError", "Said", "read_history"]

USER = "user"
ASSISTANT = "assistant"
#: Roles passed over: they are not turns of the conversation.
IGNORED_ROLES = frozenset({"system", "tool", "function", "developer"})


class HistoryError(TypeError, ValueError):
    """A history item is malformed; ``index`` is its position, ``history[index]``."""

    def __init__(self, index: int, message: str):
        super().__init__(f"history[{index}]: {message}")
        self.index = index


@dataclass(frozen=True, slots=True)
class Said:
    """One turn of the conversation before the message.

    ``index`` is the item's position in the history given (0-based, system
    items counted); ``turn`` its number among ``role``'s turns, from 1.
    """

    role: str
    content: str
    index: int
    turn: int

    @property
    def where(self) -> str:
        """``"user turn 2"``, ``"assistant turn 1"``."""
        return f"{self.role} turn {self.turn}"


def _content(index: int, value) -> str | None:
    if isinstance(value, str):
        return value
    if value is None:
        return None
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        texts = []
        for j, part in enumerate(value):
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping) and part.get("type", "text") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, Mapping) and isinstance(part.get("type"), str):
                continue  # an image or another part with no text
            else:
                raise HistoryError(index, f"content part {j} must be text ({{\"type\": \"text\", \"text\": ...}})")
        return " ".join(texts)
    raise HistoryError(index, f"'content' must be a string, found {type(value).__name__}")


def read_history(history) -> tuple[Said, ...]:
    """``history`` (see the module docstring) as a tuple of :class:`Said`, oldest first."""
    if isinstance(history, (str, bytes, bytearray)):
        raise TypeError("history must be a sequence of earlier messages, not one string")
    if isinstance(history, Mapping):
        raise TypeError("history must be a sequence of earlier messages, not one mapping")
    try:
        items = history if isinstance(history, (list, tuple)) else list(history)
    except TypeError:
        raise TypeError(f"history must be a sequence of earlier messages, found {type(history).__name__}") from None
    out: list[Said] = []
    users = assistants = 0
    for i, item in enumerate(items):
        kind = type(item)
        if kind is str:  # the common cases first, without the general checks
            users += 1
            out.append(Said(USER, item, i, users))
            continue
        if kind is dict:
            role, content = item.get("role"), item.get("content")
            if type(content) is str:
                if role == USER:
                    users += 1
                    out.append(Said(USER, content, i, users))
                    continue
                if role == ASSISTANT:
                    assistants += 1
                    out.append(Said(ASSISTANT, content, i, assistants))
                    continue
        said = _general(i, item)
        if said is None:
            continue
        if said.role == USER:
            users += 1
            out.append(Said(USER, said.content, i, users))
        else:
            assistants += 1
            out.append(Said(ASSISTANT, said.content, i, assistants))
    return tuple(out)


def _general(i: int, item) -> Said | None:
    """Any item the fast path in :func:`read_history` did not take: checked in full (turn numbers set by the caller)."""
    if isinstance(item, str):
        return Said(USER, item, i, 0)
    if not isinstance(item, Mapping):
        raise HistoryError(i, f"an item must be a string or {{\"role\", \"content\"}}, found {type(item).__name__}")
    role = item.get("role")
    if not isinstance(role, str):
        raise HistoryError(i, "an item must have a 'role' (\"user\" or \"assistant\")")
    if role in IGNORED_ROLES:
        return None
    if role not in (USER, ASSISTANT):
        raise HistoryError(i, f"unknown role {role!r}; use \"user\" or \"assistant\"")
    if "content" not in item:
        raise HistoryError(i, "an item must have a 'content'")
    content = _content(i, item["content"])
    if content is None:
        if role == ASSISTANT:
            return None  # a reply that only called tools
        raise HistoryError(i, "a user item's 'content' cannot be null")
    return Said(role, content, i, 0)
