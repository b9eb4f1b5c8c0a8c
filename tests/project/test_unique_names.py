"""One name per thing and one thing per name (docs/ARCHITECTURE.md, "Names"): no public class, function or
module-level constant is defined in two modules, and no two modules share a base name, unless the allow-list
below says why the two are one kind of thing under one name."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from helpers import ROOT as CHECKOUT

ROOT = CHECKOUT / "cleo_rules"

#: names defined in more than one module on purpose: the modules, and why
ALLOWED_NAMES = {
    "CleoRulesRetriever": ({"cleo_rules.integrations.langchain", "cleo_rules.integrations.llama_index"},
                           "one adapter class per framework, each imported from its framework's module"),
    "BACKEND": ({"cleo_rules.retrieval.postgres", "cleo_rules.retrieval.store"},
                "each store module's own registration in memory_backends"),
    "SCHEMA_VERSION": ({"cleo_rules.retrieval.pg_schema", "cleo_rules.retrieval.sqlite_schema"},
                       "each backend's schema has its own version"),
    "COUNTS_SQL": ({"cleo_rules.retrieval.pg_schema", "cleo_rules.retrieval.sqlite_schema"},
                   "the same statement in each backend's SQL dialect"),
    "METADATA_BY_ITEM": ({"cleo_rules.retrieval.pg_schema", "cleo_rules.retrieval.sqlite_schema"},
                         "the same statement in each backend's SQL dialect"),
    "insert_messages_sql": ({"cleo_rules.retrieval.pg_schema", "cleo_rules.retrieval.sqlite_schema"},
                            "the same statement in each backend's SQL dialect"),
    "insert_piece_sql": ({"cleo_rules.retrieval.pg_schema", "cleo_rules.retrieval.sqlite_schema"},
                         "the same statement in each backend's SQL dialect"),
    "upsert_parent_sql": ({"cleo_rules.retrieval.pg_schema", "cleo_rules.retrieval.sqlite_schema"},
                          "the same statement in each backend's SQL dialect"),
    "load": ({"cleo_rules.retrieval.onnx_backend", "cleo_rules.retrieval.torch_backend"},
             "each embedding backend's loader, called through retrieval/embed.py"),
    "runtime_version": ({"cleo_rules.retrieval.onnx_backend", "cleo_rules.retrieval.torch_backend"},
                        "each embedding backend's runtime version, recorded in a store's provenance"),
    "default_model_path": ({"cleo_rules.retrieval.embed", "cleo_rules.retrieval.torch_backend"},
                           "the default model of the backend chosen, and the reference backend's own"),
    "register": ({"cleo_rules.families", "cleo_rules.memory_backends"},
                 "each registry's register: a rule family, a memory backend"),
    "unregister": ({"cleo_rules.families", "cleo_rules.memory_backends", "cleo_rules.serve.routes"},
                   "each registry's unregister: a rule family, a memory backend, an endpoint"),
    "registered": ({"cleo_rules.families", "cleo_rules.serve.routes"},
                   "each registry's list of what it holds: the rule families, the endpoints"),
    "openapi_schemas": ({"cleo_rules.serve.endpoints.classify", "cleo_rules.serve.endpoints.editing",
                         "cleo_rules.serve.endpoints.memory", "cleo_rules.serve.endpoints.meta",
                         "cleo_rules.serve.endpoints.pack"},
                        "each endpoint module's OpenAPI schemas, beside its endpoints (routes.endpoint(schemas=...))"),
    "create_app": ({"cleo_rules.serve", "cleo_rules.serve.app"},
                   "the package's lazy entry point to app.create_app (no web stack imported before it is called)"),
    "ASSETS": ({"cleo_rules.serve.api_page", "cleo_rules.serve.playground"}, "each served page's own files"),
    "INDEX": ({"cleo_rules.serve.api_page", "cleo_rules.serve.playground"}, "each served page's own HTML"),
    "asset": ({"cleo_rules.serve.api_page", "cleo_rules.serve.playground"}, "each served page's file endpoint"),
    "page": ({"cleo_rules.serve.api_page", "cleo_rules.serve.playground"}, "each served page's endpoint"),
    # a command or an endpoint is named after what it does for its user: the library call it makes
    "check": ({"cleo_rules.pack_check", "cleo_rules.cli.rules_cmds", "cleo_rules.cli.corpus_cmds"},
              "`cleo-rules check` and `cleo-rules corpus check`, the commands of pack_check.check"),
    "classify": ({"cleo_rules.cli.rules_cmds", "cleo_rules.serve.endpoints.classify"},
                 "`cleo-rules classify` and POST /v1/classify, both Pack.classify"),
    "explain": ({"cleo_rules.cli.rules_cmds", "cleo_rules.serve.endpoints.classify"},
                "`cleo-rules explain` and POST /v1/explain, both Pack.explain"),
    "ingest": ({"cleo_rules.cli.memory_cmds", "cleo_rules.serve.endpoints.memory"},
               "`cleo-rules memory ingest` and the tenant's memory ingest endpoint"),
    "edit_file": ({"cleo_rules.editing", "cleo_rules.serve.endpoints.editing"},
                  "the playground's edit endpoint, which calls editing.edit_file"),
    "serve": ({"cleo_rules.cli.serve_cmds", "cleo_rules.serve.server"},
              "`cleo-rules serve`, which calls serve.server.serve"),
    "search": ({"cleo_rules.cli.memory_cmds", "cleo_rules.timed"},
               "`cleo-rules memory search`; timed.search is a pattern's search under a time limit"),
    "history_error": ({"cleo_rules.cli.common", "cleo_rules.serve.body"},
                      "a history error in each layer's words: a command's report line, the service's 400"),
}

#: module base names shared on purpose: the modules, and why
ALLOWED_MODULES = {
    "base": ({"cleo_rules.families.base", "cleo_rules.retrieval.base"},
             "what every member of the package builds on (a rule family, a memory backend)"),
    "common": ({"cleo_rules.cli.common", "cleo_rules.serve.endpoints.common"},
               "what the commands, and the endpoints, of one layer share"),
    "editing": ({"cleo_rules.editing", "cleo_rules.serve.endpoints.editing"},
                "an endpoint module is named after the area of the library it serves"),
    "memory": ({"cleo_rules.retrieval.memory", "cleo_rules.serve.endpoints.memory"},
               "an endpoint module is named after the area of the library it serves"),
    "pack": ({"cleo_rules.pack", "cleo_rules.serve.endpoints.pack"},
             "an endpoint module is named after the area of the library it serves"),
    "files": ({"cleo_rules.corpus.files", "cleo_rules.pack.files"},
              "each package's files on disk: a corpus's, a composed pack's"),
    "model": ({"cleo_rules.corpus.model", "cleo_rules.pack.model"},
              "each package's values: corpus cases, the compiled Pack"),
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def public_definitions(path: Path) -> set[str]:
    """The public classes, functions and module-level constants (UPPER_CASE) a module defines itself."""
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            found.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found |= {t.id for t in targets if isinstance(t, ast.Name) and t.id.isupper()}
    return {name for name in found if not name.startswith("_")}


def collisions(modules: dict[str, Path]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """``(names defined in two modules or more, module base names shared)``, each with its modules."""
    names: dict[str, set[str]] = defaultdict(set)
    bases: dict[str, set[str]] = defaultdict(set)
    for module, path in modules.items():
        bases[module.rpartition(".")[2]].add(module)
        for name in public_definitions(path):
            names[name].add(module)
    return ({n: m for n, m in names.items() if len(m) > 1}, {b: m for b, m in bases.items() if len(m) > 1})


def test_no_name_is_defined_for_two_things():
    names, _ = collisions(_modules())
    unexplained = {n: sorted(m) for n, m in names.items() if n not in ALLOWED_NAMES or ALLOWED_NAMES[n][0] != m}
    assert unexplained == {}


def test_no_two_modules_share_a_name():
    _, bases = collisions(_modules())
    unexplained = {b: sorted(m) for b, m in bases.items() if b not in ALLOWED_MODULES or ALLOWED_MODULES[b][0] != m}
    assert unexplained == {}


def test_every_allowance_is_still_needed_and_says_why():
    names, bases = collisions(_modules())
    assert sorted(set(ALLOWED_NAMES) - set(names)) == [] and sorted(set(ALLOWED_MODULES) - set(bases)) == []
    assert all(len(why) > 20 for _, why in (*ALLOWED_NAMES.values(), *ALLOWED_MODULES.values()))


def test_the_collision_finder_finds_both_kinds(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "item.py").write_text("class Item:\n    pass\n\n\nLIMIT = 3\n_PRIVATE = 1\n", encoding="utf-8")
    (tmp_path / "item.py").write_text("def Item():\n    pass\n\n\nLIMIT: int = 4\n_PRIVATE = 2\nlower = 1\n",
                                      encoding="utf-8")
    names, bases = collisions({"x.a.item": tmp_path / "a" / "item.py", "x.item": tmp_path / "item.py"})
    assert names == {"Item": {"x.a.item", "x.item"}, "LIMIT": {"x.a.item", "x.item"}}
    assert bases == {"item": {"x.a.item", "x.item"}}
