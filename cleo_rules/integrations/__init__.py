"""cleo-rules in front of a retriever you already have: LangChain and LlamaIndex.

Both adapters wrap any base retriever of their framework and keep its
interface. On each call they read the conversation (the framework's own
chat messages: human or user turns are the user's, AI or assistant turns
the assistant's, system and tool messages are passed over), classify the
last user message with the turns before it, and

* on a turn with a query, call the base retriever with the **shaped
  query** (``decision.query``) and return its results, each carrying the
  decision in its metadata under ``"cleo_rules"``: kind, rule, query, anchor,
  referent, pack, pack version and hash (see :func:`decision_metadata`);
* on a **skipped** turn, return nothing without calling the base retriever,
  and tell the caller why through the framework's own events.

``cleo_rules.integrations.langchain``    :class:`~cleo_rules.integrations.langchain.CleoRulesRetriever`
                                          (``pip install 'cleo-rules[langchain]'``)
``cleo_rules.integrations.llama_index``  :class:`~cleo_rules.integrations.llama_index.CleoRulesRetriever`
                                          (``pip install 'cleo-rules[llama-index]'``)

Both read history items as the rest of cleo-rules does: an item they cannot
read is a :class:`~cleo_rules.history.HistoryError` naming it (``history[3]``,
its position in the list given), never a framework's own error. Both refuse a
message, or a history item's text, longer than ``max_message_chars``
(default :data:`MAX_MESSAGE_CHARS`, the service's default) as the service
does: a ``ValueError`` naming it, before anything is classified or searched.

Importing this package imports neither framework.
"""

from __future__ import annotations

from typing import Any

from ..history import HistoryError

__all__ = ["DECISION_EVENT", "MAX_MESSAGE_CHARS", "METADATA_KEY", "check_item", "check_limit", "check_message",
           "classifier", "content_chars", "decision_metadata", "text_of"]

#: where each result's metadata carries the decision
METADATA_KEY = "cleo_rules"
#: the name of the event that carries each decision (a LangChain custom event)
DECISION_EVENT = "cleo_rules.decision"
#: the longest message, and text of one history item, an adapter takes by default: the service's own default
#: (``cleo-rules serve --max-message-chars``)
MAX_MESSAGE_CHARS = 10_000


def classifier(pack: Any = None):
    """What classifies: ``pack`` itself when it has ``classify`` (a compiled pack, a
    :class:`~cleo_rules.PackManager`), else the pack that :func:`cleo_rules.load_pack` loads
    from it (a directory, an installed pack's name, or None for the bundled pack)."""
    if pack is not None and callable(getattr(pack, "classify", None)):
        return pack
    from ..pack.compile import load_pack

    return load_pack(pack)


def decision_metadata(decision) -> dict:
    """The decision as a result's metadata (and an event's data): plain JSON values only."""
    return {
        "kind": str(decision.kind),  # the plain string ("follow_up"), not the enum member
        "rule": decision.rule,
        "query": decision.query,
        "anchor": decision.anchor,
        "referent": decision.referent,
        "searched": decision.query is not None,
        "pack": decision.pack,
        "pack_version": decision.pack_version,
        "pack_hash": decision.pack_hash,
        "note": decision.note,
    }


def text_of(content) -> str | None:
    """A chat message's text: a string as it is; a list of parts, its text parts joined by a space
    (as :mod:`cleo_rules.history` reads them); None when it holds no text."""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        texts = [p if isinstance(p, str) else p.get("text") for p in content
                 if isinstance(p, str) or (isinstance(p, dict) and p.get("type", "text") == "text"
                                           and isinstance(p.get("text"), str))]
        return " ".join(t for t in texts if t is not None) if texts else None
    return None


def content_chars(content) -> int:
    """How many characters of text a message's content holds, as the service counts them: a string's, or its
    text parts' in all."""
    if isinstance(content, str):
        return len(content)
    if isinstance(content, (list, tuple)):
        return sum(len(p) if isinstance(p, str) else len(p["text"]) for p in content
                   if isinstance(p, str) or (isinstance(p, dict) and isinstance(p.get("text"), str)))
    return 0


def check_limit(max_chars) -> int:
    """``max_chars`` when it is a positive whole number; a ``ValueError`` otherwise."""
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise ValueError(f"max_message_chars must be a positive whole number, not {max_chars!r}")
    return max_chars


def check_message(message: str, max_chars: int | None) -> str:
    """``message``, or a ``ValueError`` when it is longer than ``max_chars`` (None: no limit)."""
    if max_chars is not None and len(message) > max_chars:
        raise ValueError(f"message is {len(message)} characters; the limit is {max_chars} (max_message_chars)")
    return message


def check_item(index: int, content, max_chars: int | None) -> None:
    """A :class:`~cleo_rules.history.HistoryError` naming ``history[index]`` when its text is over ``max_chars``."""
    if max_chars is None:
        return
    chars = content_chars(content)
    if chars > max_chars:
        raise HistoryError(index, f"its text is {chars} characters; the limit is {max_chars} "
                                  "(max_message_chars)")
