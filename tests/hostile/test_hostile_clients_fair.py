"""Hostile clients, item 11: readers cannot shed a write; the adapters read a history as the service does.

The queue. Reads (turns, recalls, stats), ingests and deletes of a tenant
share its ``--queue`` slots; reads may hold all but one, kept for a write, so
40 concurrent readers leave a write admitted. The service runs for real on
loopback and is stopped by its pid; the requests are held in the queue, not
raced: the test takes the lock of the tenant's index files, so a delete, which
saves the index when it is done, holds the tenant's thread (the test sees it
wait in ``/proc/locks``) while 40 readers and then an ingest arrive.

The adapters (the real LangChain and LlamaIndex classes). An item they
cannot read is a :class:`~cleo_rules.history.HistoryError` naming
``history[i]`` (never a raw ``AttributeError``, never a silent skip): a
LlamaIndex item that is not a ``ChatMessage`` nor cleo-rules' own history
format, a LangChain human message whose content is None; a LangChain
``chat_history`` that is not a list is a ``TypeError``. A message or a history
item's text over ``max_message_chars`` (the service's default, 10,000) is
refused before anything is classified or searched, as the service refuses it
with a 400.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cleo_rules import load_pack
from cleo_rules.history import HistoryError
from cleo_rules.resources import data_dir
from cleo_rules.serve.settings import ServeSettings

from helpers.service import Service

PACK = load_pack()
SERVICE = ServeSettings()  # the service's defaults
QUESTION = "Which van insurer covers tools left in the van overnight?"
REPLY = "Two do: Brightline Commercial and Zego Van. Brightline is cheaper."
CHOICE = "Yes, go with the second one."
FIVE_MB = "Tell me about the boiler plan. " * 170_000  # 5.1 million characters
NDJSON = {"Content-Type": "application/x-ndjson"}
JSON = {"Content-Type": "application/json"}
#: what is not a chat message in either framework, nor a history item of cleo-rules
junk = st.one_of(st.integers(), st.floats(allow_nan=False), st.none(), st.booleans(), st.binary(max_size=8))


# -- the queue -----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    base = tmp_path_factory.mktemp("fair-service")
    svc = Service("--memory", base / "memory", log_path=base / "service.log")  # the default --queue, 16
    try:
        svc.wait_ready(180)
        r = httpx.post(svc.url + "/v1/tenants/acme/memory", content=(data_dir() / "sample_memory.jsonl").read_bytes(),
                       headers=NDJSON, timeout=120)
        assert r.status_code == 200, r.text
        yield svc, base / "memory" / "acme"
    finally:
        svc.stop()


def shed(r: httpx.Response) -> bool:
    return (r.status_code == 503 and r.headers.get("content-type") == "application/problem+json"
            and r.json()["type"] == "/problems/overloaded" and r.headers.get("retry-after") == "1")


def waiting_for(lock_file: Path, pid: int) -> bool:
    """Whether process ``pid`` waits for the ``flock`` on ``lock_file`` (Linux's ``/proc/locks``)."""
    inode = lock_file.stat().st_ino
    for line in Path("/proc/locks").read_text().splitlines():
        m = re.search(r"->\s+FLOCK\s+\S+\s+WRITE\s+(\d+)\s+[0-9a-f]+:[0-9a-f]+:(\d+)\s", line)
        if m and int(m.group(1)) == pid and int(m.group(2)) == inode:
            return True
    return False


@pytest.mark.model
def test_item11_forty_concurrent_readers_leave_a_write_admitted(memory):
    svc, store = memory
    queue = SERVICE.queue
    first_doc = next(json.loads(line)["id"] for line in (data_dir() / "sample_memory.jsonl").read_text().splitlines()
                     if json.loads(line)["type"] == "document")
    line = json.dumps({"type": "document", "id": "late-note", "title": "Late note", "date": "2024-03-01",
                       "text": "The boiler service plan renews in March."}) + "\n"

    async def scene():
        answered: list[tuple[httpx.Response, float]] = []
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
        fd = os.open(store / "index.lock", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # the store's index lock: the tenant's next save waits for it
            async with httpx.AsyncClient(base_url=svc.url, timeout=60, limits=limits) as client:
                # a delete saves the index when it is done: it holds the tenant's thread until the lock is let go
                holder = asyncio.ensure_future(client.delete(f"/v1/tenants/acme/memory/document/{first_doc}"))
                deadline = time.monotonic() + 60
                while not waiting_for(store / "index.lock", svc.pid):
                    assert time.monotonic() < deadline and not holder.done(), "the delete never reached the lock"
                    await asyncio.sleep(0.01)

                async def read():
                    r = await client.post("/v1/tenants/acme/turns", headers=JSON,
                                          content=json.dumps({"message": "Which boiler service plan did we choose?"}))
                    answered.append((r, time.monotonic()))
                    return r

                readers = [asyncio.ensure_future(read()) for _ in range(40)]
                while sum(shed(r) for r, _ in answered) < 40 - queue + 1:  # the queue is full: the rest are shed
                    assert time.monotonic() < deadline, [r.status_code for r, _ in answered]
                    await asyncio.sleep(0.01)
                write = asyncio.ensure_future(client.post("/v1/tenants/acme/memory", content=line.encode(),
                                                          headers=NDJSON))
                done, _ = await asyncio.wait({write}, timeout=3)  # a shed write is answered at once
                released = time.monotonic()
                fcntl.flock(fd, fcntl.LOCK_UN)
                reads = await asyncio.gather(*readers)
                return await holder, await write, reads, answered, released, bool(done)
        finally:
            os.close(fd)

    holder, write, reads, answered, released, early = asyncio.run(scene())
    assert not shed(write), write.text  # the write kept its slot
    assert write.status_code == 200 and write.json()["added"] == 1, write.text
    assert not early  # it waited behind the readers: admitted, not answered
    assert holder.status_code == 200 and holder.json()["deleted"] is True, holder.text
    statuses = [r.status_code for r in reads]
    assert set(statuses) <= {200, 503} and all(shed(r) for r in reads if r.status_code == 503)
    # with the delete waiting, the readers held all but the slot kept for a write; the rest were shed at once
    assert statuses.count(200) == queue - 2 and statuses.count(503) == 40 - queue + 2
    assert all(at >= released for r, at in answered if r.status_code == 200)  # every admitted read waited
    with httpx.Client(base_url=svc.url, timeout=60) as client:  # and the tenant's queue is free again
        assert client.post("/v1/tenants/acme/turns", json={"message": "When does the boiler plan renew?"}
                           ).status_code == 200
        assert client.delete("/v1/tenants/acme/memory/document/late-note").status_code == 200


# -- the LangChain adapter -----------------------------------------------------------------------------------------

def langchain_retriever(**kwargs):
    from langchain_core.documents import Document
    from langchain_core.runnables import RunnableLambda

    from cleo_rules.integrations.langchain import CleoRulesRetriever

    asked: list[str] = []
    def search(query: str) -> list[Document]:
        asked.append(query)
        return [Document(page_content="Zego Van covers tools overnight.")]

    base = RunnableLambda(search)
    return CleoRulesRetriever(base_retriever=base, pack=PACK, **kwargs), asked


@pytest.mark.parametrize("conversation, index", [
    ({"input": CHOICE, "chat_history": [QUESTION, {"role": "user", "content": None}]}, 1),
    ([{"role": "user", "content": None}], 0),
    ([QUESTION, ("human", None), CHOICE], 1),
    ([QUESTION, {"type": "human", "content": None}, CHOICE], 1),
])
def test_item11_langchain_a_human_message_with_no_content_is_an_error_naming_it(conversation, index):
    retriever, asked = langchain_retriever()
    with pytest.raises(HistoryError, match=rf"^history\[{index}\]: .*None") as caught:
        retriever.invoke(conversation)
    assert caught.value.index == index and asked == []


def test_langchain_an_assistant_message_with_no_content_is_still_passed_over_as_elsewhere():
    from cleo_rules.integrations.langchain import read_conversation

    tools_only = {"role": "assistant", "content": None}
    reply = {"role": "assistant", "content": REPLY}
    message, history = read_conversation({"input": CHOICE, "chat_history": [QUESTION, tools_only, reply]})
    assert (message, history) == (CHOICE, [{"role": "user", "content": QUESTION}, reply])
    # the history reader passes it over too: the same decision
    assert PACK.classify(CHOICE, [QUESTION, tools_only, reply]).query == PACK.classify(CHOICE, history).query


@pytest.mark.parametrize("key", ["chat_history", "history"])
@pytest.mark.parametrize("earlier", ["Which van insurer covers tools?", {"role": "user", "content": QUESTION}, 5,
                                     b"bytes", 2.5])
def test_item11_langchain_a_chat_history_that_is_not_a_list_is_an_error(key, earlier):
    retriever, asked = langchain_retriever()
    with pytest.raises(TypeError, match=rf"^'{key}' must be a list of the earlier messages, oldest first, not "):
        retriever.invoke({"input": CHOICE, key: earlier})
    assert asked == []


def test_langchain_no_chat_history_is_still_no_history():
    from cleo_rules.integrations.langchain import read_conversation

    for value in ({"input": CHOICE}, {"input": CHOICE, "chat_history": None}, {"input": CHOICE, "chat_history": []},
                  {"input": CHOICE, "history": ()}):
        assert read_conversation(value) == (CHOICE, [])


@settings(max_examples=60, deadline=None)
@given(before=st.lists(st.sampled_from([QUESTION, REPLY]), max_size=3), item=junk)
def test_item11_langchain_an_item_it_cannot_read_is_named(before, item):
    from cleo_rules.integrations.langchain import read_conversation

    for conversation in ([*before, item, CHOICE], {"input": CHOICE, "chat_history": [*before, item]}):
        with pytest.raises(HistoryError, match=rf"^history\[{len(before)}\]: not a message LangChain can read") as e:
            read_conversation(conversation)
        assert e.value.index == len(before)


# -- the LlamaIndex adapter ----------------------------------------------------------------------------------------

def llama_retriever(**kwargs):
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, TextNode

    from cleo_rules.integrations.llama_index import CleoRulesRetriever

    class Base(BaseRetriever):
        def __init__(self):
            super().__init__()
            self.asked: list[str] = []

        def _retrieve(self, query_bundle):
            self.asked.append(query_bundle.query_str)
            return [NodeWithScore(node=TextNode(text="Zego Van covers tools overnight."), score=1.0)]

    base = Base()
    return CleoRulesRetriever(base, PACK, **kwargs), base


def chat():
    from llama_index.core.base.llms.types import ChatMessage

    return [ChatMessage(role="user", content=QUESTION), ChatMessage(role="assistant", content=REPLY),
            ChatMessage(role="user", content=CHOICE)]


@settings(max_examples=60, deadline=None)
@given(position=st.integers(0, 2), item=junk)
def test_item11_llama_index_an_item_it_cannot_read_is_named_not_an_attribute_error(position, item):
    retriever, base = llama_retriever()
    messages: list[Any] = chat()
    messages.insert(position, item)
    with pytest.raises(HistoryError, match=rf"^history\[{position}\]: an item must be a ChatMessage, a string or "
                                           r"\{\"role\", \"content\"\}, found ") as caught:
        retriever.retrieve_chat(messages)
    assert caught.value.index == position and base.asked == []


@pytest.mark.parametrize("item, says", [
    ({"text": QUESTION}, "an item must have a 'role'"),
    ({"role": "user", "content": None}, "a user item's 'content' cannot be null"),
    ({"role": "narrator", "content": QUESTION}, "unknown role 'narrator'"),
    ({"role": "assistant", "content": 7}, "'content' must be a string"),
])
def test_item11_llama_index_a_malformed_dict_is_named_as_the_history_reader_names_it(item, says):
    retriever, base = llama_retriever()
    with pytest.raises(HistoryError, match=rf"^history\[1\]: {re.escape(says)}"):
        retriever.retrieve_chat([chat()[0], item, *chat()[1:]])
    assert base.asked == []


def test_item11_llama_index_strings_and_role_dicts_are_read_as_the_one_history_format():
    from cleo_rules.integrations.llama_index import read_chat

    one_format = [QUESTION, {"role": "assistant", "content": REPLY}, {"role": "system", "content": "Be brief."},
                  {"role": "user", "content": [{"type": "text", "text": CHOICE}]}]
    assert read_chat(one_format) == read_chat(chat()) == (CHOICE, [{"role": "user", "content": QUESTION},
                                                                   {"role": "assistant", "content": REPLY}])
    retriever, base = llama_retriever()
    nodes = retriever.retrieve_chat(one_format)
    assert base.asked == [PACK.classify(CHOICE, [QUESTION, {"role": "assistant", "content": REPLY}]).query]
    assert nodes[0].node.metadata["cleo_rules"]["kind"] == "follow_up"


@pytest.mark.parametrize("conversation", [CHOICE, {"role": "user", "content": CHOICE}, 5])
def test_item11_llama_index_a_conversation_that_is_not_a_list_is_an_error(conversation):
    retriever, base = llama_retriever()
    with pytest.raises(TypeError, match="^the conversation must be a list of chat messages"):
        retriever.retrieve_chat(conversation)
    assert base.asked == []


# -- max_message_chars in both ---------------------------------------------------------------------------------------

def test_item11_the_adapters_limit_is_the_services_default():
    from cleo_rules.integrations import MAX_MESSAGE_CHARS

    langchain, _ = langchain_retriever()
    llama, _ = llama_retriever()
    assert MAX_MESSAGE_CHARS == SERVICE.max_message_chars == langchain.max_message_chars == llama.max_message_chars
    for bad in (0, -5, True, 2.5):
        with pytest.raises(ValueError, match="max_message_chars"):
            llama_retriever(max_message_chars=bad)
    with pytest.raises(ValueError, match="max_message_chars"):
        langchain_retriever(max_message_chars=0)


def test_item11_langchain_a_5_mb_message_never_reaches_the_base_retriever():
    from langchain_core.messages import AIMessage, HumanMessage

    retriever, asked = langchain_retriever()
    limit = SERVICE.max_message_chars
    for conversation in (FIVE_MB, [HumanMessage(QUESTION), AIMessage(REPLY), HumanMessage(FIVE_MB)],
                         {"input": FIVE_MB, "chat_history": [QUESTION]}):
        with pytest.raises(ValueError, match=rf"^message is {len(FIVE_MB)} characters; the limit is {limit}"):
            retriever.invoke(conversation)
        with pytest.raises(ValueError, match=rf"^message is {len(FIVE_MB)} characters"):
            asyncio.run(retriever.ainvoke(conversation))
    with pytest.raises(HistoryError, match=rf"^history\[1\]: its text is {len(FIVE_MB)} characters; the limit is"):
        retriever.invoke([HumanMessage(QUESTION), AIMessage(FIVE_MB), HumanMessage(CHOICE)])
    with pytest.raises(HistoryError, match=r"^history\[0\]: its text is"):
        retriever.invoke({"input": CHOICE, "chat_history": [{"role": "user", "content": [
            {"type": "text", "text": FIVE_MB[:6000]}, {"type": "text", "text": FIVE_MB[:6000]}]}]})
    assert asked == []
    at_limit = "x" * (limit - 1) + "?"
    assert retriever.invoke([HumanMessage(QUESTION), AIMessage("y" * limit), HumanMessage(at_limit)])  # the limit is in
    assert asked == [PACK.classify(at_limit, [QUESTION, {"role": "assistant", "content": "y" * limit}]).query]
    bigger, asked = langchain_retriever(max_message_chars=len(FIVE_MB))
    assert bigger.invoke(FIVE_MB) and len(asked) == 1  # a larger limit when it is asked for


def test_item11_llama_index_a_5_mb_message_never_reaches_the_base_retriever():
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.memory import ChatMemoryBuffer

    retriever, base = llama_retriever()
    limit = SERVICE.max_message_chars
    with pytest.raises(ValueError, match=rf"^message is {len(FIVE_MB)} characters; the limit is {limit}"):
        retriever.retrieve(FIVE_MB)
    with pytest.raises(ValueError, match=rf"^message is {len(FIVE_MB)} characters"):
        retriever.retrieve_chat([*chat()[:2], ChatMessage(role="user", content=FIVE_MB)])
    with pytest.raises(ValueError, match=rf"^message is {len(FIVE_MB)} characters"):
        asyncio.run(retriever.aretrieve(FIVE_MB))
    with pytest.raises(HistoryError, match=rf"^history\[1\]: its text is {len(FIVE_MB)} characters"):
        retriever.retrieve_chat([chat()[0], ChatMessage(role="assistant", content=FIVE_MB), chat()[2]])
    memory = ChatMemoryBuffer.from_defaults(token_limit=10_000_000)
    memory.put(ChatMessage(role="user", content=QUESTION))
    memory.put(ChatMessage(role="assistant", content=FIVE_MB))
    remembering, base_too = llama_retriever(memory=memory)
    with pytest.raises(HistoryError, match=r"^history\[1\]: its text is"):
        remembering.retrieve(CHOICE)
    assert base.asked == [] and base_too.asked == []
    assert retriever.retrieve_chat([chat()[0], ChatMessage(role="assistant", content="y" * limit), chat()[2]])
    assert len(base.asked) == 1
