"""Every name the README, SECURITY.md and docs/ tell users to import, or name, is there under its current name; the
names that were renamed keep working, with a DeprecationWarning that names the new one."""

from __future__ import annotations

import importlib
import re
import warnings

import pytest

from helpers import ROOT

DOCS = [ROOT / "README.md", ROOT / "SECURITY.md", *sorted((ROOT / "docs").glob("*.md"))]
NOT_PYTHON = {"cleo_rules.packs"}  # the entry point group installed packs advertise themselves in
IMPORT = re.compile(r"^\s*from (cleo_rules[\w.]*) import ([\w, ]+)$", re.MULTILINE)
DOTTED = re.compile(r"`(cleo_rules(?:\.\w+)+)`")


def documented() -> list[str]:
    """Every ``cleo_rules`` name the documents import or name in backticks, as ``module:name`` or ``module``."""
    names: set[str] = set()
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for module, imported in IMPORT.findall(text):
            names |= {f"{module}:{n.strip()}" for n in imported.split(",") if n.strip()}
        names |= set(DOTTED.findall(text))
    return sorted(names - NOT_PYTHON)


def resolve(name: str):
    """The object ``name`` names: ``module:attribute``, a dotted module, or a dotted module attribute."""
    if ":" in name:
        module, attribute = name.split(":")
        return getattr(importlib.import_module(module), attribute)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:
        module, _, attribute = name.rpartition(".")
        return getattr(resolve(module), attribute)


def test_the_documents_are_read():
    names = documented()
    for wanted in ("cleo_rules.pack.sources:find_pack", "cleo_rules.retrieval.locate:open_memory",
                   "cleo_rules.turn:Recall", "cleo_rules:load_pack", "cleo_rules.verify.verify",
                   "cleo_rules.families.register"):
        assert wanted in names


@pytest.mark.parametrize("name", documented())
def test_a_documented_name_imports_without_a_deprecation(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert resolve(name) is not None


RENAMED = [  # (module, old name, new name)
    ("cleo_rules.pack.load", "Source", "LoadedFile"),
    ("cleo_rules.pack.model", "Settings", "PackSettings"),
    ("cleo_rules.pack.sources", "check_version", "check_pack_version"),
    ("cleo_rules.corpus.model", "Turn", "CaseTurn"),
]


@pytest.mark.parametrize("module, old, new", RENAMED)
def test_a_renamed_name_still_imports_and_says_what_to_use(module, old, new):
    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=f"{module}.{old} is deprecated; use {module}.{new}"):
        assert getattr(mod, old) is getattr(mod, new)
    with pytest.warns(DeprecationWarning):
        exec(f"from {module} import {old}", {})
    with pytest.raises(AttributeError):
        getattr(mod, old + "_never_defined")


def test_the_old_file_kind_reads_the_bundled_kinds(tmp_path):
    from cleo_rules.kinds import FileKind
    from cleo_rules.pack import validate
    from cleo_rules.pack.load import load_yaml

    path = tmp_path / "x.yaml"
    path.write_text("kind: corections\n", encoding="utf-8")
    src, _ = load_yaml(path)
    assert src is not None
    with pytest.warns(DeprecationWarning, match="use cleo_rules.families.family_of_file"):
        file_kind = validate.file_kind
    kind, (problem,) = file_kind(src)
    assert kind is None and (problem.code, problem.line, problem.col) == ("E124", 1, 7)
    assert "did you mean 'corrections'?" in problem.help
    path.write_text("kind: corrections\n", encoding="utf-8")
    src, _ = load_yaml(path)
    assert file_kind(src) == (FileKind.CORRECTIONS, [])


def test_the_prefilter_s_old_module_still_imports():
    from cleo_rules.prefilter import LiteralIndex, scan

    with pytest.warns(DeprecationWarning, match="import LiteralIndex from cleo_rules.prefilter"):
        from cleo_rules.prefilter.index import LiteralIndex as old  # noqa: F401
    assert old is LiteralIndex is scan.LiteralIndex
    index = importlib.import_module("cleo_rules.prefilter.index")
    with pytest.raises(AttributeError):
        index.nothing_here  # noqa: B018
