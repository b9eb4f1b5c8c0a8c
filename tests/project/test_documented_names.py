"""Every name the README, SECURITY.md and docs/ tell users to import, or name, is there under its current name; the
names renamed before the first release are gone."""

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
    for wanted in ("cleo_rules.pack.discovery:find_pack", "cleo_rules.retrieval.locate:open_memory",
                   "cleo_rules.turn:Recall", "cleo_rules:load_pack", "cleo_rules.pack_check.check_compiled",
                   "cleo_rules.families.register"):
        assert wanted in names


@pytest.mark.parametrize("name", documented())
def test_a_documented_name_imports_without_a_deprecation(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert resolve(name) is not None


#: the names the package had before its first release, each under its one name since: (module, old name)
FORMER = [
    ("cleo_rules.reading.load", "Source"),  # LoadedFile
    ("cleo_rules.pack.model", "Settings"),  # PackSettings
    ("cleo_rules.pack.discovery", "check_version"),  # check_pack_version
    ("cleo_rules.reading.validate", "file_kind"),  # cleo_rules.families.family_of_file
    ("cleo_rules.corpus.model", "Turn"),  # CaseTurn
    ("cleo_rules.serve.settings", "Settings"),  # ServeSettings
    ("cleo_rules.serve", "Settings"),
]
#: modules that were renamed or moved before the first release
FORMER_MODULES = ["cleo_rules.prefilter.index", "cleo_rules.retrieval.index", "cleo_rules.retrieval.indexes",
                  "cleo_rules.retrieval.schema", "cleo_rules._deprecated", "cleo_rules.retrieval._moved",
                  "cleo_rules.pack.load", "cleo_rules.pack.flow", "cleo_rules.pack.validate", "cleo_rules.pack.bounds",
                  "cleo_rules.pack.backtracking"]


@pytest.mark.parametrize("module, old", FORMER)
def test_a_name_the_package_had_before_its_first_release_is_gone(module, old):
    """Nothing was released under the old names, so none is kept: one name for each thing."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        with pytest.raises(AttributeError):
            getattr(importlib.import_module(module), old)


@pytest.mark.parametrize("module", FORMER_MODULES)
def test_a_module_renamed_before_the_first_release_is_gone(module):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(module)
