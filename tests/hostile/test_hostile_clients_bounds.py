"""Hostile clients, items 1 and 4: one request cannot freeze the service; a lone surrogate is a 400.

Item 1. A history item is read as the message is, up to its first
``max_scan_chars`` characters (a user message's kind also by whether it goes
on past them), newest turn first and only as far as the pack's reaches go, in
time linear in what is read; the service checks a ``{role, content}`` item's
text against the same limit as a history string and classifies off the event
loop, so ``/healthz`` and SIGTERM are answered while a request works. The
work is asserted, not timed: what the classifier reads of a huge item is the
same whatever the item's size, and the decision on a huge item is the decision
on the item cut to the cap.

Item 4. A lone surrogate (``"\\ud800"``: JSON allows the escape, but it is
not Unicode) anywhere in a request, in a string or in a field name, is a 400
problem (E319) naming the field, checked before anything is done with the
request: a turn writes no trace, and in a batch only the item holding it fails.

The services are started for real on loopback (``tests/helpers/service.py``) and
stopped by their pid.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleo_rules import load_pack
from cleo_rules import matcher as matcher_module
from cleo_rules import proper_names as names_module
from cleo_rules import referent_finder as referents_module
from cleo_rules.resources import data_dir

from helpers.service import Service

PACK = load_pack()
CAP = PACK.settings.max_scan_chars
JSON = {"Content-Type": "application/json"}
QUESTION = "Who were the Mothers of Invention?"
BAND = "Yes. He did. The band. "
HUGE = BAND * 4000  # the issue's 80,000 characters
#: follow-ups that make the classifier read the history every way it can: a pronoun's referent (thing,
#: person), an offered option by position and by figure, the other option, an antecedent, a nod's reply words
FOLLOW_UPS = ["When did they break up?", "Yes, go with the second one.", "Tell me more.", "What about the band?",
              "And the cheaper one?", "What about the other one?", "How old is he now?", "Where is it?"]


def record(decision) -> dict:
    d = decision.to_dict()
    d.pop("message")
    return d


def headed(history: list) -> list:
    """``history`` with each assistant item cut to its first ``max_scan_chars`` characters: the classifier decides
    on it as on ``history`` (the properties above), and today's code decides on it in no time, so that the tests of the
    service fail, rather than stall, on a classifier that reads the whole item."""
    return [{**h, "content": h["content"][:CAP]} if isinstance(h, dict) and h.get("role") == "assistant" else h
            for h in history]


def post(client, path, body, **kwargs):
    return client.post(path, content=json.dumps(body), headers={**JSON, **kwargs.pop("headers", {})}, **kwargs)


def problem(r, status: int, name: str, field: str | None = None) -> dict:
    assert r.status_code == status, r.text[:500]
    assert r.headers["content-type"] == "application/problem+json"
    body = json.loads(r.content.decode("utf-8"))  # strict UTF-8: the answer is Unicode
    assert body["type"] == f"/problems/{name}" and body["status"] == status and body["detail"]
    assert "Traceback" not in r.text
    if field is not None:
        assert body.get("field") == field, body
    return body


# -- what the classifier reads: an operation count ----------------------------------------------------------------


class _Counted:
    """A compiled pattern whose calls record the length of the text they are given."""

    def __init__(self, pattern, sizes):
        self._pattern, self._sizes = pattern, sizes

    def __getattr__(self, name):
        method = getattr(self._pattern, name)
        if name not in ("search", "match", "fullmatch", "finditer", "findall", "sub", "split"):
            return method

        def call(*args, **kwargs):
            text = args[1] if name == "sub" else args[0]
            if isinstance(text, str):
                self._sizes.append(len(text))
            return method(*args, **kwargs)

        return call


@contextlib.contextmanager
def reading(cap: int = CAP):
    """What the classifier reads while the block runs: ``sizes``, the length of every text handed to one of
    its readers (names, normalisation, visible length, list items, quotations, sentences, figures), and
    ``touched``, every method of ``str`` run on a text longer than ``cap + 1`` (a slice is no call)."""
    sizes: list[int] = []
    touched: list[str] = []

    def counted(fn):
        def inner(text, *args, **kwargs):
            sizes.append(len(text))
            return fn(text, *args, **kwargs)

        return inner

    def profile(frame, event, arg):
        if event == "c_call":
            owner = getattr(arg, "__self__", None)
            if isinstance(owner, str) and len(owner) > cap + 1:
                touched.append(arg.__name__)

    with pytest.MonkeyPatch.context() as mp:
        for module, name in [(referents_module, "names"), (referents_module, "normalize"),
                             (matcher_module, "normalize"), (matcher_module, "visible_length"),
                             (referents_module, "list_items")]:
            if hasattr(module, name):
                mp.setattr(module, name, counted(getattr(module, name)))
        for name in ("_LIST_ITEM", "_QUOTED", "_SENTENCE", "_NUMBER"):
            if hasattr(referents_module, name):
                mp.setattr(referents_module, name, _Counted(getattr(referents_module, name), sizes))
        sys.setprofile(profile)
        try:
            yield sizes, touched
        finally:
            sys.setprofile(None)


FORMS = {
    "string": lambda text: text,
    "user": lambda text: {"role": "user", "content": text},
    "assistant": lambda text: {"role": "assistant", "content": text},
    "parts": lambda text: {"role": "assistant", "content": [{"type": "text", "text": text}]},
}


def fresh(pack=PACK) -> None:
    """Forget what the pack remembers of texts it read, so that two runs read alike."""
    finder = pack.matcher.referents
    with finder._lock:
        finder._cache.clear()
        finder._names.clear()
    pack.matcher._history_kinds.clear()


def _reads(form, huge: str) -> tuple[list, list, list]:
    fresh()
    item = FORMS[form](huge)
    history = [QUESTION, item] if form in ("assistant", "parts") else [item, {"role": "assistant", "content": BAND}]
    with reading() as (sizes, touched):
        decisions = [PACK.classify(m, history) for m in FOLLOW_UPS]
    return sizes, touched, [_quoted(d, huge) for d in decisions]  # a user item is the anchor, quoted whole


@pytest.mark.parametrize("form", FORMS)
def test_item1_a_huge_history_item_is_read_no_further_than_max_scan_chars_whatever_its_form(form):
    """The 80,000-character item and one of 1,000,000: every reader is handed at most ``max_scan_chars + 1``
    characters, no method of ``str`` runs over the item, and the work is the same for both sizes."""
    sizes, touched, decisions = _reads(form, HUGE)
    assert touched == []
    assert sizes and max(sizes) <= CAP + 1
    sizes_m, touched_m, decisions_m = _reads(form, BAND * 45_000)
    assert touched_m == [] and sizes_m == sizes  # the same reads, text for text: the size of the item does not count
    assert decisions_m == decisions
    assert sum(d["kind"] == "follow_up" for d in decisions) >= 6


def test_item1_a_reply_naming_hundreds_of_things_is_compared_a_bounded_number_of_times(monkeypatch):
    """Options and salience compare what a turn names pairwise: a turn keeps its first 64 names and list items."""
    calls = []
    real = referents_module._same
    monkeypatch.setattr(referents_module, "_same", lambda a, b: calls.append(1) or real(a, b))
    reply = " ".join(f"Zorvex{i}q." for i in range(500))[:CAP]  # some 400 things named, in 4,000 characters
    finder = PACK.matcher.referents
    reading_ = finder._read_text(reply, True)
    assert 2 <= len(reading_.mentions) <= 64 and len(reading_.options) <= 64
    assert len(calls) <= 64 * 63 // 2
    listed = "\n".join(f"- Option {i} at {i} pounds" for i in range(400))[:CAP]
    assert len(finder._read_text(listed, True).options) == 64
    d = PACK.classify("Yes, the second one.", [QUESTION, {"role": "assistant", "content": listed}])
    assert d.referent == "Option 1 at 1 pounds"


class _Reads(str):
    """A text that records every index it is read at (through ``[]``)."""

    def __new__(cls, text):
        self = super().__new__(cls, text)
        self.read = set()
        return self

    def __getitem__(self, key):
        if isinstance(key, slice):
            self.read.update(range(*key.indices(len(self))))
        else:
            self.read.add(key % len(self))
        return str.__getitem__(self, key)


@pytest.mark.parametrize("before, starts", [
    ("A long reply that goes on and on. " * 300, True),
    ("A long reply that goes on and on " * 300, False),
    ("x" * 9000 + "\n  \t", True),
    ("x" * 9000 + " (", True),
])
def test_item1_a_sentence_start_is_told_by_the_white_space_before_the_word(before, starts):
    """Whether a capitalised word starts a sentence is read off the white space before it and the character
    before that: every name of a long text is tested, so reading the whole prefix made the text quadratic."""
    text = _Reads(before + "Zappa played.")
    start = len(before)
    assert names_module._starts_sentence(text, start) is starts
    run = len(before.rstrip())
    assert text.read and min(text.read) >= run - 1


_SENTENCE_ALPHABET = st.sampled_from(list(".!?:;\n\"\u201c([ \t\r\u00a0\u2029\x0bxA,)'") + ["\n\n", "  "])


@settings(max_examples=400, deadline=None)
@given(st.lists(_SENTENCE_ALPHABET, max_size=30).map("".join), st.data())
def test_a_sentence_start_is_what_the_pattern_over_the_prefix_said(text, data):
    """The same answer as before the change: nothing but white space before the word, or one of
    ``.!?:;`` a line break, a quotation mark or an opening bracket, then white space."""
    import re

    old = re.compile(r"[.!?:;\n\"\u201c(\[]\s*$")
    start = data.draw(st.integers(0, len(text)))
    before = text[:start]
    assert names_module._starts_sentence(text, start) == (not before.strip() or bool(old.search(before)))


_ITEM_ALPHABET = st.sampled_from(["-", "*", "\u2022", "1.", "12)", "123.", "a)", "H.", "(i)", "(", ")", " ", "  ",
                                  "\t", "\n", "\r", "\u00a0", "\x0b", "x", "Yes", ".", "\u0663."])


@settings(max_examples=400, deadline=None)
@given(st.lists(_ITEM_ALPHABET, max_size=25).map("".join))
def test_list_items_are_read_in_one_pass_as_the_pattern_read_them(text):
    import re

    old = re.compile(r"^[ \t]*(?:[-*\u2022\u25aa\u2013]|\d{1,2}[.)]|[a-hA-H][.)]|\(\w\))[ \t]+(.+?)\s*$", re.M)
    from cleo_rules.listing import list_items

    assert list_items(text, 10 ** 6) == [(m.start(1), m.group(1)) for m in old.finditer(text)]


# -- the decision on a huge item is the decision on the item cut to the cap ---------------------------------------

SMALL_CAP = 300


@pytest.fixture(scope="module")
def small_cap_pack(tmp_path_factory):
    """The bundled pack reading 300 characters of each text, so that hypothesis can afford texts past the cap."""
    import shutil

    from cleo_rules.resources import rules_dir

    target = tmp_path_factory.mktemp("pack") / "pack"
    shutil.copytree(rules_dir(), target)
    manifest = target / "pack.yaml"
    text = manifest.read_text(encoding="utf-8")
    assert "max_scan_chars: 4000" in text
    manifest.write_text(text.replace("max_scan_chars: 4000", f"max_scan_chars: {SMALL_CAP}"), encoding="utf-8")
    pack = load_pack(target)
    assert pack.settings.max_scan_chars == SMALL_CAP
    return pack


WORDS = ["Zappa", "the Mothers of Invention", "Leeds", "Golden Wok", "the band", "They", "He", "it", "was",
         "formed", "in", "1964", "£45", "$30", "cheaper", '"Hot Rats"', "Brightline Commercial", "Zego Van",
         "Martin Hale", "and", "the", "album", "Yes", "is", "a", "restaurant", "bigger", "Scarva", "the address"]
SEPARATORS = [" ", " ", " ", ". ", ", ", "\n- ", "\n1. ", "\n2. ", ": ", "\n"]
texts = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), min_size=1, max_size=80).map(
    lambda pairs: "".join(w + s for w, s in pairs))


def _past_the_cap(head: str, tail: str) -> str:
    return (head * (2 * SMALL_CAP // len(head) + 2))[:SMALL_CAP + 37] + tail


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(head=texts, tail=texts, message=st.sampled_from(FOLLOW_UPS), parts=st.booleans())
def test_item1_a_reply_past_the_cap_decides_as_its_first_max_scan_chars(small_cap_pack, head, tail, message, parts):
    """An assistant reply longer than ``max_scan_chars`` gives the decision its first ``max_scan_chars``
    characters give: its referent, options, reply words and spans, all of it."""
    huge = _past_the_cap(head, tail)
    form = FORMS["parts" if parts else "assistant"]
    whole = small_cap_pack.classify(message, [QUESTION, form(huge)])
    cut = small_cap_pack.classify(message, [QUESTION, form(huge[:SMALL_CAP])])
    assert whole.to_dict() == cut.to_dict()


def _quoted(decision, item: str) -> dict:
    """``decision`` as a dict, the anchor (quoted whole in the query, never read past the cap) named ``<item>``."""
    d = decision.to_dict()
    if d["anchor"] == item:
        d["anchor"] = "<item>"
        d["query"] = "<item>" + d["query"][len(item):]
        for part in d["parts"]:
            if part["name"] == "anchor":
                part["text"], part["span"] = "<item>", None
    return d


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(head=texts, tail=texts, message=st.sampled_from(FOLLOW_UPS), tagged=st.booleans())
def test_item1_an_earlier_user_message_past_the_cap_decides_as_its_head(small_cap_pack, head, tail, message, tagged):
    """An earlier user message longer than ``max_scan_chars`` counts as its first ``max_scan_chars`` characters
    and the fact that it goes on (one more character says so): its kind, its names, its words. As the anchor
    of a follow-up it is quoted whole."""
    huge = _past_the_cap(head, tail)
    form = FORMS["user" if tagged else "string"]
    reply = {"role": "assistant", "content": "The band split up. Zappa went on alone."}
    whole = small_cap_pack.classify(message, [form(huge), reply])
    cut = small_cap_pack.classify(message, [form(huge[:SMALL_CAP + 1]), reply])
    assert _quoted(whole, huge) == _quoted(cut, huge[:SMALL_CAP + 1])


# -- the turns, recall and adapter paths in the library -----------------------------------------------------------


def test_item1_a_turn_reads_a_huge_history_as_classify_does(tmp_path):
    from helpers.embedders import ToyEmbedder

    from cleo_rules.retrieval import MemoryStore
    from cleo_rules.turn import Recall

    with MemoryStore.open(tmp_path / "memory", embedder=ToyEmbedder()) as store:
        store.add_document("zappa", "Zappa", "2024-01-01", "The Mothers of Invention broke up in 1969.")
        recall = Recall(store, PACK, k=1)
        out = []
        for huge in (HUGE, BAND * 45_000):
            fresh()
            with reading() as (sizes, touched):
                turn = recall.turn("When did they break up?", [QUESTION, {"role": "assistant", "content": huge}])
            assert touched == [] and max(sizes) <= CAP + 1
            out.append((sizes, turn.decision.to_dict()))
        assert out[0] == out[1]
        cut = PACK.classify("When did they break up?", [QUESTION, {"role": "assistant", "content": HUGE[:CAP]}])
        assert out[0][1] == cut.to_dict() and turn.results and turn.trace_id is not None


#: what the adapters ask of a message as a whole: whether it holds only white space (an AI message that only calls
#: tools is passed over), which stops at its first other character
ADAPTER_CHECKS = {"isspace"}


def test_item1_the_langchain_retriever_reads_a_huge_reply_no_further():
    from langchain_core.documents import Document
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.runnables import RunnableLambda

    from cleo_rules.integrations.langchain import CleoRulesRetriever

    asked: list[str] = []
    base = RunnableLambda(lambda q: asked.append(q) or [Document(page_content="The Mothers split in 1969.")])
    # the message limit raised, as the service's test raises it: the huge reply is read, not refused
    retriever = CleoRulesRetriever(base_retriever=base, pack=PACK, max_message_chars=2_000_000)
    seen = []
    for huge in (HUGE, BAND * 45_000, HUGE[:CAP]):
        fresh()
        with reading() as (sizes, touched):
            docs = retriever.invoke([HumanMessage(QUESTION), AIMessage(huge), HumanMessage("When did they break up?")])
        assert set(touched) <= ADAPTER_CHECKS and max(sizes) <= CAP + 1
        seen.append((sizes, docs[0].metadata["cleo_rules"]))
    assert seen[0] == seen[1] and seen[0][1] == seen[2][1]
    assert asked[0] == asked[1] == asked[2] == seen[0][1]["query"]


def test_item1_the_llama_index_retriever_reads_a_huge_reply_no_further():
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, TextNode

    from cleo_rules.integrations.llama_index import CleoRulesRetriever

    class Base(BaseRetriever):
        def __init__(self):
            super().__init__()
            self.asked = []

        def _retrieve(self, query_bundle):
            self.asked.append(query_bundle.query_str)
            return [NodeWithScore(node=TextNode(text="The Mothers split in 1969."), score=1.0)]

    base = Base()
    retriever = CleoRulesRetriever(base, PACK, max_message_chars=2_000_000)  # the limit raised, as above
    seen = []
    for huge in (HUGE, BAND * 45_000, HUGE[:CAP]):
        fresh()
        with reading() as (sizes, touched):
            nodes = retriever.retrieve_chat([ChatMessage(role="user", content=QUESTION),
                                             ChatMessage(role="assistant", content=huge),
                                             ChatMessage(role="user", content="When did they break up?")])
        assert set(touched) <= ADAPTER_CHECKS and max(sizes) <= CAP + 1
        seen.append((sizes, nodes[0].node.metadata["cleo_rules"]))
    assert seen[0] == seen[1] and seen[0][1] == seen[2][1]
    assert base.asked[0] == base.asked[1] == base.asked[2] == seen[0][1]["query"]


# -- item 4 at the library level: the service's request reader ----------------------------------------------------

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                        max_size=3), max_leaves=8)


def _field(path) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else step)
    return out


def _plant(value, draw, path=()):
    """``(value with one string or key holding a lone surrogate, the field that names it, its kind)``."""
    if isinstance(value, list) and value and draw(st.booleans()):
        n = draw(st.integers(0, len(value) - 1))
        inner, where, what = _plant(value[n], draw, (*path, n))
        return [*value[:n], inner, *value[n + 1:]], where, what
    if isinstance(value, dict) and value and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(value)))
        if draw(st.booleans()):
            return {(k + "\udc80" if k == key else k): v for k, v in value.items()}, _field(path), "field name"
        inner, where, what = _plant(value[key], draw, (*path, key))
        return {**value, key: inner}, where, what
    text = value if isinstance(value, str) else ""
    return text[:2] + "\ud83d" + text[2:], _field(path), "string"


@settings(max_examples=300, deadline=None)
@given(json_values, st.data())
def test_item4_a_lone_surrogate_anywhere_is_refused_naming_its_field(value, data):
    from cleo_rules.serve.problems import ServiceError
    from cleo_rules.serve.body import check_unicode

    check_unicode(value)  # no surrogate: nothing to say
    planted, field, what = _plant(value, data.draw)
    with pytest.raises(ServiceError) as caught:
        check_unicode(planted, "")
    error = caught.value
    body = error.body()
    assert error.status == 400 and body["code"] == "E319" and body.get("field", "") == field
    assert body["detail"].startswith(f"{what} at {field or 'the top of the body'} holds a lone surrogate (U+")
    json.dumps(body, ensure_ascii=False).encode("utf-8")  # the problem itself is Unicode


# -- the real service -------------------------------------------------------------------------------------------

GATE = '''
import os, sys, time
from cleo_rules.pack import model
real = model.Pack.classify
gate = sys.argv.pop(1)


def classify(self, message, history=()):
    if isinstance(message, str) and message.startswith("GATE"):
        open(os.path.join(gate, "entered"), "w").close()
        deadline = time.monotonic() + 120
        while not os.path.exists(os.path.join(gate, "release")) and time.monotonic() < deadline:
            time.sleep(0.01)
    return real(self, message, history)


model.Pack.classify = classify
from cleo_rules.cli import main
sys.argv[0] = "cleo-rules"
main(sys.argv[1:])
'''
MIB = 1 << 20
ISSUE_ITEM = BAND * 45_000  # 1,035,000 characters: the ~1 MB body of the issue, under --max-body-bytes


class GatedService(Service):
    """``cleo-rules serve ARGS`` as :class:`service.Service` runs it, with one hook for the tests: a message
    starting "GATE" waits in ``Pack.classify`` until :meth:`release`, so a test knows a request is in flight
    there. (The hook is set by the script that starts the command, in the served process only.)"""

    def __init__(self, root: Path, *args):
        from helpers.service import ROOT, free_port

        self.gate = root / "gate"
        self.gate.mkdir()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = root / "service.log"
        self.statuses: list[int] = []
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, "-c", GATE, str(self.gate), "serve", "--port", str(self.port),
                                      *map(str, args)], stdout=self._log, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
        self.pid = self.proc.pid

    def wait_entered(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not (self.gate / "entered").exists():
            assert time.monotonic() < deadline, "the gated request never reached the classifier"
            time.sleep(0.01)

    def release(self) -> None:
        (self.gate / "release").touch()


def _huge_service(root: Path) -> GatedService:
    """No memory; messages and history items up to 1 MiB, so the largest history is one item as big as a body."""
    return GatedService(root, "--max-message-chars", MIB)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    svc = _huge_service(tmp_path_factory.mktemp("big"))
    try:
        svc.wait_ready(60)
        yield svc
    finally:
        svc.release()
        svc.stop()


def test_item1_healthz_answers_while_a_huge_history_is_classified(big):
    svc = gate = big
    history = [QUESTION, {"role": "assistant", "content": ISSUE_ITEM}]
    body = json.dumps({"message": "GATE: when did they break up?", "history": history}).encode()
    assert len(body) < MIB
    answer = {}

    def send():
        answer["r"] = httpx.post(svc.url + "/v1/classify", content=body, headers=JSON, timeout=120)

    sender = threading.Thread(target=send)
    sender.start()
    try:
        gate.wait_entered()
        # the huge request is inside the classifier now: everything else is still answered
        assert httpx.get(svc.url + "/healthz", timeout=5).json() == {"status": "ok"}
        assert httpx.get(svc.url + "/metrics", timeout=5).status_code == 200
        small = httpx.post(svc.url + "/v1/classify", json={"message": "Tell me more.", "history": [QUESTION]},
                           timeout=5)
        assert small.json() == record(PACK.classify("Tell me more.", [QUESTION]))
    finally:
        gate.release()
        sender.join(120)
    r = answer["r"]
    assert r.status_code == 200, r.text[:300]
    assert r.json() == record(PACK.classify("GATE: when did they break up?", headed(history)))


def test_item1_four_clients_sending_the_largest_histories_leave_healthz_answering(big):
    """Four clients each send a body as large as the limit allows, one history item of a million characters,
    twice; meanwhile every ``/healthz`` is answered (each within 10 s), and every request gets its decision."""
    svc = big
    message = "When did they break up?"
    history = [QUESTION, {"role": "assistant", "content": ISSUE_ITEM}]
    body = json.dumps({"message": message, "history": history}).encode()
    expected = record(PACK.classify(message, headed(history)))
    answers: list = []

    def client():
        with httpx.Client(base_url=svc.url, timeout=60) as c:
            for _ in range(2):
                try:
                    r = c.post("/v1/classify", content=body, headers=JSON)
                    answers.append((r.status_code, r.json()))
                except httpx.HTTPError as exc:
                    answers.append((0, repr(exc)))

    clients = [threading.Thread(target=client, daemon=True) for _ in range(4)]
    for t in clients:
        t.start()
    health: list = []
    deadline = time.monotonic() + 120
    with httpx.Client(base_url=svc.url, timeout=10) as c:
        while (any(t.is_alive() for t in clients) or not health) and time.monotonic() < deadline:
            try:
                health.append(c.get("/healthz").status_code)
            except httpx.HTTPError as exc:
                health.append(repr(exc))
            time.sleep(0.02)
    assert health and set(health) == {200}
    assert answers == [(200, expected)] * 8


def test_item1_a_batch_of_huge_histories_is_answered(big):
    svc = big
    items = [{"message": m, "history": [QUESTION, {"role": "assistant", "content": HUGE}]} for m in FOLLOW_UPS[:5]]
    r = httpx.post(svc.url + "/v1/classify/batch", json={"items": items}, timeout=60)
    assert r.status_code == 200, r.text[:300]
    assert r.json()["results"] == [record(PACK.classify(i["message"], headed(i["history"]))) for i in items]


def test_item1_sigterm_stops_the_service_while_a_huge_history_is_in_flight(tmp_path):
    svc = gate = _huge_service(tmp_path)
    sender = None
    answer = {}
    try:
        svc.wait_ready(60)
        history = [QUESTION, {"role": "assistant", "content": ISSUE_ITEM}]
        body = json.dumps({"message": "GATE: tell me more.", "history": history}).encode()

        def send():
            answer["r"] = httpx.post(svc.url + "/v1/classify", content=body, headers=JSON, timeout=120)

        sender = threading.Thread(target=send)
        sender.start()
        gate.wait_entered()
        svc.signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        refused = False
        while not refused and time.monotonic() < deadline:  # the listening socket closes at once
            try:
                httpx.get(svc.url + "/healthz", timeout=1)
                time.sleep(0.05)
            except httpx.ConnectError:
                refused = True
            except httpx.TimeoutException:
                pass
        assert refused, "the service still took connections 10 s after SIGTERM"
        gate.release()
        sender.join(60)
        assert answer["r"].status_code == 200  # the request in flight was finished, not dropped
        assert answer["r"].json() == record(PACK.classify("GATE: tell me more.", headed(history)))
        assert svc.wait_exit(30) in (0, -signal.SIGTERM)
    finally:
        gate.release()
        if sender is not None:
            sender.join(60)
        svc.stop()


LIMITS = {"max_message_chars": 200, "max_history": 4, "max_batch": 5, "max_body_bytes": 4096}


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    args = [x for name, value in LIMITS.items() for x in (f"--{name.replace('_', '-')}", value)]
    svc = Service(*args, log_path=tmp_path_factory.mktemp("small") / "service.log")
    try:
        svc.wait_ready(60)
        with svc.client() as client:
            yield client
    finally:
        svc.stop()


@pytest.mark.parametrize("item, field", [
    ({"role": "assistant", "content": "x" * 201}, "history[1].content"),
    ({"role": "user", "content": "x" * 201}, "history[1].content"),
    ({"role": "assistant", "content": [{"type": "text", "text": "x" * 150}, "y" * 51]}, "history[1].content"),
    ({"role": "system", "content": "x" * 201}, "history[1].content"),
])
def test_item1_a_role_tagged_item_has_the_history_strings_limit(small, item, field):
    body = {"message": "Tell me more.", "history": [QUESTION, item]}
    problem(post(small, "/v1/classify", body), 400, "invalid-request", field)
    assert post(small, "/v1/classify", {**body, "history": [QUESTION, "x" * 201]}).status_code == 400
    batch = post(small, "/v1/classify/batch", {"items": [{"message": "Tell me more."}, body]}).json()["results"]
    assert "error" not in batch[0] and batch[1]["error"]["field"] == f"items[1].{field}"
    regression = post(small, "/v1/pack/regressions", {**body, "expect": "follow_up"})
    problem(regression, 400, "invalid-request", field)


def test_a_role_tagged_item_at_the_limit_is_classified(small):
    history = [QUESTION, {"role": "assistant", "content": [{"type": "text", "text": "Zappa " * 20}, "x" * 80]}]
    r = post(small, "/v1/classify", {"message": "Tell me more.", "history": history})
    assert r.status_code == 200 and r.json() == record(PACK.classify("Tell me more.", history))


SURROGATE_BODIES = [
    ('{"message": "Yes, go with the \\ud800 second one.", "history": []}', "message", "string"),
    ('{"message": "Tell me more.", "history": ["Which van? \\udfff"]}', "history[0]", "string"),
    ('{"message": "Tell me more.", "history": [{"role": "assistant", "content": "Zego \\ud83d"}]}',
     "history[0].content", "string"),
    ('{"message": "Tell me more.", "history": [{"role": "assistant", "content": [{"type": "text", '
     '"text": "\\udc00"}]}]}', "history[0].content[0].text", "string"),
    ('{"message": "Tell me more.", "\\ud800": 1}', None, "field name"),
    ('{"message": "Tell me more.", "history": [{"role": "assistant", "content": "ok", "n\\udc80": 1}]}',
     "history[0]", "field name"),
]


@pytest.mark.parametrize("raw, field, what", SURROGATE_BODIES)
def test_item4_a_lone_surrogate_in_a_classify_body_is_a_400(small, raw, field, what):
    r = small.post("/v1/classify", content=raw.encode("ascii"), headers=JSON)
    body = problem(r, 400, "invalid-request", field)
    assert body["code"] == "E319" and body["detail"].startswith(f"{what} at ")
    assert "lone surrogate" in body["detail"]


def test_item4_a_batch_item_holding_a_lone_surrogate_fails_alone(small):
    raw = ('{"items": [{"message": "Yes, go with the second one.", "history": ["Compare the two van quotes"]}, '
           '{"message": "Tell me \\ud800 more.", "history": ["Compare the two van quotes"]}, '
           '{"message": "ok", "history": [{"role": "assistant", "content": "fine", "\\udfff": 2}]}, '
           '{"message": "We tried that one already."}]}')
    r = small.post("/v1/classify/batch", content=raw.encode("ascii"), headers=JSON)
    assert r.status_code == 200, r.text[:300]
    results = json.loads(r.content.decode("utf-8"))["results"]
    assert results[0] == record(PACK.classify("Yes, go with the second one.", ["Compare the two van quotes"]))
    assert results[3] == record(PACK.classify("We tried that one already."))
    for n, field in ((1, "items[1].message"), (2, "items[2].history[0]")):
        error = results[n]["error"]
        assert error["status"] == 400 and error["code"] == "E319" and error["field"] == field
    problem(small.post("/v1/classify/batch", content=b'{"items": [], "\\ud800": 1}', headers=JSON), 400,
            "invalid-request")


def test_item4_a_lone_surrogate_in_a_regression_is_a_400(small):
    for raw, field in (('{"message": "Tell me more.", "expect": "follow_up", "history": ["x\\ud800"]}', "history[0]"),
                       ('{"message": "Tell me more.", "expect": "follow_up", "wr\\ud800ite": true}', None)):
        body = problem(small.post("/v1/pack/regressions", content=raw.encode("ascii"), headers=JSON), 400,
                       "invalid-request", field)
        assert body["code"] == "E319"


# -- turns and recall: the service with memory ------------------------------------------------------------------


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    base = tmp_path_factory.mktemp("memory-service")
    svc = Service("--memory", base / "memory", "--max-message-chars", 100_000, log_path=base / "service.log")
    try:
        svc.wait_ready(180)
        r = httpx.post(svc.url + "/v1/tenants/acme/memory", content=(data_dir() / "sample_memory.jsonl").read_bytes(),
                       headers={"Content-Type": "application/x-ndjson"}, timeout=120)
        assert r.status_code == 200, r.text
        yield svc, base / "memory" / "acme" / "memory.db"
    finally:
        svc.stop()


def _traces(db: Path) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        if not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'traces'").fetchone():
            return 0
        return con.execute("SELECT count(*) FROM traces").fetchone()[0]


@pytest.mark.model
def test_item1_turns_and_recall_with_a_huge_history_are_answered(memory):
    svc, db = memory
    history = [QUESTION, {"role": "assistant", "content": HUGE}]
    expected = PACK.classify("When did they break up?", headed(history))
    with svc.client(timeout=60) as c:
        turn = post(c, "/v1/tenants/acme/turns", {"message": "When did they break up?", "history": history})
        assert turn.status_code == 200, turn.text[:300]
        assert (turn.json()["kind"], turn.json()["query"]) == (expected.kind, expected.query)
        recall = post(c, "/v1/tenants/acme/recall", {"message": "When did they break up?", "history": history})
        assert recall.status_code == 200, recall.text[:300]
        assert recall.json()["decision"] == record(expected)
        over = [QUESTION, {"role": "assistant", "content": "x" * 100_001}]
        before = _traces(db)
        problem(post(c, "/v1/tenants/acme/turns", {"message": "Tell me more.", "history": over}), 400,
                "invalid-request", "history[1].content")
        problem(post(c, "/v1/tenants/acme/recall", {"message": "Tell me more.", "history": over}), 400,
                "invalid-request", "history[1].content")
        assert _traces(db) == before


@pytest.mark.model
@pytest.mark.parametrize("raw, field", [
    ('{"message": "Which boiler plan did we choose? \\ud800"}', "message"),
    ('{"message": "Tell me more.", "history": [{"role": "assistant", "content": "Zego \\udc00"}]}',
     "history[0].content"),
    ('{"message": "Tell me more.", "k": 3, "\\udfff": 1}', None),
])
def test_item4_a_refused_turn_writes_no_trace_and_a_retry_none_either(memory, raw, field):
    svc, db = memory
    before = _traces(db)
    with svc.client(timeout=60) as c:
        for _ in range(2):  # a client retrying the refused turn
            body = problem(c.post("/v1/tenants/acme/turns", content=raw.encode("ascii"), headers=JSON), 400,
                           "invalid-request", field)
            assert body["code"] == "E319"
        assert _traces(db) == before
        body = problem(c.post("/v1/tenants/acme/recall", content=raw.encode("ascii"), headers=JSON), 400,
                       "invalid-request", field)
        assert body["code"] == "E319"
        ok = post(c, "/v1/tenants/acme/turns", {"message": "Which boiler service plan did we choose?"})
        assert ok.status_code == 200 and _traces(db) == before + 1
