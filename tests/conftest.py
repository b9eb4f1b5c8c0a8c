"""Fixtures shared across the test suite.

The embedding model is loaded once per test run: ``embedder`` is the default
backend (the bundled ONNX export), ``reference_embedder`` the torch reference
(sentence-transformers, the ``[reference]`` extra the development environment
installs). Tests that use either, directly or through another fixture, are
marked ``model``, so ``pytest -m "not model"`` runs the fast part of the suite.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# the compiled-pack cache of this run (and of the commands it starts): never the developer's own
os.environ["CLEO_RULES_CACHE"] = _CACHE = tempfile.mkdtemp(prefix="cleo-rules-test-cache-")
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)


@pytest.fixture(autouse=True)
def _no_pack_from_the_environment(monkeypatch):
    """Commands find their pack through CLEO_RULES_PACK first; a developer's own setting must not leak in."""
    monkeypatch.delenv("CLEO_RULES_PACK", raising=False)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if {"embedder", "reference_embedder"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.model)
    # the error-code registry's suite-wide tests judge what every other test raised: they run last
    last = [item for item in items if item.nodeid.startswith("tests/test_error_codes.py::test_suite_")]
    items[:] = [item for item in items if item not in last] + last


_browser_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report):
    if "browser" in report.keywords:
        _browser_seconds[report.nodeid] = _browser_seconds.get(report.nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    """How long the browser tests took, set-up and tear-down included (what they add to CI)."""
    if _browser_seconds:
        total = sum(_browser_seconds.values())
        terminalreporter.write_line(f"browser tests: {len(_browser_seconds)} in {total:.1f} s "
                                    f"(set-up and tear-down included)")


@pytest.fixture(scope="session")
def embedder():
    from cleo_rules.retrieval.embed import Embedder

    return Embedder()


@pytest.fixture(scope="session")
def reference_embedder():
    from cleo_rules.retrieval.embed import Embedder

    return Embedder(backend="torch")


@pytest.fixture(scope="session")
def default_pack():
    from cleo_rules import load_pack

    return load_pack()


class PackCopy:
    """A writable copy of the bundled pack in a temporary directory."""

    def __init__(self, root):
        import shutil

        from cleo_rules.resources import rules_dir

        self.dir = root / "pack"
        shutil.copytree(rules_dir(), self.dir)

    def read(self, name: str) -> str:
        return (self.dir / name).read_text(encoding="utf-8")

    def write(self, name: str, text: str) -> None:
        (self.dir / name).write_text(text, encoding="utf-8")

    def replace(self, name: str, old: str, new: str, count: int = 1) -> None:
        text = self.read(name)
        assert old in text, f"{old!r} not in {name}"
        self.write(name, text.replace(old, new, count))

    def line_of(self, name: str, needle: str) -> int:
        """1-based line number of the first line containing ``needle``."""
        for number, line in enumerate(self.read(name).splitlines(), 1):
            if needle in line:
                return number
        raise AssertionError(f"{needle!r} not in {name}")


@pytest.fixture
def pack_copy(tmp_path):
    return PackCopy(tmp_path)


@pytest.fixture
def load_calls(monkeypatch):
    """Records every call that hands an index file to hnswlib."""
    from cleo_rules.retrieval import hnsw_file as index_mod

    calls = []
    real = index_mod._load_hnsw

    def spy(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(index_mod, "_load_hnsw", spy)
    return calls


class ToyEmbedder:
    """A stand-in for the model: a text's vector is its bag of words, hashed into 64 dimensions.

    Deterministic and instant, so store tests that only need *some* vectors
    (sharing words makes texts similar) run without loading the model.
    """

    model_name = "toy-bag-of-words-64"
    loaded = True
    dim = 64

    def encode(self, texts):
        import hashlib
        import re

        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, hashlib.blake2b(word.encode(), digest_size=2).digest()[0] % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


@pytest.fixture
def toy_embedder():
    return ToyEmbedder()


# -- PostgreSQL -------------------------------------------------------------------------------------


class PgServer:
    """A private PostgreSQL server (the ``pgserver`` package: PostgreSQL 16 with pgvector) in a temporary directory.

    ``url(tenant)`` is a store location in it. ``admin()`` is a connection
    as the superuser that owns everything. ``stop()`` and ``start()`` take
    the server down and bring it back on the same socket, for the tests of a
    server that goes away mid-session.
    """

    def __init__(self, root):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR is not set
            import pgserver

            self.server = pgserver.get_server(root, cleanup_mode="delete")
        self.base = self.server.get_uri()
        with self.admin() as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def url(self, tenant: str | None = None) -> str:
        return self.base + (f"&tenant={tenant}" if tenant else "")

    def admin(self):
        import psycopg

        return psycopg.connect(self.base, autocommit=True)

    def stop(self) -> None:
        from pgserver._commands import pg_ctl

        pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=self.server.pgdata, user=self.server.system_user)

    def start(self) -> None:
        from pgserver._commands import pg_ctl

        info = self.server.get_postmaster_info()
        pg_ctl(["-w", "-o", '-h ""', "-o", f"-k {info.socket_dir}", "-l", str(self.server.log), "start"],
               pgdata=self.server.pgdata, user=self.server.system_user, timeout=30)

    def close(self) -> None:
        self.server.cleanup()


def _pg_root(tmp_path_factory, name: str):
    # the socket lives in the data directory: keep its path short (a Unix socket path has ~100 bytes)
    import tempfile

    return tempfile.mkdtemp(prefix=f"cleo-{name}-")


@pytest.fixture(scope="session")
def pg(tmp_path_factory):
    """One PostgreSQL server for the whole test run."""
    server = PgServer(_pg_root(tmp_path_factory, "pg"))
    yield server
    server.close()


_tenants = iter(range(1, 1_000_000))


@pytest.fixture
def pg_tenant(pg):
    """A fresh tenant name in the session's server (each test its own schema)."""
    return f"t{next(_tenants)}-{os.getpid()}"
