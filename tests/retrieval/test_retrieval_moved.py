"""Modules of cleo_rules.retrieval that moved keep their old names working, each read warning where it now lives."""

from __future__ import annotations

import importlib
import warnings

import pytest

#: (old module, name, new module, new name)
MOVED = [
    ("cleo_rules.retrieval.index", "VectorIndex", "cleo_rules.retrieval.hnsw_file", "VectorIndex"),
    ("cleo_rules.retrieval.index", "MAX_SIDECAR_BYTES", "cleo_rules.retrieval.hnsw_file", "MAX_SIDECAR_BYTES"),
    ("cleo_rules.retrieval.index", "check_hnsw_file", "cleo_rules.retrieval.hnsw_file", "check_hnsw_file"),
    ("cleo_rules.retrieval.indexes", "IndexSet", "cleo_rules.retrieval.index_set", "IndexSet"),
    ("cleo_rules.retrieval.indexes", "StoreWarning", "cleo_rules.retrieval.index_set", "StoreWarning"),
    ("cleo_rules.retrieval.schema", "TABLES", "cleo_rules.retrieval.tables", "TABLES"),
    ("cleo_rules.retrieval.schema", "Source", "cleo_rules.retrieval.tables", "Source"),
    ("cleo_rules.retrieval.schema", "source_of_item", "cleo_rules.retrieval.tables", "source_of_item"),
    ("cleo_rules.retrieval.schema", "BUSY_TIMEOUT_MS", "cleo_rules.retrieval.sqlite_schema", "BUSY_TIMEOUT_MS"),
    ("cleo_rules.retrieval.schema", "READ_BUSY_TIMEOUT_MS", "cleo_rules.retrieval.sqlite_schema",
     "READ_BUSY_TIMEOUT_MS"),
    ("cleo_rules.retrieval.schema", "open_database", "cleo_rules.retrieval.sqlite_schema", "open_database"),
    ("cleo_rules.retrieval.schema", "file_kind", "cleo_rules.retrieval.sqlite_schema", "describe_mode"),
]


@pytest.mark.parametrize("old, name, new, new_name", MOVED)
def test_an_old_name_warns_and_is_the_new_object(old, name, new, new_name):
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=rf"{old}\.{name} is deprecated: import {new}\.{new_name}") as caught:
        value = getattr(module, name)
    assert value is getattr(importlib.import_module(new), new_name)
    assert caught[0].filename == __file__  # the warning points at the line that read the old name


def test_from_import_of_an_old_name_warns_at_the_importing_line():
    with pytest.warns(DeprecationWarning, match="retrieval.index_set.IndexSet") as caught:
        from cleo_rules.retrieval.indexes import IndexSet
    from cleo_rules.retrieval.index_set import IndexSet as current

    assert IndexSet is current and caught[0].filename == __file__


def test_a_name_no_module_had_is_an_attribute_error():
    import cleo_rules.retrieval.schema as old

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning either: there is nothing to point to
        with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
            old.nothing_here  # noqa: B018
        with pytest.raises(ImportError):
            from cleo_rules.retrieval.index import nothing_here  # noqa: F401


DOCUMENTED = [  # the imports README.md, SECURITY.md and docs/ name: they work, and say nothing
    ("cleo_rules.retrieval", "MemoryStore"),
    ("cleo_rules.retrieval", "Memory"),
    ("cleo_rules.retrieval", "Source"),
    ("cleo_rules.retrieval.locate", "open_memory"),
    ("cleo_rules.retrieval.memory", "Memory"),
    ("cleo_rules.retrieval.store", "MemoryStore"),
    ("cleo_rules.retrieval.embed", "Embedder"),
    ("cleo_rules.retrieval.postgres", "PgStore"),
    ("cleo_rules.retrieval.hnsw_file", "MAX_SIDECAR_BYTES"),
    ("cleo_rules.retrieval.sqlite_schema", "BUSY_TIMEOUT_MS"),
    ("cleo_rules.retrieval.sqlite_schema", "READ_BUSY_TIMEOUT_MS"),
]


@pytest.mark.parametrize("module, name", DOCUMENTED)
def test_documented_imports_work_without_a_warning(module, name):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert getattr(importlib.import_module(module), name) is not None


def _documented_names():
    import re
    from helpers import ROOT as root

    found = set()
    for doc in [root / "README.md", root / "SECURITY.md", *sorted((root / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        found |= set(re.findall(r"\bcleo_rules\.(?:retrieval|trace|tenant_names)(?:\.[A-Za-z_]\w*)*", text))
    return sorted(found)


@pytest.mark.parametrize("dotted", _documented_names())
def test_every_store_name_the_documents_give_resolves_without_a_warning(dotted):
    parts = dotted.split(".")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for cut in range(len(parts), 0, -1):
            try:
                value = importlib.import_module(".".join(parts[:cut]))
            except ModuleNotFoundError:
                continue
            for name in parts[cut:]:
                value = getattr(value, name)
            return
    pytest.fail(f"{dotted} names no module")
