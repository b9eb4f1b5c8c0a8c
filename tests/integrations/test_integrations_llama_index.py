"""cleo_rules.integrations.llama_index with the real llama-index-core classes and a small in-memory base retriever.

Outbound connections are refused for the whole module, imports included.
"""

from __future__ import annotations

import asyncio
import re

import pytest

from cleo_rules import PackManager, load_pack

from helpers import ROOT
from helpers.netguard import loopback_only

QUESTION = "Which van insurer covers tools left in the van overnight?"
REPLY = "Two do: Brightline Commercial and Zego Van. Brightline is cheaper."
CHOICE = "Yes, go with the second one."
HISTORY = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": REPLY}]


@pytest.fixture(scope="module", autouse=True)
def offline():
    with loopback_only() as attempts:
        yield attempts
    assert attempts == [], f"something reached for the network: {attempts}"


@pytest.fixture(scope="module")
def li(offline, default_pack):
    """The LlamaIndex pieces, imported with the network refused; a small in-memory retriever; an event handler."""
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, TextNode

    class WordRetriever(BaseRetriever):
        """Nodes sharing a word with the query, most shared first; remembers every query it was asked."""

        def __init__(self, nodes, k: int = 3):
            super().__init__()
            self.nodes, self.k, self.asked = nodes, k, []

        def _retrieve(self, query_bundle):
            self.asked.append(query_bundle.query_str)
            words = set(re.findall(r"[a-z]+", query_bundle.query_str.lower()))
            scored = [(len(words & set(re.findall(r"[a-z]+", n.text.lower()))), i, n) for i, n in enumerate(self.nodes)]
            return [NodeWithScore(node=n, score=float(s)) for s, _, n in sorted(scored, key=lambda t: (-t[0], t[1]))
                    if s][: self.k]

    class Decisions(BaseEventHandler):
        seen: list = []

        @classmethod
        def class_name(cls) -> str:
            return "Decisions"

        def handle(self, event, **kwargs):
            if event.class_name() == "CleoRulesDecisionEvent":
                self.seen.append(event)

    handler = Decisions(seen=[])
    root = get_dispatcher()
    root.add_event_handler(handler)
    nodes = [TextNode(text="Zego Van renewal: tools cover overnight, excess 250 pounds", metadata={"id": "zego"}),
             TextNode(text="Brightline Commercial quote: cheaper, no overnight tools cover", metadata={"id": "bright"}),
             TextNode(text="Sourdough pricing at the Leeds shop: large loaf 4.50", metadata={"id": "sourdough"})]
    try:
        yield {"WordRetriever": WordRetriever, "nodes": nodes, "handler": handler, "pack": default_pack}
    finally:
        root.event_handlers.remove(handler)


def chat():
    from llama_index.core.base.llms.types import ChatMessage

    return [ChatMessage(role="system", content="You are the office assistant."),
            ChatMessage(role="user", content=QUESTION),
            ChatMessage(role="assistant", content=REPLY),
            ChatMessage(role="user", content=CHOICE)]


def make(li, **kwargs):
    from cleo_rules.integrations.llama_index import CleoRulesRetriever

    base = li["WordRetriever"](li["nodes"])
    return CleoRulesRetriever(base, **{"pack": li["pack"], **kwargs}), base


def test_the_last_user_message_is_classified_and_the_base_retriever_asked_the_shaped_query(li):
    retriever, base = make(li)
    decision = li["pack"].classify(CHOICE, HISTORY)
    assert decision.kind == "follow_up" and decision.query != CHOICE
    nodes = retriever.retrieve_chat(chat())
    assert base.asked == [decision.query]
    assert [n.node.metadata["id"] for n in nodes] == [n.node.metadata["id"] for n in base.retrieve(decision.query)]
    for n in nodes:
        meta = n.node.metadata["cleo_rules"]
        assert meta["kind"] == "follow_up" and meta["rule"] == decision.rule and meta["query"] == decision.query
        assert meta["referent"] == decision.referent and meta["pack_hash"] == decision.pack_hash
        # the decision rides in the metadata but stays out of what the LLM and the embedding read
        assert "cleo_rules" not in n.node.get_content(metadata_mode="llm")
        assert "cleo_rules" not in n.node.get_content(metadata_mode="embed")
    assert "cleo_rules" not in li["nodes"][0].metadata
    assert li["handler"].seen[-1].decision == nodes[0].node.metadata["cleo_rules"]


def test_the_metadata_and_the_event_carry_the_kind_as_a_plain_string(li):
    """`kind` is "follow_up" itself, not the DecisionKind member: a plain str whose repr a user reads as written."""
    retriever, _ = make(li)
    nodes = retriever.retrieve_chat(chat())
    kinds = [n.node.metadata["cleo_rules"]["kind"] for n in nodes] + [li["handler"].seen[-1].decision["kind"]]
    assert nodes
    assert all(type(kind) is str and repr(kind) == "'follow_up'" for kind in kinds), [repr(k) for k in kinds]


