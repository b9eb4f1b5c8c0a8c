"""Hostile clients of the service itself: metrics, slow and large bodies, a store failing or stopping mid-ingest,
paths in /readyz, keys read again, a PostgreSQL schema that is not the tenant's own.

Item 5: invented methods and paths no longer add series to ``/metrics``
(a method is one of the known ones or ``other``, a path its route's template
or ``unmatched``).

Item 6: a client has ``--read-timeout`` seconds to send a request's headers
and again its body (408 problem+json, the connection closed; headers cut off
with the connection); all bodies being read hold at most
``--max-body-bytes-in-flight`` bytes (503 with Retry-After, before reading
when the Content-Length says so); an answer given before the body is read
closes the connection.

Item 8: an ingest whose database fails part way is a 503 with Retry-After
that says which lines of the body are stored.

Item 9: on SIGTERM, an ingest that can finish is answered 200, one still
running at half of ``--drain-timeout`` stops after its batch and is answered
503 saying which lines are stored, a request still running at the end is
answered a 503 problem, and the process exits within the drain time.

Item 11: ``/readyz`` shows the server's paths only without keys or to a key
for every tenant; the key file is read again when it changes and on SIGHUP,
and a bad one keeps the keys read before.

A tenant whose PostgreSQL schema records another tenant (E308) gets a 409
``tenant-schema-conflict`` problem that tells it an operator must resolve it.

The services are started for real on loopback (``tests/service.py``) and
stopped by their pid; those with memory embed with the toy embedder, through a
hook that can also hold an embedding or a classification until the test
releases it (:class:`HookedService`).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cleo_rules.serve.keys import KeyRing, hash_key
from hostile import TOY_EMBEDDER
from service import ROOT, Service, free_port, metric

JSON = {"Content-Type": "application/json"}
NDJSON = {"Content-Type": "application/x-ndjson"}
MIB = 1 << 20

HOOK = TOY_EMBEDDER + r'''
import os, sys, time

gate = sys.argv.pop(1)
slow = float(os.environ.get("CLEO_TEST_SLOW_ENCODE", "0"))


def held(marker):
    """Say that ``marker`` is held, then wait until the test releases it (two minutes at most)."""
    open(os.path.join(gate, marker + ".entered"), "w").close()
    deadline = time.monotonic() + 120
    while not os.path.exists(os.path.join(gate, marker + ".release")) and time.monotonic() < deadline:
        time.sleep(0.01)


class Hooked(Toy):
    def encode(self, texts):
        for marker in ("HOLD", "GATE"):
            if any(marker in text for text in texts):
                held(marker)
        if slow and len(texts) > 1:  # an ingest's batch, not a turn's query
            time.sleep(slow)
        return super().encode(texts)


from cleo_rules.retrieval import embed
embed.Embedder = lambda model=None, **kwargs: Hooked()

from cleo_rules.pack import model
real = model.Pack.classify


def classify(self, message, history=()):
    if isinstance(message, str) and message.startswith("STALL"):
        held("STALL")
    return real(self, message, history)


model.Pack.classify = classify
from cleo_rules.cli import main
sys.argv[0] = "cleo-rules"
main(sys.argv[1:])
'''


class HookedService(Service):
    """``cleo-rules serve ARGS`` as :class:`service.Service` runs it, with the toy embedder and three hooks: an
    embedding of a text holding HOLD or GATE, and a classification of a message starting with STALL, wait
    until :meth:`release` (``entered`` says one is waiting); ``slow`` seconds are slept per ingest batch."""

    def __init__(self, root: Path, *args, slow: float = 0.0):
        self.gate = root / "gate"
        self.gate.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = root / "service.log"
        self.statuses: list[int] = []
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT),
               "CLEO_TEST_SLOW_ENCODE": str(slow)}
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, "-c", HOOK, str(self.gate), "serve", "--port", str(self.port),
                                      *map(str, args)], stdout=self._log, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
        self.pid = self.proc.pid

    def entered(self, marker: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not (self.gate / f"{marker}.entered").exists():
            assert time.monotonic() < deadline, f"nothing reached the {marker} hook:\n{self.log}"
            assert self.proc.poll() is None, self.log
            time.sleep(0.01)

    def release(self, marker: str) -> None:
        (self.gate / f"{marker}.release").touch()

    def stop(self) -> None:
        for marker in ("HOLD", "GATE", "STALL"):
            self.release(marker)
        super().stop()


def problem(r, status: int, name: str) -> dict:
    assert r.status_code == status, r.text[:500]
    assert r.headers["content-type"] == "application/problem+json", r.headers
    body = r.json()
    assert body["type"] == f"/problems/{name}" and body["status"] == status and body["detail"], body
    return body


def doc(i: int, text: str | None = None) -> str:
    return json.dumps({"type": "document", "id": f"note-{i:04d}", "title": f"Site note {i}", "date": "2024-07-01",
                       "text": text or f"Site note {i}: fitted a valve in room {i % 7} on job {i}."}) + "\n"


def body_of(lines: range, marked: dict | None = None) -> bytes:
    marked = marked or {}
    return "".join(doc(i, marked.get(i)) for i in lines).encode()


def scrape(svc) -> str:
    return httpx.get(svc.url + "/metrics", timeout=10).text


# -- raw HTTP over a socket, for what a client library will not send -----------------------------------------


def connect(svc, timeout: float = 30.0) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", svc.port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def head(svc, method: str, path: str, **headers) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{svc.port}"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class Answer:
    """One HTTP response read from a socket: status, headers, body, and whether the server closed after it."""

    def __init__(self, status: int, headers: dict, body: bytes, closed: bool, at: float):
        self.status, self.headers, self.body, self.closed, self.at = status, headers, body, closed, at

    def json(self):
        return json.loads(self.body)


def read_answer(sock: socket.socket, timeout: float) -> Answer | None:
    """The response on ``sock`` within ``timeout`` seconds (None: none came), and whether the connection then
    closed (within a second)."""
    deadline = time.monotonic() + timeout
    data = b""
    while b"\r\n\r\n" not in data:
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            chunk = sock.recv(65536)
        except (TimeoutError, socket.timeout):
            return None
        if not chunk:
            return None
        data += chunk
    at = time.monotonic()
    top, _, rest = data.partition(b"\r\n\r\n")
    status_line, *header_lines = top.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in header_lines)}
    length = int(headers.get("content-length", "0"))
    sock.settimeout(5)
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    sock.settimeout(1)
    try:
        closed = sock.recv(1) == b""
    except (TimeoutError, socket.timeout):
        closed = False
    except ConnectionResetError:
        closed = True
    return Answer(int(status_line.split()[1]), headers, rest[:length], closed, at)


# -- item 5: /metrics stays bounded ----------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40), st.sampled_from(["/v1/classify", "unmatched", "/v1/tenants/{tenant}/turns"]),
       st.integers(100, 599))
def test_item5_any_method_is_counted_under_a_known_name_or_other(method, endpoint, status):
    from cleo_rules.serve.metrics import METHODS, Metrics

    metrics = Metrics(lambda: {})
    metrics.request(endpoint, method, status, 0.001)
    metrics.request(endpoint, "GET", status, 0.001)
    (family,) = [f for f in metrics.registry.collect() if f.name == "cleo_http_requests"]
    labels = {s.labels["method"] for s in family.samples if s.name.endswith("_total")}
    assert labels <= METHODS | {"other"}
    assert ("other" in labels) == (method not in METHODS)


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """A service without memory or keys."""
    svc = Service("--watch-interval", 0, log_path=tmp_path_factory.mktemp("plain") / "service.log")
    try:
        svc.wait_ready(60)
        yield svc
    finally:
        svc.stop()


def _series(text: str, name: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        if line.startswith(name + "{"):
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', line[len(name):line.rindex("}")]))
            out.append(labels)
    return out


def test_item5_thousands_of_invented_methods_and_paths_leave_the_series_bounded(plain):
    from starlette.routing import Route

    from cleo_rules.serve.endpoints import ROUTES

    before = _series(scrape(plain), "cleo_http_requests_total")
    sent = 0
    with plain.client(timeout=10) as client:
        for i in range(1500):
            method = f"X{i:04d}QZ"
            client.request(method, "/v1/classify" if i % 2 else f"/invented/{i}/path")
            client.get(f"/nothing/here/{i}?q={i}")
            sent += 2
    text = scrape(plain)
    series = _series(text, "cleo_http_requests_total")
    templates = {r.path for r in ROUTES if isinstance(r, Route)} | {"unmatched"}
    assert {s["method"] for s in series} <= {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "other"}
    assert {s["endpoint"] for s in series} <= templates
    assert len(series) - len(before) <= 4, series  # other on the route (405) and unmatched (404), GET unmatched
    counted = sum(metric(text, "cleo_http_requests_total", **s) for s in series if s not in before)
    assert counted >= sent
    assert metric(text, "cleo_http_requests_total", endpoint="/v1/classify", method="other", status="405") == 750
    assert len(text) < 64_000 and "X0001QZ" not in text and "/invented/" not in text


# -- item 6: slow and large bodies -------------------------------------------------------------------------------

READ_TIMEOUT = 2.0


@pytest.fixture(scope="module")
def strict(tmp_path_factory):
    """A service giving clients READ_TIMEOUT seconds for headers and for a body."""
    svc = Service("--watch-interval", 0, "--read-timeout", READ_TIMEOUT,
                  log_path=tmp_path_factory.mktemp("strict") / "service.log")
    try:
        svc.wait_ready(60)
        yield svc
    finally:
        svc.stop()


def _drip(sock: socket.socket, data: bytes, every: float, stop: threading.Event) -> None:
    """Send ``data`` one byte every ``every`` seconds until it is sent, the server closes, or ``stop``."""
    for byte in data:
        if stop.wait(every):
            return
        try:
            sock.send(bytes([byte]))
        except OSError:
            return


def test_item6_slow_loris_bodies_are_answered_408_at_the_read_timeout(strict):
    svc, stop, socks, drips = strict, threading.Event(), [], []
    body = json.dumps({"message": "Tell me more about the second option, the cheaper one."}).encode()
    try:
        start = time.monotonic()
        for _ in range(40):
            sock = connect(svc)
            sock.sendall(head(svc, "POST", "/v1/classify", Content_Type="application/json",
                              Content_Length=len(body)) + body[:3])
            socks.append(sock)
            drips.append(threading.Thread(target=_drip, args=(sock, body[3:], 0.5, stop), daemon=True))
            drips[-1].start()
        # the service answers everyone else meanwhile
        for _ in range(3):
            t = time.monotonic()
            assert httpx.get(svc.url + "/healthz", timeout=5).status_code == 200
            assert time.monotonic() - t < 1.0
        answers = [read_answer(sock, READ_TIMEOUT + 8) for sock in socks]
    finally:
        stop.set()
        for sock in socks:
            sock.close()
    assert all(a is not None for a in answers), "every slow body is answered"
    for a in answers:
        assert a is not None and a.status == 408 and a.headers["content-type"] == "application/problem+json"
        assert a.json()["type"] == "/problems/request-timeout" and a.closed
        assert READ_TIMEOUT - 0.2 <= a.at - start <= READ_TIMEOUT + 5
    assert metric(scrape(svc), "cleo_request_body_bytes_in_flight") == 0


def test_item6_slow_headers_and_idle_connections_are_closed_at_the_read_timeout(strict):
    svc, stop, drips = strict, threading.Event(), []
    request = head(svc, "GET", "/healthz", User_Agent="slow-headers/1.0")
    before = metric(scrape(svc), "cleo_request_read_timeouts_total")
    idle = [connect(svc) for _ in range(10)]
    slow = [connect(svc) for _ in range(20)]
    reused = connect(svc)  # a first request answered, then the next one's headers dripped
    try:
        reused.sendall(request)
        first = read_answer(reused, 5)
        assert first is not None and first.status == 200 and not first.closed
        start = time.monotonic()
        for sock in [*slow, reused]:
            drips.append(threading.Thread(target=_drip, args=(sock, request, 0.4, stop), daemon=True))
            drips[-1].start()
        answers = [read_answer(sock, READ_TIMEOUT + 8) for sock in [*slow, reused]]
        ends = []
        for sock in idle:  # nothing sent at all: closed, without a word
            sock.settimeout(READ_TIMEOUT + 8)
            assert sock.recv(1) == b""
            ends.append(time.monotonic())
    finally:
        stop.set()
        for sock in [*idle, *slow, reused]:
            sock.close()
    for a in answers:
        assert a is not None and a.status == 408 and a.closed
        assert a.headers["content-type"] == "application/problem+json" and a.json()["status"] == 408
        assert a.at - start <= READ_TIMEOUT + 5
    assert all(end - start <= READ_TIMEOUT + 5 for end in ends)
    assert metric(scrape(svc), "cleo_request_read_timeouts_total") - before == len(answers) + len(idle)


def test_item6_an_answer_before_the_body_is_read_closes_the_connection(strict):
    """A request answered without its body being read (no such path, a refused body) does not keep the
    connection open for the rest of the body."""
    svc = strict
    for method, path, headers in [("POST", "/nowhere", {"Content_Type": "application/json"}),
                                  ("POST", "/v1/classify", {"Content_Type": "text/plain"}),
                                  ("POST", "/v1/classify", {"Content_Type": "application/json",
                                                            "Content_Length": 2 * MIB})]:
        sock = connect(svc)
        try:
            sock.sendall(head(svc, method, path, **{"Content_Length": 1000, **headers}) + b"{")
            answer = read_answer(sock, 5)
        finally:
            sock.close()
        assert answer is not None and answer.status in (404, 413, 415) and answer.closed, (path, headers)
        assert answer.headers["connection"] == "close"


@pytest.fixture
def budgeted(tmp_path):
    """A service holding at most 3 bodies of 8 MiB at once."""
    svc = Service("--watch-interval", 0, "--max-body-bytes", 8 * MIB, "--max-body-bytes-in-flight", 24 * MIB,
                  "--read-timeout", 10, log_path=tmp_path / "service.log")
    try:
        svc.wait_ready(60)
        yield svc
    finally:
        svc.stop()


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_item6_large_bodies_with_the_last_byte_withheld_are_not_all_buffered(budgeted):
    svc, size = budgeted, 8 * MIB
    payload = b'{"message": "' + b"a" * (size - 16) + b'"}'
    payload += b" " * (size - len(payload))
    rss_before = _rss(svc.pid)
    held, refused = [], []
    try:
        for n in range(12):
            sock = connect(svc)
            sock.sendall(head(svc, "POST", "/v1/classify", Content_Type="application/json", Content_Length=size))
            if n >= 3:  # the budget is full: refused on its headers, before a byte of the body is read
                refused.append(read_answer(sock, 10))
                sock.close()
                continue
            assert read_answer(sock, 0.3) is None  # taken: the service waits for the body
            sock.sendall(payload[:-1])  # all but the last byte
            held.append(sock)
            deadline = time.monotonic() + 20
            while metric(scrape(svc), "cleo_request_body_bytes_in_flight") < len(held) * (size - 1):
                assert time.monotonic() < deadline, "the service did not read the body it took"
                time.sleep(0.02)
        chunked = connect(svc)  # a body in chunks is refused at the chunk that would go over
        chunked.sendall(head(svc, "POST", "/v1/classify", Content_Type="application/json",
                             Transfer_Encoding="chunked") + b"10000\r\n" + b" " * 0x10000 + b"\r\n")
        late_chunk = read_answer(chunked, 5)
        chunked.close()
        text = scrape(svc)
        rss_peak = _rss(svc.pid)
        timed_out = [read_answer(sock, 15) for sock in held]
    finally:
        for sock in held:
            sock.close()
    assert len(held) == 3 and len(refused) == 9  # 24 MiB: three bodies of 8 MiB, the nine others never read
    for a in [*refused, late_chunk]:  # each a problem, with Retry-After, and the connection closed
        assert a is not None and a.status == 503 and a.closed and a.headers["retry-after"] == "1"
        assert a.json()["type"] == "/problems/server-busy"
    assert metric(text, "cleo_request_body_bytes_in_flight") == 3 * (size - 1)
    assert metric(text, "cleo_request_bodies_refused_total") == 10
    assert rss_peak - rss_before < 24 * MIB + 24 * MIB, (rss_before, rss_peak)  # 12 bodies would be 96 MiB
    for a in timed_out:  # the bodies never finished: 408 at the read timeout, and the budget is free again
        assert a is not None and a.status == 408 and a.json()["type"] == "/problems/request-timeout"
    assert metric(scrape(svc), "cleo_request_body_bytes_in_flight") == 0
    r = httpx.post(svc.url + "/v1/classify", content=json.dumps({"message": "Tell me more."}), headers=JSON)
    assert r.status_code == 200 and r.json()["kind"] == "follow_up"


def test_item6_the_read_settings_are_checked_and_shown():
    from cleo_rules.serve.settings import DEFAULTS, ServeSettings

    assert DEFAULTS["read_timeout"] == 30.0 and DEFAULTS["max_body_bytes_in_flight"] == 128 * MIB
    with pytest.raises(ValueError, match="must hold one body of the largest size allowed"):
        ServeSettings(memory="/srv/memory", max_ingest_bytes=64 * MIB, max_body_bytes_in_flight=32 * MIB)
    with pytest.raises(ValueError, match="must hold one body of the largest size allowed"):
        ServeSettings(max_body_bytes=8 * MIB, max_body_bytes_in_flight=4 * MIB)
    assert ServeSettings(max_body_bytes_in_flight=2 * MIB).max_ingest_bytes == 32 * MIB  # no memory: no ingest
    with pytest.raises(ValueError, match="read_timeout must be a positive number"):
        ServeSettings(read_timeout=0)
    done = subprocess.run([sys.executable, "-m", "cleo_rules", "serve", "--help"], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    out = " ".join(done.stdout.split())
    assert "--read-timeout" in out and "--max-body-bytes-in-flight" in out and "[default: 134217728; x>=1]" in out


# -- item 8: a store failing mid-ingest says which lines are stored --------------------------------------------


def _documents(db: Path) -> list[str]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as con:
        return [row[0] for row in con.execute("SELECT id FROM documents ORDER BY id")]


def test_item8_a_busy_database_mid_ingest_is_a_503_saying_which_lines_are_stored(tmp_path):
    """The batch of lines 33-64 is held while another process takes the tenant's database; its write then
    fails busy (E302): lines 1-32 are stored, and the client is told so."""
    root = tmp_path / "memory"
    svc = HookedService(tmp_path, "--memory", root, "--watch-interval", 0, "--request-timeout", 60)
    answer = {}
    try:
        svc.wait_ready(60)
        body = body_of(range(100), {32: "GATE: the second batch waits here"})
        sender = threading.Thread(target=lambda: answer.update(r=httpx.post(
            svc.url + "/v1/tenants/site/memory", content=body, headers=NDJSON, timeout=120)))
        sender.start()
        svc.entered("GATE")
        other = sqlite3.connect(root / "site" / "memory.db", timeout=5)
        other.execute("BEGIN EXCLUSIVE")  # another process holds the database now
        svc.release("GATE")
        sender.join(60)
        other.rollback()
        other.close()
        r = answer["r"]
        found = problem(r, 503, "not-ready")
        assert r.headers["retry-after"] == "1" and found["code"] == "E302"
        assert (found["stored_lines"], found["first_unstored_line"]) == (32, 33)
        assert "lines 1-32 of the body are stored" in found["detail"] and "from line 33" in found["detail"]
        assert str(root) not in r.text
        assert _documents(root / "site" / "memory.db") == [f"note-{i:04d}" for i in range(32)]
        rest = b"".join(body.splitlines(keepends=True)[found["first_unstored_line"] - 1:])
        r = httpx.post(svc.url + "/v1/tenants/site/memory", content=rest, headers=NDJSON, timeout=60)
        assert r.status_code == 200 and r.json()["added"] == 68, r.text
        assert len(_documents(root / "site" / "memory.db")) == 100
    finally:
        svc.stop()


def test_item8_a_store_error_mid_ingest_that_is_not_transient_still_says_which_lines_are_stored(tmp_path):
    """A write that fails for another reason (a trigger refuses the next batch's rows while it waits) is a 500
    problem, with the request id and the lines stored."""
    root = tmp_path / "memory"
    svc = HookedService(tmp_path, "--memory", root, "--watch-interval", 0, "--request-timeout", 60)
    answer = {}
    try:
        svc.wait_ready(60)
        body = body_of(range(100), {32: "GATE: the second batch waits here"})
        sender = threading.Thread(target=lambda: answer.update(r=httpx.post(
            svc.url + "/v1/tenants/site/memory", content=body, headers=NDJSON, timeout=120)))
        sender.start()
        svc.entered("GATE")
        with sqlite3.connect(root / "site" / "memory.db") as con:  # the next batch's rows are refused
            con.execute("CREATE TRIGGER refuse BEFORE INSERT ON documents BEGIN "
                        "SELECT RAISE(ABORT, 'refused by the test'); END")
        svc.release("GATE")
        sender.join(60)
        r = answer["r"]
        found = problem(r, 500, "internal-error")
        assert (found["stored_lines"], found["first_unstored_line"]) == (32, 33)
        assert found["request_id"] in found["detail"] and "refused by the test" not in r.text
        assert "lines 1-32 of the body are stored" in found["detail"]
    finally:
        svc.stop()


@pytest.fixture
def own_pg():
    """A PostgreSQL server of the test's own, to stop while the service uses it."""
    import tempfile

    from conftest import PgServer

    server = PgServer(tempfile.mkdtemp(prefix="cleo-drop-"))
    yield server
    try:
        server.start()
    except Exception:  # noqa: BLE001 - already running
        pass
    server.close()


def test_item8_a_postgresql_server_gone_mid_ingest_is_a_503_saying_which_lines_are_stored(tmp_path, own_pg):
    svc = HookedService(tmp_path, "--memory", own_pg.url(), "--watch-interval", 0, "--request-timeout", 60)
    answer = {}
    try:
        svc.wait_ready(60)
        body = body_of(range(100), {32: "GATE: the second batch waits here"})
        sender = threading.Thread(target=lambda: answer.update(r=httpx.post(
            svc.url + "/v1/tenants/site/memory", content=body, headers=NDJSON, timeout=120)))
        sender.start()
        svc.entered("GATE")
        own_pg.stop()
        svc.release("GATE")
        sender.join(90)
        r = answer["r"]
        found = problem(r, 503, "not-ready")
        assert r.headers["retry-after"] == "1" and found["code"] == "E306"
        assert (found["stored_lines"], found["first_unstored_line"]) == (32, 33)
        assert "postgresql" not in r.text and "cleo-drop-" not in r.text
        own_pg.start()
        with own_pg.admin() as conn:
            assert conn.execute("SELECT count(*) FROM cleo_site.documents").fetchone() == (32,)
        rest = b"".join(body.splitlines(keepends=True)[32:])
        deadline = time.monotonic() + 30
        while True:  # the service reconnects by itself
            r = httpx.post(svc.url + "/v1/tenants/site/memory", content=rest, headers=NDJSON, timeout=60)
            if r.status_code != 503 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert r.status_code == 200 and r.json()["added"] == 68, r.text
    finally:
        svc.stop()


# -- item 9: SIGTERM during a long ingest ---------------------------------------------------------------------

# The short ingest (64 lines: 16 slices of the bulk lane, each slept 0.12 s by the hook) must end within half
# of the drain, when ingests are stopped: 1.9 s of sleeps alone, so the drain leaves it twice that.
DRAIN = 8.0


def test_item9_sigterm_mid_ingest_keeps_the_drain_deadline_and_tells_each_client_what_is_stored(tmp_path):
    root = tmp_path / "memory"
    svc = HookedService(tmp_path, "--memory", root, "--watch-interval", 0, "--drain-timeout", DRAIN,
                        "--request-timeout", 120, slow=0.12)
    answers: dict[str, httpx.Response] = {}

    def send(name, path, content, headers):
        answers[name] = httpx.post(svc.url + path, content=content, headers=headers, timeout=120)

    long_body = body_of(range(3000))
    short_body = body_of(range(64), {0: "HOLD: the short ingest waits here until SIGTERM"})
    threads = [threading.Thread(target=send, args=("long", "/v1/tenants/long/memory", long_body, NDJSON))]
    try:
        svc.wait_ready(60)
        threads[0].start()
        db = root / "long" / "memory.db"
        deadline = time.monotonic() + 60
        while not (db.exists() and _count(db) >= 32):
            assert time.monotonic() < deadline, svc.log
            time.sleep(0.02)
        threads.append(threading.Thread(target=send, args=("short", "/v1/tenants/short/memory", short_body,
                                                           NDJSON)))
        threads.append(threading.Thread(target=send, args=("stalled", "/v1/classify", json.dumps(
            {"message": "STALL: held past the drain"}).encode(), JSON)))
        for t in threads[1:]:
            t.start()
        svc.entered("HOLD")
        svc.entered("STALL")
        sigterm = time.monotonic()
        svc.signal(signal.SIGTERM)
        svc.release("HOLD")  # the short ingest goes on, and ends well within the drain
        svc.wait_exit(DRAIN + 30)
        exited = time.monotonic() - sigterm
        for t in threads:
            t.join(30)
    finally:
        svc.stop()
    assert exited <= DRAIN + 1.5, (exited, svc.log)
    short = answers["short"]
    assert short.status_code == 200 and short.json()["added"] == 64, short.text
    long = answers["long"]
    found = problem(long, 503, "stopping")
    stored = found["stored_lines"]
    assert 32 <= stored < 3000 and found["first_unstored_line"] == stored + 1 and long.headers["retry-after"]
    assert found["report"]["added"] == stored and f"lines 1-{stored} of the body are stored" in found["detail"]
    assert _count(db) == stored  # what the client is told is what the store holds
    stalled = problem(answers["stalled"], 503, "stopping")
    assert "gave this request up" in stalled["detail"]
    log = svc.log
    assert "Exception in ASGI application" not in log and "Internal Server Error" not in log
    # the client sends the rest to a running service: everything is there, once
    again = HookedService(tmp_path / "again", "--memory", root, "--watch-interval", 0)
    try:
        again.wait_ready(60)
        rest = b"".join(long_body.splitlines(keepends=True)[found["first_unstored_line"] - 1:])
        r = httpx.post(again.url + "/v1/tenants/long/memory", content=rest, headers=NDJSON, timeout=120)
        assert r.status_code == 200 and (r.json()["added"], r.json()["unchanged"]) == (3000 - stored, 0), r.text
        assert httpx.get(again.url + "/v1/tenants/long/memory", timeout=30).json()["documents"] == 3000
    finally:
        again.stop()


def _count(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
            return con.execute("SELECT count(*) FROM documents").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a line\n", "\n", "  \n", '{"x": 1}\n', "last"]), max_size=12), st.integers(0, 14))
def test_item9_an_ingest_stops_between_lines_and_knows_whether_any_were_left(lines, stop_after):
    from cleo_rules.serve.endpoints.memory import LineFeed

    raw = "".join(lines).encode()
    pulled = []
    feed = LineFeed(raw, lambda: len(pulled) >= stop_after)
    for line in feed:
        pulled.append(line)
    every = raw.splitlines(keepends=True)
    assert pulled == every[:stop_after]
    assert feed.stopped == any(line.strip() for line in every[len(pulled):])


# -- item 11: paths in /readyz, keys read again ------------------------------------------------------------------


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    base = tmp_path_factory.mktemp("keyed")
    keys = base / "keys.txt"
    tokens = {"acme": KeyRing.append(keys, "acme"), "*": KeyRing.append(keys, "*")}
    svc = Service("--keys", keys, "--watch-interval", 0.2, log_path=base / "service.log")
    try:
        svc.wait_ready(60)
        yield svc, keys, tokens
    finally:
        svc.stop()


def _bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def test_item11_readyz_shows_the_servers_paths_only_to_a_key_for_every_tenant(keyed):
    svc, _, tokens = keyed
    pack_dir = str((ROOT / "rules").resolve())
    for headers in ({}, _bearer(tokens["acme"]), _bearer("cleo_not-a-key")):
        r = httpx.get(svc.url + "/readyz", headers=headers, timeout=10)
        assert r.status_code == 200 and r.json()["ready"] is True
        pack = r.json()["pack"]
        assert not {"path", "corpus", "last_error"} & set(pack) and pack["pack"] == "cleo-en"
        assert str(ROOT) not in r.text and pack_dir not in r.text
    r = httpx.get(svc.url + "/readyz", headers=_bearer(tokens["*"]), timeout=10)
    assert r.json()["pack"]["path"] == pack_dir and r.json()["pack"]["corpus"] == str((ROOT / "corpus").resolve())


def test_item11_a_refused_pack_says_why_in_readyz_only_to_a_key_for_every_tenant(tmp_path, pack_copy):
    pack_copy.write("pack.yaml", pack_copy.read("pack.yaml") + "\nthis is: [not yaml\n")
    keys = tmp_path / "keys.txt"
    admin = KeyRing.append(keys, "*")
    svc = Service("--keys", keys, "--pack", pack_copy.dir, "--watch-interval", 0, log_path=tmp_path / "svc.log")
    try:
        svc.wait_up(60)
        deadline = time.monotonic() + 60
        while "rejected" not in httpx.get(svc.url + "/readyz", timeout=5).text:
            assert time.monotonic() < deadline, svc.log
            time.sleep(0.1)
        hidden = problem(httpx.get(svc.url + "/readyz", timeout=5), 503, "not-ready")
        shown = problem(httpx.get(svc.url + "/readyz", headers=_bearer(admin), timeout=5), 503, "not-ready")
    finally:
        svc.stop()
    assert hidden["detail"] == "the rule pack was rejected: the service's log says why"
    assert str(tmp_path) not in json.dumps(hidden)
    assert shown["detail"].startswith("the rule pack was rejected: ") and shown["detail"] != hidden["detail"]


def _status(svc, token: str) -> int:
    return httpx.post(svc.url + "/v1/classify", json={"message": "Tell me more."}, headers=_bearer(token),
                      timeout=10).status_code


def _until(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_item11_a_changed_key_file_is_read_again_and_a_bad_one_keeps_the_keys(keyed):
    svc, keys, tokens = keyed
    original = keys.read_text()
    try:
        new = KeyRing.append(keys, "globex")  # a new key works without a restart
        assert _until(lambda: _status(svc, new) == 200), svc.log
        assert "read the key file" in svc.log
        # a malformed file: the keys read before stay in use, and the log says why
        keys.write_text(keys.read_text() + "sha256:not-hex  acme\n")
        bad_line = len(keys.read_text().splitlines())
        assert _until(lambda: "could not be read again" in svc.log), svc.log
        assert _status(svc, new) == 200 and _status(svc, tokens["acme"]) == 200
        assert f"{keys}:{bad_line}:" in svc.log
        # a key taken out stops working
        keys.write_text("\n".join(line for line in original.splitlines() if hash_key(tokens["acme"]) not in line)
                        + "\n")
        assert _until(lambda: _status(svc, tokens["acme"]) == 401), svc.log
        assert _status(svc, new) == 401 and _status(svc, tokens["*"]) == 200
    finally:
        keys.write_text(original)
        assert _until(lambda: _status(svc, tokens["acme"]) == 200)


def test_item11_sighup_reads_the_key_file_again(tmp_path):
    keys = tmp_path / "keys.txt"
    first = KeyRing.append(keys, "acme")
    svc = Service("--keys", keys, "--watch-interval", 0, log_path=tmp_path / "service.log")  # no polling
    try:
        svc.wait_ready(60)
        second = KeyRing.append(keys, "acme")
        time.sleep(1.0)
        assert _status(svc, second) == 401  # not looked at: only SIGHUP reads it
        svc.signal(signal.SIGHUP)
        assert _until(lambda: _status(svc, second) == 200), svc.log
        assert _status(svc, first) == 200 and svc.proc.poll() is None  # SIGHUP did not stop it
        keys.write_text("garbage\n")
        svc.signal(signal.SIGHUP)
        assert _until(lambda: "could not be read again" in svc.log), svc.log
        assert _status(svc, second) == 200
    finally:
        svc.stop()


# -- a PostgreSQL schema that is not the tenant's own: 409 ------------------------------------------------------


@pytest.fixture
def pg_db(pg):
    name = f"hostile_svc409_{os.getpid()}"
    with pg.admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = pg.base.replace("/postgres?", f"/{name}?", 1)
    yield base
    with pg.admin() as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def test_a_tenant_whose_schema_records_another_gets_409_and_nothing_is_read_or_written(tmp_path, pg_db):
    from cleo_rules.retrieval.postgres import PgStore

    from conftest import ToyEmbedder

    with PgStore.open(f"{pg_db}&tenant=beta", ToyEmbedder()) as store:
        store.add_document("d1", "Note", "2024-01-01", "beta's own note about the boiler")
    with psycopg.connect(pg_db, autocommit=True) as conn:  # a restore into the wrong schema leaves this
        conn.execute("UPDATE cleo_beta.meta SET value = 'gamma' WHERE key = 'tenant'")
    svc = HookedService(tmp_path, "--memory", pg_db, "--watch-interval", 0)
    try:
        svc.wait_ready(60)
        answers = [httpx.get(svc.url + "/v1/tenants/beta/memory", timeout=30),
                   httpx.post(svc.url + "/v1/tenants/beta/turns", json={"message": "What about the boiler?"},
                              timeout=30),
                   httpx.post(svc.url + "/v1/tenants/beta/memory", content=doc(1), headers=NDJSON, timeout=30),
                   httpx.delete(svc.url + "/v1/tenants/beta/memory/document/d1", timeout=30)]
        for r in answers:
            found = problem(r, 409, "tenant-schema-conflict")
            assert found["code"] == "E308" and "cleo-rules memory tenants" in found["detail"]
            assert "gamma" not in r.text and "postgresql" not in r.text
        described = httpx.get(svc.url + "/problems/tenant-schema-conflict", timeout=10).json()
        assert described["status"] == 409 and "--adopt SCHEMA --tenant NAME" in described["description"]
        assert "E308" in svc.log and "records tenant gamma" in svc.log  # the operator's details go to the log
    finally:
        svc.stop()
    with psycopg.connect(pg_db, autocommit=True) as conn:
        assert conn.execute("SELECT id FROM cleo_beta.documents").fetchall() == [("d1",)]
        assert conn.execute("SELECT count(*) FROM cleo_beta.traces").fetchone() == (0,)
