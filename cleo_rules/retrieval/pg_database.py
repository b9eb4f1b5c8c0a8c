"""A PostgreSQL database for the memory: its pool of connections, and what its errors mean.

A :class:`Database` is one ``psycopg_pool`` pool that the stores (tenants)
of one database share; the service opens one for all its tenants. Every
psycopg error that leaves it is a :class:`~cleo_rules.errors.StoreError`
saying what to do (:func:`pg_error`): a server that cannot be reached is
E306 within the pool's ``timeout``, never a hang, and every connection busy
for ``timeout`` seconds is E307.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from pgvector.psycopg.vector import register_vector_info
from psycopg.types import TypeInfo
from psycopg_pool import ConnectionPool, PoolTimeout

from ..errors import StoreError
from .pg_schema import display_url, quote

__all__ = ["Database", "pg_error"]

# -- errors ------------------------------------------------------------------------------------


def pg_error(exc: BaseException, where) -> StoreError:
    """The :class:`~cleo_rules.errors.StoreError` that says what a psycopg error means and what to do."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
        return StoreError(f"memory store {where} is open read-only ({text}); open it without read_only=True "
                          "to change it", code="E305")
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return StoreError(f"memory store {where}: PostgreSQL refused: {text}; grant this role the rights on the "
                          "tenant's schema (see docs/scaling.md)")
    if isinstance(exc, psycopg.OperationalError):
        return StoreError(f"cannot reach the database of memory store {where}: {text}; check that the server is "
                          "running and the URL is right (the store reconnects by itself once it is back)",
                          code="E306")
    return StoreError(f"memory store {where}: PostgreSQL error: {text}")



# -- the database and its pool -----------------------------------------------------------------


def _configure(conn: psycopg.Connection) -> None:
    """Each new connection learns pgvector's ``vector`` type (one catalogue lookup)."""
    register_vector_info(conn, TypeInfo.fetch(conn, "vector"))


class Database:
    """One PostgreSQL database and a pool of connections to it, shared by the stores (tenants) in it.

    ``url`` is a libpq URL (without ``tenant``). At most ``pool_size``
    connections are open at once; a call waits at most ``timeout`` seconds
    for one, then fails with a :class:`StoreError` (E306 when the server
    cannot be reached, E307 when every connection stayed busy).
    ``read_only`` makes every transaction read-only.

    Opening checks the server at once (a clear error now, not a time-out
    later) and creates the ``vector`` extension when it is missing and the
    role may.
    """

    def __init__(self, url: str, *, pool_size: int = 4, timeout: float = 10.0, read_only: bool = False):
        if not isinstance(pool_size, int) or isinstance(pool_size, bool) or pool_size < 1:
            raise ValueError(f"pool_size must be a positive integer, not {pool_size!r}")
        if not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
        self.url = url
        self.where = display_url(url)
        self.pool_size = pool_size
        self.timeout = float(timeout)
        self.read_only = read_only
        kwargs: dict[str, Any] = {"autocommit": True, "connect_timeout": max(2, math.ceil(self.timeout)),
                                  "application_name": "cleo-rules"}
        if read_only:
            kwargs["options"] = "-c default_transaction_read_only=on"
        self._kwargs = kwargs
        self._check_server()
        self.pool = ConnectionPool(
            url, kwargs=kwargs, min_size=1, max_size=pool_size, timeout=self.timeout, open=False,
            configure=_configure, check=ConnectionPool.check_connection,
            # a connection attempt gives up after the call's timeout, so the next call starts a fresh one at
            # once instead of waiting out a long back-off: calls succeed again soon after the server is back
            reconnect_timeout=max(1.0, self.timeout), name=f"cleo-rules {self.where}",
        )
        self.pool.open(wait=False)
        self._closed = False
        self._lock = threading.Lock()

    def _check_server(self) -> None:
        try:
            with psycopg.connect(self.url, **self._kwargs) as conn:
                if TypeInfo.fetch(conn, "vector") is not None:
                    return
                if self.read_only:
                    raise StoreError(f"the database of memory store {self.where} lacks the vector extension; "
                                     "create it (CREATE EXTENSION vector) or open the store for writing once")
                try:
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                except psycopg.Error as exc:
                    raise StoreError(f"the database of memory store {self.where} lacks the vector extension and "
                                     f"this role cannot create it ({' '.join(str(exc).split())}); as the database "
                                     "owner or a superuser run CREATE EXTENSION vector") from None
        except psycopg.Error as exc:
            raise pg_error(exc, self.where) from None

    @contextmanager
    def connection(self, where=None) -> Iterator[psycopg.Connection]:
        """A pooled connection (autocommit: wrap writes in ``conn.transaction()``); psycopg errors become StoreError."""
        where = where if where is not None else self.where
        if self._closed:
            raise StoreError(f"memory store {where} is closed")
        errors_before = self.pool.get_stats().get("connections_errors", 0)
        try:
            with self.pool.connection() as conn:
                yield conn
        except PoolTimeout:
            raise self._timeout_error(where, errors_before) from None
        except psycopg.Error as exc:
            raise pg_error(exc, where) from exc

    def _timeout_error(self, where, errors_before: int) -> StoreError:
        stats = self.pool.get_stats()
        if stats.get("connections_errors", 0) > errors_before or not stats.get("pool_size", 0):
            return StoreError(f"cannot reach the database of memory store {where}: no connection within "
                              f"{self.timeout:g} s; check that the server is running and the URL is right "
                              "(the store reconnects by itself once it is back)", code="E306")
        return StoreError(f"memory store {where} is busy: all {self.pool_size} pooled connections stayed in use "
                          f"for {self.timeout:g} s", code="E307")

    def tenant_exists(self, schema: str) -> bool:
        """Whether ``schema`` holds a store (its ``meta`` table)."""
        with self.connection() as conn:
            row = conn.execute("SELECT to_regclass(%s)", [f"{quote(schema)}.meta"]).fetchone()
        return row is not None and row[0] is not None

    def close(self) -> None:
        """Close every pooled connection. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.pool.close()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

