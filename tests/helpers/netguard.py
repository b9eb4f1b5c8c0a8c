"""Outbound connections refused: only loopback (and Unix sockets) may be reached while a test runs.

``loopback_only()`` patches ``socket.socket.connect`` and ``connect_ex`` for as long as it is
entered, so any library that tries to reach another host (a model hub, a tokenizer download,
telemetry) fails at once with ``ConnectionRefusedError`` naming the address, and
``attempts`` lists every such address.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket

__all__ = ["loopback_only"]


def _loopback(address) -> bool:
    host = address[0] if isinstance(address, tuple) else address
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@contextlib.contextmanager
def loopback_only():
    attempts: list = []
    connect, connect_ex = socket.socket.connect, socket.socket.connect_ex

    def guarded(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address):
            attempts.append(address)
            raise ConnectionRefusedError(f"outbound connection to {address!r} refused during this test")
        return connect(self, address)

    def guarded_ex(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address):
            attempts.append(address)
            return 111  # ECONNREFUSED
        return connect_ex(self, address)

    socket.socket.connect = guarded
    socket.socket.connect_ex = guarded_ex
    try:
        yield attempts
    finally:
        socket.socket.connect, socket.socket.connect_ex = connect, connect_ex
