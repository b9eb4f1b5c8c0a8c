"""The test suite's layout mirrors the package, read from the files themselves.

A test of ``cleo_rules/pack/cache.py`` sits in ``tests/pack/``; a test of a top-level module
(``cleo_rules/turn.py``) at the root of ``tests/``, named after it (``test_turn.py``,
``test_turn_cli.py``). Beside them, a few folders hold what tests no one module: ``project/`` (the
repository as a whole) and ``hostile/`` (hostile input across the layers). What test modules share
lives in ``tests/helpers/`` and ``conftest.py``, never in another test module. Every test file's
name is unique in the suite: ``conftest.py`` names files by their name alone (``SLOW_FILES``), and
pytest imports each test module under its name.
"""

from __future__ import annotations

import ast
from collections import Counter

from helpers import ROOT, TESTS

PACKAGE = ROOT / "cleo_rules"
#: folders for tests that no single module of the package owns
CROSS_CUTTING = {
    "project": "the repository as a whole: import rules, docs and README, packaging, CI, the error-code registry",
    "hostile": "hostile input (clients, packs, stores, streams, open text) across the layers",
}
#: folders of tests/ that hold no test modules
NOT_TESTS = {"helpers", "data", "packs"}


def suite_files() -> list:
    return sorted(p for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts)


def package_folders() -> set[str]:
    return {str(p.parent.relative_to(PACKAGE)) for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE}


def top_level_modules() -> set[str]:
    return {p.stem for p in PACKAGE.glob("*.py") if not p.name.startswith("__")}


def test_the_suite_is_found():
    files = suite_files()
    assert len(files) > 100
    assert {f.parent.name for f in files} >= {"pack", "corpus", "retrieval", "serve", "cli", "project", "hostile"}


def test_every_test_file_sits_in_a_folder_that_mirrors_the_package_or_a_cross_cutting_one():
    allowed = package_folders() | set(CROSS_CUTTING)
    misplaced = []
    for path in suite_files():
        folder = path.parent.relative_to(TESTS)
        if str(folder) == ".":
            continue
        if str(folder) not in allowed or folder.parts[0] in NOT_TESTS:
            misplaced.append(str(path.relative_to(TESTS)))
    assert not misplaced, (f"test files outside a folder that mirrors cleo_rules/ ({sorted(package_folders())}) "
                           f"or a cross-cutting one ({sorted(CROSS_CUTTING)}): {misplaced}")


def test_each_test_file_at_the_root_is_named_after_a_top_level_module():
    modules = top_level_modules()
    orphans = []
    for path in suite_files():
        if path.parent == TESTS:
            words = path.stem.removeprefix("test_").split("_")
            if not any("_".join(words[:n]) in modules for n in range(1, len(words) + 1)):
                orphans.append(path.name)
    assert not orphans, f"test files at tests/ named after no module of cleo_rules/ ({sorted(modules)}): {orphans}"


def test_every_folder_of_tests_mirrors_the_package_or_is_named_here():
    """A folder under tests/ is one of the package's, a cross-cutting one, or one that holds no tests."""
    allowed = package_folders() | set(CROSS_CUTTING) | NOT_TESTS
    folders = {str(p.relative_to(TESTS)) for p in TESTS.rglob("*") if p.is_dir() and "__pycache__" not in p.parts
               and not any(part in NOT_TESTS for part in p.relative_to(TESTS).parts)}
    assert folders <= allowed, sorted(folders - allowed)


def test_each_test_file_name_is_used_once():
    names = Counter(path.name for path in suite_files())
    assert [name for name, count in names.items() if count > 1] == []


def test_no_test_module_imports_another_or_conftest():
    modules = {path.stem for path in suite_files()} | {"conftest"}
    found = []
    for path in suite_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            found += [f"{path.relative_to(TESTS)}:{node.lineno} {name}" for name in names
                      if name.split(".")[0] in modules]
    assert not found, f"shared code belongs in tests/helpers/ or conftest.py: {found}"


def test_modules_beside_the_tests_are_conftest_files_or_helpers():
    """A helper module among the test files would be imported under whatever folder pytest put first."""
    stray = [str(p.relative_to(TESTS)) for p in TESTS.rglob("*.py")
             if "__pycache__" not in p.parts and not p.name.startswith("test_") and p.name != "conftest.py"
             and p.relative_to(TESTS).parts[0] != "helpers"]
    assert stray == []


def test_the_files_conftest_names_exist():
    """SLOW_FILES names files by name alone, SUITE_LAST by path: a file moved or renamed is caught here."""
    values = {}
    for node in ast.parse((TESTS / "conftest.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in ("SLOW_FILES", "SUITE_LAST"):
                values[node.targets[0].id] = ast.literal_eval(node.value)
    names = {path.name for path in suite_files()}
    assert len(values["SLOW_FILES"]) > 5
    assert [name for name in values["SLOW_FILES"] if name not in names] == []
    suite_last = values["SUITE_LAST"].split("::")[0]
    assert (ROOT / suite_last).is_file(), suite_last
