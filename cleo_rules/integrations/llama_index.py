"""cleo-rules in front of any LlamaIndex retriever: :class:`CleoRulesRetriever`.

::

    from cleo_rules.integrations.llama_index import CleoRulesRetriever

    retriever = CleoRulesRetriever(index.as_retriever(similarity_top_k=4))
    nodes = retriever.retrieve_chat([ChatMessage(role="user", content="Compare the two van quotes"),
                                     ChatMessage(role="assistant", content="Zego is cheaper."),
                                     ChatMessage(role="user", content="Yes, the second one.")])
    nodes[0].node.metadata["cleo_rules"]    # {"kind": "follow_up", "rule": ..., "query": ..., ...}

The conversation comes from one of:

* :meth:`CleoRulesRetriever.retrieve_chat` (and ``aretrieve_chat``): a list
  of ``ChatMessage``; the **last user message** is classified, the messages
  before it are its history (user and assistant roles; system, tool and
  other roles, and assistant messages with no text, are passed over);
* ``retrieve(message)`` (and ``aretrieve``) with ``memory=`` given: the
  history is ``memory.get_all()`` (a ``ChatMemoryBuffer`` or ``Memory``), so
  the wrapper can stand in a chat engine that shares that memory, such as
  ``ContextChatEngine``, which retrieves before it stores the new message;
* ``retrieve(message)`` without memory: one message with no history.

Besides ``ChatMessage`` objects, a conversation's items may be the history
items of the rest of cleo-rules: a string (a user message) or
``{"role": "user" | "assistant", "content": ...}``, read by the same rules
(:mod:`cleo_rules.history`). Any other item is a
:class:`~cleo_rules.history.HistoryError` naming ``history[i]`` (its position
in the list given), and a conversation that is not a list a ``TypeError``. A
message, or a history item's text, longer than ``max_message_chars``
(default 10,000, the service's) is a ``ValueError`` naming it, before
anything is classified or searched.

The base retriever is called with the shaped query; each node it returns
comes back as a copy whose metadata carries the decision under
``"cleo_rules"`` (:func:`cleo_rules.integrations.decision_metadata`), kept
out of the text the LLM and the embedding see. On a skipped turn nothing is
searched and no nodes are returned. Every decision, skipped or not, is
dispatched to LlamaIndex's instrumentation as a :class:`CleoRulesDecisionEvent`
(attach a ``BaseEventHandler`` to the root dispatcher to receive it).

Needs ``llama-index-core`` (``pip install 'cleo-rules[llama-index]'``).
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle
# LlamaIndex's instrumentation (llama-index-core re-exports it without declaring the names public)
from llama_index_instrumentation import get_dispatcher
from llama_index_instrumentation.base import BaseEvent

from ..history import HistoryError, read_history
from . import MAX_MESSAGE_CHARS, METADATA_KEY, check_item, check_limit, check_message, classifier, decision_metadata

__all__ = ["CleoRulesDecisionEvent", "CleoRulesRetriever", "METADATA_KEY", "read_chat"]

dispatcher = get_dispatcher(__name__)

_ROLES = {"user": "user", "assistant": "assistant"}
#: the history of the call in progress, set by retrieve_chat for the retrieve it makes
_chat_history: contextvars.ContextVar[tuple | None] = contextvars.ContextVar("cleo_rules_chat_history", default=None)


class CleoRulesDecisionEvent(BaseEvent):
    """The decision cleo-rules made on a turn (``decision``: plain JSON, as in each node's metadata)."""

    decision: dict
    message: str

    @classmethod
    def class_name(cls) -> str:
        return "CleoRulesDecisionEvent"


def _role(message: ChatMessage) -> str | None:
    return _ROLES.get(str(getattr(message.role, "value", message.role)).lower())


def _turn(index: int, item) -> tuple[str | None, str | None]:
    """``(role, text)`` of one item of a conversation: a ``ChatMessage`` or a history item of cleo-rules' own
    format; ``(None, None)`` for one passed over (another role, a reply with no text)."""
    if isinstance(item, ChatMessage):
        return _role(item), item.content
    if isinstance(item, (str, Mapping)):
        try:
            said = read_history((item,))  # the one format, read by the one reader
        except HistoryError as exc:
            raise HistoryError(index, str(exc).removeprefix("history[0]: ")) from None
        return (said[0].role, said[0].content) if said else (None, None)
    raise HistoryError(index, f"an item must be a ChatMessage, a string or {{\"role\", \"content\"}}, found "
                              f"{type(item).__name__}")


def _turns(messages) -> list[tuple[str | None, str | None]]:
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise TypeError("the conversation must be a list of chat messages, oldest first, not "
                        f"{type(messages).__name__}")
    return [_turn(index, item) for index, item in enumerate(messages)]


def _history(turns: Sequence[tuple[str | None, str | None]], max_chars: int | None) -> list[dict]:
    out = []
    for index, (role, text) in enumerate(turns):
        if role is None or text is None or (role == "assistant" and (not text or text.isspace())):
            continue
        check_item(index, text, max_chars)
        out.append({"role": role, "content": text})
    return out


def read_chat(messages: Sequence[Any], *, max_chars: int | None = None) -> tuple[str, list[dict]]:
    """``(message, history)``: the last user message and the conversation before it.

    ``messages`` holds ``ChatMessage`` objects or history items of
    cleo-rules' own format (see the module docstring). Raises ``ValueError``
    when no user message holds text, or a message's text is longer than
    ``max_chars`` (None: no limit); :class:`~cleo_rules.history.HistoryError`
    for an item that cannot be read; ``TypeError`` when ``messages`` is not
    a list.
    """
    turns = _turns(messages)
    for index in range(len(turns) - 1, -1, -1):
        role, text = turns[index]
        if role == "user" and text is not None:
            return check_message(text, max_chars), _history(turns[:index], max_chars)
    raise ValueError("the conversation has no user message to classify")


class CleoRulesRetriever(BaseRetriever):
    """A retriever that asks cleo-rules what each turn should search for, then asks ``retriever``.

    ``retriever`` is any LlamaIndex ``BaseRetriever``. ``pack`` is a compiled
    pack, a :class:`~cleo_rules.PackManager` (hot reload), a pack directory or
    installed pack's name, or None for the bundled ``cleo-en``. ``memory``
    (anything with ``get_all()`` returning ``ChatMessage`` objects) gives
    ``retrieve`` its history. ``metadata_key`` names the metadata entry
    that carries the decision. ``max_message_chars`` is the longest message,
    and text of one history item, it takes (the service's default; longer is
    a ``ValueError``).
    """

    def __init__(self, retriever: BaseRetriever, pack: Any = None, *, memory: Any = None,
                 metadata_key: str = METADATA_KEY, callback_manager: CallbackManager | None = None,
                 verbose: bool = False, max_message_chars: int = MAX_MESSAGE_CHARS) -> None:
        super().__init__(callback_manager=callback_manager or getattr(retriever, "callback_manager", None),
                         verbose=verbose)
        self.retriever = retriever
        self.memory = memory
        self.metadata_key = metadata_key
        self.max_message_chars = check_limit(max_message_chars)
        self._classifier = classifier(pack)

    # -- the conversation --------------------------------------------------------------------

    def retrieve_chat(self, messages: Sequence[ChatMessage]) -> list[NodeWithScore]:
        """The nodes for the conversation's last user message (none on a skipped turn)."""
        message, history = read_chat(messages, max_chars=self.max_message_chars)
        token = _chat_history.set(tuple(history))
        try:
            return self.retrieve(message)
        finally:
            _chat_history.reset(token)

    async def aretrieve_chat(self, messages: Sequence[ChatMessage]) -> list[NodeWithScore]:
        message, history = read_chat(messages, max_chars=self.max_message_chars)
        token = _chat_history.set(tuple(history))
        try:
            return await self.aretrieve(message)
        finally:
            _chat_history.reset(token)

    def _history_for(self, message: str) -> Sequence:
        given = _chat_history.get()
        if given is not None:
            return given
        if self.memory is None:
            return ()
        earlier = _history(_turns(list(self.memory.get_all())), self.max_message_chars)
        if earlier and earlier[-1]["role"] == "user" and earlier[-1]["content"] == message:
            earlier = earlier[:-1]  # a memory that already holds this very message
        return earlier

    # -- retrieving --------------------------------------------------------------------------

    def _decide(self, query_bundle: QueryBundle):
        message = check_message(query_bundle.query_str, self.max_message_chars)
        decision = self._classifier.classify(message, self._history_for(message))
        data = decision_metadata(decision)
        dispatcher.event(CleoRulesDecisionEvent(decision=data, message=message))
        return decision, data

    def _annotate(self, nodes: list[NodeWithScore], data: dict) -> list[NodeWithScore]:
        key = self.metadata_key
        out = []
        for item in nodes:
            node = item.node
            copy = node.model_copy(update={
                "metadata": {**node.metadata, key: dict(data)},
                "excluded_llm_metadata_keys": [*node.excluded_llm_metadata_keys, key],
                "excluded_embed_metadata_keys": [*node.excluded_embed_metadata_keys, key],
            })
            out.append(NodeWithScore(node=copy, score=item.score))
        return out

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        decision, data = self._decide(query_bundle)
        if decision.query is None:
            return []
        return self._annotate(self.retriever.retrieve(decision.query), data)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        decision, data = self._decide(query_bundle)
        if decision.query is None:
            return []
        return self._annotate(await self.retriever.aretrieve(decision.query), data)
