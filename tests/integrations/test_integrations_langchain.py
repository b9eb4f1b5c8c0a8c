"""cleo_rules.integrations.langchain with the real langchain-core classes and a small in-memory base retriever.

Outbound connections are refused for the whole module, imports included.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from cleo_rules import PackManager, load_pack

from helpers import ROOT
from helpers.netguard import loopback_only


@pytest.fixture(scope="module", autouse=True)
def offline():
    with loopback_only() as attempts:
        yield attempts
    assert attempts == [], f"something reached for the network: {attempts}"


@pytest.fixture(scope="module")
def lc(offline, default_pack):
    """The LangChain pieces, imported with the network refused; and a small in-memory retriever."""
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class WordRetriever(BaseRetriever):
        """Documents sharing a word with the query, most shared first; remembers every query it was asked."""

        documents: list[Document]
        asked: list[str] = []
        k: int = 3

        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            self.asked.append(query)
            words = set(re.findall(r"[a-z]+", query.lower()))
            scored = [(len(words & set(re.findall(r"[a-z]+", d.page_content.lower()))), i, d)
                      for i, d in enumerate(self.documents)]
            return [d for n, _, d in sorted(scored, key=lambda t: (-t[0], t[1])) if n][: self.k]

    class Recorder(BaseCallbackHandler):
        def __init__(self):
            self.events: list[tuple[str, dict]] = []
            self.texts: list[str] = []
            self.retrievals: list[str] = []

        def on_custom_event(self, name, data, *, run_id, tags=None, metadata=None, **kwargs):
            self.events.append((name, data))

        def on_text(self, text, **kwargs):
            self.texts.append(text)

        def on_retriever_start(self, serialized, query, **kwargs):
            self.retrievals.append(query)

    documents = [
        Document("Zego Van renewal: tools cover overnight, excess 250 pounds", metadata={"id": "zego"}),
        Document("Brightline Commercial quote: cheaper, no overnight tools cover", metadata={"id": "brightline"}),
        Document("Sourdough pricing at the Leeds shop: large loaf 4.50", metadata={"id": "sourdough"}),
    ]
    return {"WordRetriever": WordRetriever, "Recorder": Recorder, "documents": documents, "pack": default_pack}


def conversation():
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    return [
        SystemMessage("You are the office assistant."),
        HumanMessage("Which van insurer covers tools left in the van overnight?"),
        AIMessage("", tool_calls=[{"name": "search", "args": {"q": "van insurers"}, "id": "call-1"}]),
        ToolMessage("Brightline, Zego", tool_call_id="call-1"),
        AIMessage("Two do: Brightline Commercial and Zego Van. Brightline is cheaper."),
        HumanMessage("Yes, go with the second one."),
    ]


#: the conversation as cleo-rules reads it: system, tool and tool-call-only messages passed over
HISTORY = [
    {"role": "user", "content": "Which van insurer covers tools left in the van overnight?"},
    {"role": "assistant", "content": "Two do: Brightline Commercial and Zego Van. Brightline is cheaper."},
]


def make(lc, **kwargs):
    from cleo_rules.integrations.langchain import CleoRulesRetriever

    base = lc["WordRetriever"](documents=lc["documents"], asked=[])
    return CleoRulesRetriever(base_retriever=base, **{"pack": lc["pack"], **kwargs}), base


def test_the_last_human_message_is_classified_and_the_base_retriever_asked_the_shaped_query(lc):
    retriever, base = make(lc)
    decision = lc["pack"].classify("Yes, go with the second one.", HISTORY)
    assert decision.kind == "follow_up" and decision.query != decision.message
    docs = retriever.invoke(conversation())
    assert base.asked == [decision.query]
    assert [d.metadata["id"] for d in docs] == [d.metadata["id"] for d in base.invoke(decision.query)]
    for doc in docs:
        meta = doc.metadata["cleo_rules"]
        assert meta == {"kind": "follow_up", "rule": decision.rule, "query": decision.query,
                        "anchor": decision.anchor, "referent": decision.referent, "searched": True,
                        "pack": decision.pack, "pack_version": decision.pack_version,
                        "pack_hash": decision.pack_hash, "note": None}
    assert "cleo_rules" not in lc["documents"][0].metadata  # the base retriever's documents are not changed


def test_the_metadata_and_the_event_carry_the_kind_as_a_plain_string(lc):
    """`kind` is "follow_up" itself, not the DecisionKind member: a plain str whose repr a user reads as written."""
    retriever, _ = make(lc)
    recorder = lc["Recorder"]()
    docs = retriever.invoke(conversation(), config={"callbacks": [recorder]})
    kinds = [d.metadata["cleo_rules"]["kind"] for d in docs] + [data["kind"] for _, data in recorder.events]
    assert len(kinds) == len(docs) + 1 and docs
    assert all(type(kind) is str and repr(kind) == "'follow_up'" for kind in kinds), [repr(k) for k in kinds]


def test_a_skipped_turn_returns_nothing_and_the_decision_reaches_the_callbacks(lc):
    from langchain_core.messages import AIMessage, HumanMessage

    retriever, base = make(lc)
    recorder = lc["Recorder"]()
    docs = retriever.invoke([*conversation(), AIMessage("Zego Van it is."), HumanMessage("Thanks!")],
                            config={"callbacks": [recorder]})
    assert docs == [] and base.asked == []
    assert recorder.retrievals == ["Thanks!"]  # the retriever's own run; the base retriever never ran
    (name, data), = recorder.events
    assert name == "cleo_rules.decision"
    assert data["kind"] == "skip" and data["searched"] is False and data["query"] is None
    assert recorder.texts == ["cleo-rules: skip: no search was made for this turn\n"]
    # a turn with a search sends its decision too, and the base retriever runs as a child of this run
    retriever.invoke(conversation(), config={"callbacks": [recorder]})
    assert [e[1]["kind"] for e in recorder.events] == ["skip", "follow_up"]
    assert recorder.retrievals[1:] == ["Yes, go with the second one.", recorder.events[1][1]["query"]]


def test_astream_events_carries_the_decision_on_a_skipped_turn(lc):
    from langchain_core.messages import HumanMessage

    retriever, base = make(lc)

    async def run():
        return [e async for e in retriever.astream_events([HumanMessage("Compare the two van quotes please"),
                                                          HumanMessage("ok")], version="v2")]

    events = asyncio.run(run())
    custom = [e for e in events if e["event"] == "on_custom_event"]
    assert [e["name"] for e in custom] == ["cleo_rules.decision"] and custom[0]["data"]["kind"] == "skip"
    end = next(e for e in events if e["event"] == "on_retriever_end")
    assert end["data"]["output"] == [] and base.asked == []


def test_async_invoke_shapes_the_query_too(lc):
    retriever, base = make(lc)
    docs = asyncio.run(retriever.ainvoke(conversation()))
    decision = lc["pack"].classify("Yes, go with the second one.", HISTORY)
    assert base.asked == [decision.query] and docs and docs[0].metadata["cleo_rules"]["rule"] == decision.rule


def test_every_input_shape_reads_as_the_same_conversation(lc):
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

    from cleo_rules.integrations.langchain import read_conversation

    want = ("Yes, go with the second one.", HISTORY)
    assert read_conversation(conversation()) == want
    assert read_conversation({"messages": conversation()}) == want
    assert read_conversation({"input": "Yes, go with the second one.", "chat_history": conversation()[:5]}) == want
    assert read_conversation([("system", "x"), ("human", HISTORY[0]["content"]), ("ai", HISTORY[1]["content"]),
                              ("human", "Yes, go with the second one.")]) == want
    assert read_conversation([{"role": "user", "content": HISTORY[0]["content"]},
                              {"role": "assistant", "content": HISTORY[1]["content"]},
                              {"role": "user", "content": "Yes, go with the second one."}]) == want
    prompt = ChatPromptTemplate.from_messages([("system", "x"), MessagesPlaceholder("history"), ("human", "{q}")])
    value = prompt.invoke({"history": [HumanMessage(HISTORY[0]["content"]), AIMessage(HISTORY[1]["content"])],
                           "q": "Yes, go with the second one."})
    assert read_conversation(value) == want
    # content as a list of parts: its text parts, as the history reader joins them
    parts = [HumanMessage([{"type": "text", "text": "Yes,"}, {"type": "image_url", "image_url": {"url": "x"}},
                           {"type": "text", "text": "the second one."}])]
    assert read_conversation(parts) == ("Yes, the second one.", [])
    # trailing messages after the last human one are not its history
    assert read_conversation([*conversation(), AIMessage("Zego it is.")]) == want
    assert read_conversation("Tell me more.") == ("Tell me more.", [])
    with pytest.raises(ValueError, match="no human message"):
        read_conversation([AIMessage("hello")])
    with pytest.raises(TypeError):
        read_conversation({"nothing": 1})
    with pytest.raises(TypeError):
        read_conversation(42)  # type: ignore[arg-type]


def test_usable_in_an_lcel_chain(lc):
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import HumanMessage
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough

    retriever, base = make(lc)
    prompt = ChatPromptTemplate.from_messages([
        ("system", "Answer from this context:\n{context}"), MessagesPlaceholder("messages")])
    model = FakeListChatModel(responses=["Zego Van covers tools overnight."])

    def context(docs):
        return "\n".join(f"- {d.page_content} [{d.metadata['cleo_rules']['kind']}]" for d in docs) or "(no search)"

    seen = []
    chain = (RunnablePassthrough.assign(context=RunnableLambda(lambda x: x["messages"]) | retriever | context)
             | RunnableLambda(lambda value: seen.append(value) or value) | prompt | model | StrOutputParser())
    answer = chain.invoke({"messages": conversation()})
    assert answer == "Zego Van covers tools overnight."
    decision = lc["pack"].classify("Yes, go with the second one.", HISTORY)
    assert base.asked == [decision.query]
    assert seen[0]["context"].startswith("- Zego Van renewal") and "[follow_up]" in seen[0]["context"]
    # batch over several conversations, a skipped one among them
    out = chain.batch([{"messages": conversation()}, {"messages": [HumanMessage("Thanks!")]}])
    assert out == ["Zego Van covers tools overnight."] * 2
    assert base.asked[1:] == [decision.query]
    assert sorted(v["context"] for v in seen[1:])[0] == "(no search)"


def test_a_pack_manager_or_a_pack_directory_does_the_classifying(lc, pack_copy):
    retriever, base = make(lc, pack=str(pack_copy.dir))
    retriever.invoke(conversation())
    assert base.asked == [load_pack(pack_copy.dir).classify("Yes, go with the second one.", HISTORY).query]
    with PackManager(pack_copy.dir) as manager:
        managed, _ = make(lc, pack=manager)
        docs = managed.invoke(conversation())
        assert docs[0].metadata["cleo_rules"]["pack_hash"] == manager.pack.content_hash


def test_an_in_memory_vector_store_retriever_works_behind_it(lc):
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    from cleo_rules.integrations.langchain import CleoRulesRetriever

    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=16))
    store.add_documents(lc["documents"])
    retriever = CleoRulesRetriever(base_retriever=store.as_retriever(search_kwargs={"k": 2}))
    docs = retriever.invoke(conversation())
    assert len(docs) == 2 and all(d.metadata["cleo_rules"]["kind"] == "follow_up" for d in docs)
    assert retriever.invoke([("human", "ok")]) == []


def test_the_readme_example_runs(lc):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("### LangChain")
    code = re.search(r"```python\n(.*?)```", text[start:], re.S).group(1)
    namespace: dict = {}  # self-contained: its own stand-in retriever, nothing given from outside
    exec(compile(code, "README.md (LangChain)", "exec", dont_inherit=True), namespace)  # as a script: no __future__
    assert namespace["docs"] and namespace["docs"][0].metadata["cleo_rules"]["kind"] == "follow_up"
    assert namespace["docs"][0].page_content.startswith("Zego Van")  # the option offered second, found first
