"""Hostile clients of the service itself, another checkout beside this one: metrics, withheld bodies, slow bodies,
SIGTERM mid-ingest.

Each probe starts ``cleo-rules serve`` from one checkout (``--baseline``, by
default ``/work/baseline``), then from this one, on loopback, and stops it by
its pid; the probes alternate between the checkouts. A checkout that has
``--read-timeout`` and ``--max-body-bytes-in-flight`` is given the short
values below; one without runs with what it has.

1. ``/metrics`` after 3,000 requests with invented methods (half on a
   route, half on invented paths): its size, its series and the time of a
   scrape (median of five).
2. Twelve bodies of 8 MiB (``--max-body-bytes 8388608``) sent whole but
   their last byte, one connection each: how many the service holds, how
   many it refuses, and how much its resident memory grew
   (``--max-body-bytes-in-flight 25165824``: three such bodies).
3. Thirty connections sending a body one byte every 2 s: how many are still
   held after 12 s (``--read-timeout 5``).
4. SIGTERM while an ingest of 3,000 documents runs (real embedding model,
   ``--drain-timeout 5``): seconds from the signal to the exit, and what
   the client got.

Usage::

    .venv/bin/python bench/bench_slow_clients.py [--baseline /work/baseline] [--skip-drain]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
MIB = 1 << 20


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """``cleo-rules serve ARGS`` of ``checkout`` on a free loopback port."""

    def __init__(self, checkout: Path, *args):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", "cleo_rules", "serve", "--port", str(self.port),
                                      "--watch-interval", "0", *map(str, args)], cwd=checkout, stdout=self.log,
                                     stderr=subprocess.STDOUT, env={**os.environ, "HF_HUB_OFFLINE": "1"})

    def ready(self, timeout: float = 180) -> "Served":
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "the service exited"
            try:
                if httpx.get(self.url + "/readyz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise SystemExit("the service was not ready")

    def rss(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()


def _new(checkout: Path) -> bool:
    return "read_timeout" in (checkout / "cleo_rules" / "serve" / "settings.py").read_text()


def _head(port: int, method: str, path: str, length: int, media: str = "application/json") -> bytes:
    return (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {media}\r\n"
            f"Content-Length: {length}\r\n\r\n").encode()


def _open(sock: socket.socket) -> bool:
    """Whether the server still holds ``sock`` open without having answered."""
    sock.setblocking(False)
    try:
        sock.recv(1)  # an answer, or the end of the connection
    except BlockingIOError:
        return True
    except OSError:
        pass
    return False


def probe_metrics(checkout: Path) -> str:
    svc = Served(checkout).ready()
    try:
        with httpx.Client(base_url=svc.url, timeout=10) as client:
            for i in range(3000):
                client.request(f"X{i:04d}QZ", "/v1/classify" if i % 2 else f"/invented/{i}")
            times = []
            for _ in range(5):
                start = time.perf_counter()
                text = client.get("/metrics").text
                times.append(time.perf_counter() - start)
        series = sum(1 for line in text.splitlines() if line.startswith("cleo_http_request"))
        return f"{len(text) / 1024:8.0f} KiB {series:8d} series {statistics.median(times) * 1000:8.1f} ms a scrape"
    finally:
        svc.stop()


def probe_withheld(checkout: Path) -> str:
    size = 8 * MIB
    extra = ["--max-body-bytes-in-flight", 3 * size] if _new(checkout) else []
    svc = Served(checkout, "--max-body-bytes", size, *extra).ready()
    socks = []
    try:
        before = svc.rss()
        payload = b'{"message": "' + b"a" * (size - 16) + b'"}'
        payload += b" " * (size - len(payload))
        for _ in range(12):
            sock = socket.create_connection(("127.0.0.1", svc.port), timeout=10)
            socks.append(sock)
            try:
                sock.sendall(_head(svc.port, "POST", "/v1/classify", size) + payload[:-1])
            except OSError:
                pass  # refused and closed
            time.sleep(0.2)
        time.sleep(2)
        grown = (svc.rss() - before) / MIB
        held = sum(_open(sock) for sock in socks)
        return f"{held:8d} held {12 - held:8d} refused {grown:8.0f} MiB more resident memory"
    finally:
        for sock in socks:
            sock.close()
        svc.stop()


def probe_slow(checkout: Path) -> str:
    extra = ["--read-timeout", 5] if _new(checkout) else []
    svc = Served(checkout, *extra).ready()
    stop, socks = threading.Event(), []
    body = json.dumps({"message": "Tell me more about the cheaper one, the second."}).encode()

    def drip(sock):
        for byte in body:
            if stop.wait(2):
                return
            try:
                sock.send(bytes([byte]))
            except OSError:
                return

    try:
        for _ in range(30):
            sock = socket.create_connection(("127.0.0.1", svc.port), timeout=10)
            sock.sendall(_head(svc.port, "POST", "/v1/classify", len(body)))
            socks.append(sock)
            threading.Thread(target=drip, args=(sock,), daemon=True).start()
        time.sleep(12)
        held = sum(_open(sock) for sock in socks)
        return f"{held:8d} of 30 connections held after 12 s"
    finally:
        stop.set()
        for sock in socks:
            sock.close()
        svc.stop()


def probe_drain(checkout: Path) -> str:
    with tempfile.TemporaryDirectory() as root:
        svc = Served(checkout, "--memory", Path(root) / "memory", "--drain-timeout", 5, "--request-timeout", 600,
                     "--ingest-timeout", 600).ready()
        lines = "".join(json.dumps({"type": "document", "id": f"note-{i:04d}", "title": f"Site note {i}",
                                    "date": "2024-07-01", "text": f"Site note {i}: fitted a thermostatic valve in "
                                                                  f"room {i % 7} and checked the flue on job {i}."})
                        + "\n" for i in range(3000)).encode()
        answer = {}

        def send():
            try:
                answer["r"] = httpx.post(svc.url + "/v1/tenants/bench/memory", content=lines, timeout=600,
                                         headers={"Content-Type": "application/x-ndjson"})
            except httpx.HTTPError as exc:
                answer["error"] = type(exc).__name__

        sender = threading.Thread(target=send)
        sender.start()
        time.sleep(3)
        start = time.monotonic()
        svc.proc.send_signal(signal.SIGTERM)
        try:
            svc.proc.wait(300)
        finally:
            exited = time.monotonic() - start
            sender.join(60)
            svc.stop()
        r = answer.get("r")
        got = (f"{r.status_code} {r.headers.get('content-type', '').split(';')[0]}" if r is not None
               else answer.get("error", "nothing"))
        return f"{exited:8.1f} s to exit; the client got {got}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", type=Path, default=Path("/work/baseline"), help="the checkout to compare with")
    parser.add_argument("--skip-drain", action="store_true", help="leave out the SIGTERM probe (it embeds)")
    args = parser.parse_args()
    checkouts = {"baseline": args.baseline.resolve(), "this checkout": ROOT}
    probes = [("metrics after 3,000 invented methods", probe_metrics),
              ("12 bodies of 8 MiB, last byte withheld", probe_withheld),
              ("30 bodies sent a byte every 2 s", probe_slow)]
    if not args.skip_drain:
        probes.append(("SIGTERM mid-ingest, --drain-timeout 5", probe_drain))
    print(f"load average at the start: {os.getloadavg()[0]:.2f}")
    for title, probe in probes:
        print(title)
        for name, checkout in checkouts.items():
            print(f"  {name:14} {probe(checkout)}", flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
