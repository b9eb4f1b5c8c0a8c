"""The real service in a subprocess, for the tests: uvicorn on a free loopback port, stopped by its pid."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from helpers import ROOT


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Service:
    """``cleo-rules serve ARGS`` (or ``command``) on 127.0.0.1 and a free port; its output goes to ``log_path``.

    ``statuses`` records every ``/readyz`` status seen while waiting for
    readiness (so a test can tell that the service said 503 first).
    """

    def __init__(self, *args, log_path: Path, env: dict | None = None, command: str = "serve", cwd: Path = ROOT):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = Path(log_path)
        self.statuses: list[int] = []
        full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
        full_env.update(env or {})
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cleo_rules", command, "--port", str(self.port), *map(str, args)],
            stdout=self._log, stderr=subprocess.STDOUT, cwd=cwd, env=full_env,
        )
        self.pid = self.proc.pid

    @property
    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def client(self, **kwargs) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=kwargs.pop("timeout", 30.0), **kwargs)

    def wait_up(self, timeout: float = 30.0) -> None:
        """Until ``/healthz`` answers."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"the service exited with {self.proc.returncode}:\n{self.log}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"the service did not come up in {timeout} s:\n{self.log}")

    def wait_ready(self, timeout: float = 90.0) -> None:
        self.wait_up(timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = httpx.get(self.url + "/readyz", timeout=5.0).status_code
            self.statuses.append(status)
            if status == 200:
                return
            time.sleep(0.05)
        raise AssertionError(f"the service was not ready in {timeout} s:\n{self.log}")

    def __enter__(self) -> Service:
        """The service once ``/readyz`` answers 200; stopped by pid if it never does."""
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def signal(self, sig) -> None:
        os.kill(self.pid, sig)

    def wait_exit(self, timeout: float = 30.0) -> int:
        return self.proc.wait(timeout)

    def stop(self) -> None:
        """SIGTERM by pid, then SIGKILL if it has not exited within 15 s."""
        if self.proc.poll() is None:
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.proc.wait(5)
        self._log.close()

    def mapped_files(self) -> str:
        """The files the process has mapped (``/proc/PID/maps``): shared libraries show what it imported."""
        return Path(f"/proc/{self.pid}/maps").read_text()


def metric(text: str, name: str, **labels) -> float:
    """The value of one sample in Prometheus text, 0 when it is absent."""
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        metric_name, _, label_text = head.partition("{")
        if metric_name != name:
            continue
        got = ",".join(sorted(p for p in label_text.rstrip("}").split(",") if p))
        if got == want:
            return float(value)
    return 0.0


def eventually(predicate, timeout: float):
    """``predicate()``'s first true value, asked every 50 ms until ``timeout`` seconds have passed (then the test
    fails): for what a running service does on its own time (a reload, a log line)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out waiting")
