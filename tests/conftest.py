"""Fixtures shared across the test suite.

The embedding model is loaded once per test run: ``embedder`` is the default
backend (the bundled ONNX export), ``reference_embedder`` the torch reference
(sentence-transformers, the ``[reference]`` extra the development environment
installs). Tests that use either, directly or through another fixture, are
marked ``model``, so ``pytest -m "not model"`` runs the fast part of the suite.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from helpers.embedders import ToyEmbedder
from helpers.postgres import PgServer

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# the compiled-pack cache of this run (and of the commands it starts): never the developer's own
os.environ["CLEO_RULES_CACHE"] = _CACHE = tempfile.mkdtemp(prefix="cleo-rules-test-cache-")
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
# The services the tests start encode ingests at the priority of everything else: at the default,
# nice 19, an ingest waits for the cores while the other workers of a parallel run (or anything
# else on the machine) use them, and the tests time out waiting for it. The priority itself is
# tested in test_serve_scheduler.py, which sets it or removes this.
os.environ["CLEO_EMBED_BULK_NICE"] = "0"


@pytest.fixture(autouse=True)
def _no_pack_from_the_environment(monkeypatch):
    """Commands find their pack through CLEO_RULES_PACK first; a developer's own setting must not leak in."""
    monkeypatch.delenv("CLEO_RULES_PACK", raising=False)


# the error-code registry's suite-wide tests judge what every other test raised: they run last
SUITE_LAST = "tests/project/test_error_codes.py::test_suite_"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if {"embedder", "reference_embedder"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.model)
    last = [item for item in items if item.nodeid.startswith(SUITE_LAST)]
    items[:] = [item for item in items if item not in last] + last


# -- parallel runs (pytest-xdist: make test runs `pytest -n auto --dist loadfile`) ------------------
#
# Each worker is a process of its own with its own temporary directories, compiled-pack cache
# (CLEO_RULES_CACHE above), PostgreSQL server (the session's ``pg``), services on free ports and
# browser profiles. A test file runs whole on one worker (module fixtures are built once). The
# suite-wide error-code tests are handed out last, once every other file has been handed out, and
# read what the other workers raised from the files they write when they finish.

_LAST_SCOPE = "(the suite-wide tests, last)"
# The files that take longest, by file name, longest first: handed out before the others (which go
# in order of their number of tests), so that no long file starts when the rest of the run is done.
# A name missing here only makes the run end less evenly; nothing is skipped.
SLOW_FILES = (
    "test_pack_cache.py", "test_check_formats.py", "test_hostile_clients_service.py", "test_corpus_check.py",
    "test_hostile_clients_bounds.py", "test_hostile_store.py", "test_postgres_store.py", "test_packaging.py",
    "test_playground_browser.py", "test_runtime_cache.py", "test_precommit_hook.py",
    "test_hostile_pack_mutations.py", "test_memory_backends.py", "test_embedding_provenance.py",
    "test_runtime_busy.py", "test_hostile_clients_postgres.py", "test_readme_examples.py",
)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Whole files to workers, for every --dist but each (which runs every test on every worker)."""
    if config.getoption("dist") == "each":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LastScheduling(LoadFileScheduling):
        """Files to workers as they free up, the suite-wide tests only when nothing else is left."""

        def _split_scope(self, nodeid):
            return _LAST_SCOPE if nodeid.startswith(SUITE_LAST) else super()._split_scope(nodeid)

        ordered = False

        def _assign_work_unit(self, node):
            if not self.ordered:  # the queue is whole at the first assignment
                self.ordered = True
                rank = {name: n for n, name in enumerate(SLOW_FILES)}
                scopes = sorted(self.workqueue, key=lambda scope: (
                    scope == _LAST_SCOPE, rank.get(scope.rsplit("/", 1)[-1], len(rank))))
                for scope in scopes:  # a stable sort: the rest keep xdist's order, most tests first
                    self.workqueue.move_to_end(scope)
            if _LAST_SCOPE in self.workqueue and len(self.workqueue) > 1:
                self.workqueue.move_to_end(_LAST_SCOPE)
            super()._assign_work_unit(node)

    return LastScheduling(config, log)


def pytest_configure(config):
    distributed = getattr(config.option, "numprocesses", None) and config.getoption("dist") not in ("no", "each")
    if distributed and not hasattr(config, "workerinput"):
        config.stash[_CODES_DIR] = tempfile.mkdtemp(prefix="cleo-rules-test-codes-")


def pytest_unconfigure(config):
    if _CODES_DIR in config.stash:
        shutil.rmtree(config.stash[_CODES_DIR], ignore_errors=True)


_CODES_DIR = pytest.StashKey[str]()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    if _CODES_DIR in node.config.stash:
        node.workerinput["cleo_codes_dir"] = node.config.stash[_CODES_DIR]


def _worker_codes_dir(config):
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None or "cleo_codes_dir" not in workerinput:
        return None, None
    return Path(workerinput["cleo_codes_dir"]), workerinput["workerid"]


def pytest_sessionstart(session):
    directory, worker = _worker_codes_dir(session.config)
    if directory is not None:
        _write_whole(directory / f"{worker}.pid", str(os.getpid()))


def pytest_sessionfinish(session):
    """A worker's codes, written once it has run its last test."""
    directory, worker = _worker_codes_dir(session.config)
    if directory is not None:
        from cleo_rules import codes

        observed = {code: sorted(messages) for code, messages in codes.observed().items()}
        _write_whole(directory / f"{worker}.json", json.dumps(observed))


def _write_whole(path: Path, text: str) -> None:
    """Write ``path`` so that a reader sees nothing or all of it (a file renamed into place)."""
    part = path.with_name(path.name + ".part")
    part.write_text(text, encoding="utf-8")
    os.replace(part, path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def suite_codes(request) -> dict[str, set[str]]:
    """Every error code raised in this test run so far, with messages (up to 64 per code and process).

    In one process, what :func:`cleo_rules.codes.observed` holds. Under
    pytest-xdist, also what every other worker raised: the fixture waits until
    each of them has finished its last test and written its codes.
    """
    from cleo_rules import codes

    merged = {code: set(messages) for code, messages in codes.observed().items()}
    directory, me = _worker_codes_dir(request.config)
    if directory is None:
        return merged
    deadline = time.monotonic() + 3600
    while True:
        waiting = []
        for pid_file in directory.glob("*.pid"):
            worker = pid_file.stem
            if worker == me or (directory / f"{worker}.json").exists():
                continue
            assert _alive(int(pid_file.read_text())), f"worker {worker} ended without writing the codes it raised"
            waiting.append(worker)
        if not waiting:
            break
        assert time.monotonic() < deadline, f"workers {waiting} did not finish within an hour"
        time.sleep(0.2)
    for result in directory.glob("*.json"):
        if result.stem != me:
            for code, messages in json.loads(result.read_text(encoding="utf-8")).items():
                merged.setdefault(code, set()).update(messages)
    return merged


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


@pytest.fixture
def toy_embedder():
    return ToyEmbedder()


# -- PostgreSQL -------------------------------------------------------------------------------------


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