def test_a_skipped_turn_returns_nothing_and_dispatches_the_decision(li):
    from llama_index.core.base.llms.types import ChatMessage

    retriever, base = make(li)
    before = len(li["handler"].seen)
    nodes = retriever.retrieve_chat([*chat(), ChatMessage(role="assistant", content="Zego Van it is."),
                                     ChatMessage(role="user", content="Thanks!")])
    assert nodes == [] and base.asked == []
    (event,) = li["handler"].seen[before:]
    assert event.message == "Thanks!" and event.decision["kind"] == "skip" and event.decision["searched"] is False
    # retrieve() with no history: the message alone
    assert retriever.retrieve("ok") == [] and li["handler"].seen[-1].decision["kind"] == "skip"


def test_async_retrieval_shapes_the_query_too(li):
    retriever, base = make(li)
    nodes = asyncio.run(retriever.aretrieve_chat(chat()))
    assert base.asked == [li["pack"].classify(CHOICE, HISTORY).query] and nodes


def test_in_a_chat_engine_the_shared_memory_is_the_history(li):
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.chat_engine import ContextChatEngine
    from llama_index.core.llms import MockLLM
    from llama_index.core.memory import ChatMemoryBuffer

    memory = ChatMemoryBuffer.from_defaults(token_limit=4000)
    retriever, base = make(li, memory=memory)
    engine = ContextChatEngine.from_defaults(retriever=retriever, memory=memory, llm=MockLLM(max_tokens=4))
    history = [ChatMessage(role="user", content=QUESTION), ChatMessage(role="assistant", content=REPLY)]
    response = engine.chat(CHOICE, chat_history=history)
    assert base.asked == [li["pack"].classify(CHOICE, HISTORY).query]
    assert response.source_nodes and response.source_nodes[0].node.metadata["cleo_rules"]["kind"] == "follow_up"
    # the engine stored the turn; a thanks after it is skipped: no nodes, and the base retriever is not asked
    skipped = engine.chat("Thanks!")
    assert skipped.source_nodes == [] and len(base.asked) == 1


def test_a_memory_that_already_holds_the_message_is_not_read_twice(li):
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.memory import ChatMemoryBuffer

    memory = ChatMemoryBuffer.from_defaults(token_limit=4000)
    for m in chat():
        memory.put(m)
    retriever, base = make(li, memory=memory)
    retriever.retrieve(CHOICE)
    assert base.asked == [li["pack"].classify(CHOICE, HISTORY).query]


def test_read_chat(li):
    from llama_index.core.base.llms.types import ChatMessage, MessageRole

    from cleo_rules.integrations.llama_index import read_chat

    assert read_chat(chat()) == (CHOICE, HISTORY)
    tool_call = ChatMessage(role=MessageRole.ASSISTANT, content="", additional_kwargs={"tool_calls": [{"id": "1"}]})
    tool = ChatMessage(role=MessageRole.TOOL, content="Brightline, Zego")
    assert read_chat([chat()[1], tool_call, tool, chat()[2], chat()[3],
                      ChatMessage(role="assistant", content="later")]) == (CHOICE, HISTORY)
    with pytest.raises(ValueError, match="no user message"):
        read_chat([ChatMessage(role="assistant", content="hello")])


def test_a_pack_manager_or_a_pack_directory_does_the_classifying(li, pack_copy):
    retriever, base = make(li, pack=str(pack_copy.dir))
    retriever.retrieve_chat(chat())
    assert base.asked == [load_pack(pack_copy.dir).classify(CHOICE, HISTORY).query]
    with PackManager(pack_copy.dir) as manager:
        managed, _ = make(li, pack=manager)
        assert managed.retrieve_chat(chat())[0].node.metadata["cleo_rules"]["pack_hash"] == manager.pack.content_hash


def test_a_vector_index_retriever_works_behind_it(li):
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    from cleo_rules.integrations.llama_index import CleoRulesRetriever

    index = VectorStoreIndex(li["nodes"], embed_model=MockEmbedding(embed_dim=8))
    retriever = CleoRulesRetriever(index.as_retriever(similarity_top_k=2))
    nodes = retriever.retrieve_chat(chat())
    assert len(nodes) == 2 and all(n.node.metadata["cleo_rules"]["kind"] == "follow_up" for n in nodes)


def test_the_readme_example_runs(li):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("### LlamaIndex")
    code = re.search(r"```python\n(.*?)```", text[start:], re.S).group(1)
    namespace: dict = {}  # self-contained: its own stand-in retriever, nothing given from outside
    exec(compile(code, "README.md (LlamaIndex)", "exec", dont_inherit=True), namespace)
    assert namespace["nodes"] and namespace["nodes"][0].node.metadata["cleo_rules"]["kind"] == "follow_up"
    assert "Zego Van" in namespace["decision"]["query"]  # the option offered second, searched with the subject
