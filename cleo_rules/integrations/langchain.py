"""cleo-rules in front of any LangChain retriever: :class:`CleoRulesRetriever`.

::

    from cleo_rules.integrations.langchain import CleoRulesRetriever

    retriever = CleoRulesRetriever(base_retriever=vector_store.as_retriever())
    docs = retriever.invoke([HumanMessage("Compare the two van quotes"), AIMessage("Zego is cheaper."),
                             HumanMessage("Yes, the second one.")])
    docs[0].metadata["cleo_rules"]          # {"kind": "follow_up", "rule": ..., "query": ..., ...}

The input is the conversation, in any of LangChain's usual shapes:

* a list of messages (``BaseMessage``, ``("human", "...")`` tuples,
  ``{"role": ..., "content": ...}`` dicts), or a chat ``PromptValue``: the
  **last human message** is classified, the messages before it are its
  history (human → ``user``, AI → ``assistant``; system, tool and function
  messages, and AI messages that only call tools, are passed over);
* a mapping with ``"messages"`` (a chat state), or with ``"input"`` (or
  ``"question"``) and ``"chat_history"`` (or ``"history"``), as
  ``RunnableWithMessageHistory`` passes them;
* a string: one message with no history.

A message or history item that cannot be read is a
:class:`~cleo_rules.history.HistoryError` naming ``history[i]`` (its position
in the list given): one LangChain cannot turn into a message, and a human one
whose ``content`` is None (an AI one with None is a reply that only called
tools, passed over as elsewhere). A ``chat_history`` (or ``history``) that is
not a list is a ``TypeError``. A message, or a history item's text, longer
than ``max_message_chars`` (default 10,000, the service's) is a
``ValueError`` naming it, before anything is classified or searched.

The base retriever is called with the shaped query; each document it
returns comes back as a copy whose metadata carries the decision under
``"cleo_rules"`` (:func:`cleo_rules.integrations.decision_metadata`). On a
skipped turn nothing is searched and no documents are returned. Every
decision, skipped or not, is sent to the callbacks of the retriever's run
as the custom event ``"cleo_rules.decision"`` (a handler's
``on_custom_event``, or ``astream_events``' ``on_custom_event``); a skipped
turn also sends ``on_text``.

Needs ``langchain-core`` (``pip install 'cleo-rules[langchain]'``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Union

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, ChatMessage, HumanMessage, convert_to_messages
from langchain_core.prompt_values import PromptValue
from langchain_core.retrievers import BaseRetriever, RetrieverLike
from langchain_core.runnables import RunnableConfig
from pydantic import PrivateAttr

from ..history import HistoryError
from . import (DECISION_EVENT, MAX_MESSAGE_CHARS, METADATA_KEY, check_item, check_limit, check_message, classifier,
               decision_metadata, text_of)

__all__ = ["CleoRulesRetriever", "ConversationInput", "DECISION_EVENT", "METADATA_KEY", "read_conversation"]

#: What :class:`CleoRulesRetriever` takes: see the module docstring.
ConversationInput = Union[str, Sequence[Any], PromptValue, Mapping[str, Any]]

_USER_ROLES = ("user", "human")
_ASSISTANT_ROLES = ("assistant", "ai")


def _role(message: BaseMessage) -> str | None:
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, ChatMessage):
        role = message.role.lower()
        return "user" if role in _USER_ROLES else "assistant" if role in _ASSISTANT_ROLES else None
    return None  # system, tool, function: not turns of the conversation


def _history(messages: Sequence[BaseMessage], max_chars: int | None = None) -> list[dict]:
    out = []
    for index, message in enumerate(messages):
        role = _role(message)
        text = text_of(message.content)
        if role is None or text is None or (role == "assistant" and (not text or text.isspace())):
            continue  # an AI message that only calls tools says nothing to point back at
        check_item(index, message.content, max_chars)
        out.append({"role": role, "content": message.content if isinstance(message.content, str) else text})
    return out


def _null_human(item) -> bool:
    """Whether ``item`` is a human message given as a dict or a pair whose content is None."""
    if isinstance(item, Mapping):
        role, content = item.get("role", item.get("type")), item.get("content")
    elif isinstance(item, (list, tuple)) and len(item) == 2:
        role, content = item
    else:
        return False
    return content is None and isinstance(role, str) and role.lower() in _USER_ROLES


def _messages(items) -> list[BaseMessage]:
    """``items`` as LangChain messages, each read alone: one that cannot be read is a :class:`HistoryError`."""
    out: list[BaseMessage] = []
    for index, item in enumerate(items):
        if isinstance(item, BaseMessage):
            out.append(item)
            continue
        if _null_human(item):
            raise HistoryError(index, "a human message's content cannot be None")
        try:
            out.extend(convert_to_messages([item]))
        except (NotImplementedError, TypeError, ValueError) as exc:  # LangChain's own ways of refusing an item
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise HistoryError(index, f"not a message LangChain can read ({type(item).__name__}): {first}") from None
    return out


def _earlier(value: Mapping) -> tuple[str, Any]:
    for key in ("chat_history", "history"):
        if key in value:
            return key, value[key]
    return "chat_history", None


def read_conversation(value: ConversationInput, *, max_chars: int | None = None) -> tuple[str, list[dict]]:
    """``(message, history)`` from what a :class:`CleoRulesRetriever` is invoked with.

    Raises ``ValueError`` when there is no human message to classify, or a
    message or history item's text is longer than ``max_chars`` (None: no
    limit); :class:`~cleo_rules.history.HistoryError` for a history item
    that cannot be read; ``TypeError`` for an input of no supported shape.
    """
    if isinstance(value, str):
        return check_message(value, max_chars), []
    if isinstance(value, Mapping):
        if "messages" in value:
            return read_conversation(value["messages"], max_chars=max_chars)
        for key in ("input", "question"):
            if key in value:
                message = value[key]
                if not isinstance(message, str):
                    message = text_of(getattr(message, "content", message))
                if not isinstance(message, str):
                    raise TypeError(f"{key!r} must be the user's message, a string")
                name, earlier = _earlier(value)
                if earlier is None:
                    earlier = []
                if isinstance(earlier, (str, bytes, Mapping)) or not isinstance(earlier, Sequence):
                    raise TypeError(f"{name!r} must be a list of the earlier messages, oldest first, not "
                                    f"{type(earlier).__name__}")
                return check_message(message, max_chars), _history(_messages(earlier), max_chars)
        raise TypeError("a mapping input needs 'messages', or 'input' (or 'question') with 'chat_history'")
    if isinstance(value, PromptValue):
        messages = value.to_messages()
    elif isinstance(value, Sequence) and not isinstance(value, bytes):
        messages = _messages(value)
    else:
        raise TypeError(f"expected the conversation as messages, a mapping or a string, not {type(value).__name__}")
    for index in range(len(messages) - 1, -1, -1):
        if _role(messages[index]) == "user":
            text = text_of(messages[index].content)
            if text is None:
                raise ValueError("the last human message holds no text to classify")
            return check_message(text, max_chars), _history(messages[:index], max_chars)
    raise ValueError("the conversation has no human message to classify")


class CleoRulesRetriever(BaseRetriever):
    """A retriever that asks cleo-rules what each turn should search for, then asks ``base_retriever``.

    ``base_retriever`` is any retriever (anything invoked with a query
    string that returns documents). ``pack`` is a compiled pack, a
    :class:`~cleo_rules.PackManager` (hot reload), a pack directory or
    installed pack's name, or None for the bundled ``cleo-en``.
    ``metadata_key`` names the metadata entry that carries the decision.
    ``max_message_chars`` is the longest message, and text of one history
    item, it takes (the service's default; longer is a ``ValueError``).
    See the module docstring for the inputs it takes and the events it sends.
    """

    base_retriever: RetrieverLike
    pack: Any = None
    metadata_key: str = METADATA_KEY
    max_message_chars: int = MAX_MESSAGE_CHARS
    _classifier: Any = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        check_limit(self.max_message_chars)
        self._classifier = classifier(self.pack)

    def invoke(self, input: ConversationInput, config: RunnableConfig | None = None,
               **kwargs: Any) -> list[Document]:
        """The documents for the conversation's last human message (none on a skipped turn)."""
        message, history = read_conversation(input, max_chars=self.max_message_chars)
        return super().invoke(message, config, cleo_history=history, **kwargs)

    async def ainvoke(self, input: ConversationInput, config: RunnableConfig | None = None,
                      **kwargs: Any) -> list[Document]:
        message, history = read_conversation(input, max_chars=self.max_message_chars)
        return await super().ainvoke(message, config, cleo_history=history, **kwargs)

    def _annotate(self, documents: list[Document], data: dict) -> list[Document]:
        return [d.model_copy(update={"metadata": {**d.metadata, self.metadata_key: dict(data)}}) for d in documents]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                cleo_history: Sequence = ()) -> list[Document]:
        decision = self._classifier.classify(check_message(query, self.max_message_chars), cleo_history)
        data = decision_metadata(decision)
        run_manager.get_child().on_custom_event(DECISION_EVENT, data, run_id=run_manager.run_id)
        if decision.query is None:
            run_manager.on_text(f"cleo-rules: {decision.kind}: no search was made for this turn\n")
            return []
        documents = self.base_retriever.invoke(decision.query, config={"callbacks": run_manager.get_child()})
        return self._annotate(documents, data)

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       cleo_history: Sequence = ()) -> list[Document]:
        decision = self._classifier.classify(check_message(query, self.max_message_chars), cleo_history)
        data = decision_metadata(decision)
        await run_manager.get_child().on_custom_event(DECISION_EVENT, data, run_id=run_manager.run_id)
        if decision.query is None:
            await run_manager.on_text(f"cleo-rules: {decision.kind}: no search was made for this turn\n")
            return []
        documents = await self.base_retriever.ainvoke(decision.query, config={"callbacks": run_manager.get_child()})
        return self._annotate(documents, data)
