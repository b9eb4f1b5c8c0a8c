"""A memory backend is one MemoryBase subclass and one registration, then opened by URL wherever a bundled one is.

``ListMemory`` (tests/helpers/list_memory.py, the hooks of
:mod:`cleo_rules.retrieval.base` and nothing more) is registered for
``lists://`` by :func:`cleo_rules.memory_backends.register`; the command
line (``--db lists://...``), ``Recall.open`` and the service (``--memory
lists://...``, one shelf per tenant) then open it, and unregistering it makes
such a location a directory again.
"""

from __future__ import annotations

import json
import time

import pytest

from cleo_rules import memory_backends
from cleo_rules.cli import main
from cleo_rules.errors import StoreError
from cleo_rules.memory_backends import MemoryBackend, backend_for, register, unregister
from cleo_rules.tenant_names import valid_tenant
from cleo_rules.turn import Recall

from helpers.embedders import ToyEmbedder
from helpers.list_memory import ListMemory, Shelf

DOCS = [{"type": "document", "id": "price-list", "title": "Price list 2024", "date": "2024-01-02",
         "text": "Call-out fee 45 pounds. Hourly rate 38 pounds."},
        {"type": "document", "id": "boiler", "title": "Boiler service", "date": "2024-03-10",
         "text": "The office boiler is serviced every spring by Hughes Heating."}]
LINES = "".join(json.dumps(d) + "\n" for d in DOCS)

SHELVES: dict[str, Shelf] = {}  # location -> its lists, as a directory keeps a store between opens


def open_lists(location, embedder=None, *, create=True, **options) -> ListMemory:
    if location not in SHELVES:
        if not create:
            raise StoreError(f"no memory store at {location}")
        SHELVES[location] = Shelf()
    return ListMemory(embedder if embedder is not None else ToyEmbedder(), SHELVES[location], **options)


class ListTenants:
    """One shelf per tenant: ``lists://ROOT/<tenant>``."""

    def __init__(self, location, options):
        self.location, self.closed = location, False

    def known(self, name):
        return False

    def exists(self, name):
        if not valid_tenant(name):
            raise ValueError(f"not a tenant name: {name!r}")
        return f"{self.location}/{name}" in SHELVES

    def open(self, name, embedder, **options):
        return open_lists(f"{self.location}/{name}", embedder, **options)

    def close(self):
        self.closed = True


LISTS = MemoryBackend("lists", open=open_lists, tenants=ListTenants, describe=lambda location: f"the lists {location}")


@pytest.fixture
def lists_backend(tmp_path, monkeypatch):
    """``lists://`` registered for one test (and unregistered after it); run from an empty directory, where an
    unregistered ``lists://`` would become directories."""
    monkeypatch.chdir(tmp_path)
    register("lists", LISTS)
    SHELVES.clear()
    yield
    unregister("lists")
    SHELVES.clear()


def cli(capsys, *args):
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return info.value.code, out, err


def test_the_command_line_opens_a_registered_backend_by_url(lists_backend, tmp_path, capsys):
    (tmp_path / "notes.jsonl").write_text(LINES, encoding="utf-8")
    code, out, err = cli(capsys, "memory", "ingest", "--db", "lists://notes", "notes.jsonl", "--json")
    assert code == 0, err
    assert json.loads(out)["added"] == 2
    assert set(SHELVES) == {"lists://notes"} and len(SHELVES["lists://notes"].parents) == 2
    code, out, err = cli(capsys, "memory", "search", "--db", "lists://notes", "what is the call-out fee?", "--json")
    assert code == 0, err
    assert json.loads(out)["results"][0]["item"] == "price-list#p0"
    code, out, err = cli(capsys, "memory", "delete", "--db", "lists://notes", "--document", "boiler")
    assert code == 0, err
    assert set(SHELVES["lists://notes"].parents) == {("document", "price-list")}
    code, out, err = cli(capsys, "memory", "search", "--db", "lists://other", "fee")  # only ingest creates one
    assert (code, out) == (2, "") and "no memory store at lists://other" in err
    assert list(tmp_path.iterdir()) == [tmp_path / "notes.jsonl"]  # no directory was made of a URL


def test_recall_open_and_the_location_description_go_through_the_registry(lists_backend, default_pack):
    from cleo_rules.retrieval.locate import describe_location

    open_lists("lists://r").add_document("d1", "Price list", "2024-01-02", "Call-out fee 45 pounds.")
    recall = Recall.open("lists://r", pack=default_pack, k=1)
    assert isinstance(recall.store, ListMemory)
    turn = recall.turn("How much is the call-out fee?")
    assert [r.item for r in turn.results] == ["d1#p0"]
    assert describe_location("lists://r") == "the lists lists://r"


def test_an_unregistered_scheme_is_a_directory_again(lists_backend):
    assert backend_for("LISTS://x").target is LISTS and backend_for("lists://x").scheme == "lists"
    unregister("lists")
    assert backend_for("lists://x").scheme is None and backend_for("lists://x") is backend_for("memory/")
    register("lists", LISTS)
    with pytest.raises(ValueError, match="not a URL scheme"):
        register("no scheme", LISTS)
    with pytest.raises(ValueError, match="cannot be unregistered"):
        unregister(None)  # type: ignore[arg-type]
    assert backend_for("postgresql://cleo@db/cleo").extra == backend_for("POSTGRES://db").extra == "postgres"
    assert memory_backends.backend_for(__file__).scheme is None


def test_the_service_keeps_each_tenant_in_a_registered_backend(lists_backend, monkeypatch):
    from starlette.testclient import TestClient

    import cleo_rules.retrieval.embed as embed
    from cleo_rules.serve import ServeSettings, create_app

    monkeypatch.setattr(embed, "Embedder", lambda model=None: ToyEmbedder())
    settings = ServeSettings(memory="lists://served", watch_interval=0)
    assert settings.memory == "lists://served"  # a URL of a registered scheme, not a directory
    app = create_app(settings)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        service = app.state.service
        deadline = time.monotonic() + 60
        while not service.ready and time.monotonic() < deadline:
            time.sleep(0.05)
        assert service.ready
        assert client.get("/v1/tenants/acme/memory").status_code == 404  # no shelf yet: only an ingest makes one
        r = client.post("/v1/tenants/acme/memory", content=LINES, headers={"Content-Type": "application/x-ndjson"})
        assert r.status_code == 200 and r.json()["added"] == 2, r.text
        assert set(SHELVES) == {"lists://served/acme"}
        r = client.post("/v1/tenants/acme/turns", json={"message": "How much is the call-out fee?",
                                                        "history": []})
        assert r.status_code == 200, r.text
        results = r.json()["results"]
        assert results and {hit["item"] for hit in results} <= {"price-list#p0", "boiler#p0"}  # from the lists
        assert len(SHELVES["lists://served/acme"].sink.rows) == 1  # the turn's trace, in the tenant's lists
        assert client.get("/v1/tenants/beta/memory").status_code == 404
        stores = service.tenants.stores
        assert isinstance(stores, ListTenants) and not stores.closed
    assert stores.closed  # the service closed what its tenants' stores share
