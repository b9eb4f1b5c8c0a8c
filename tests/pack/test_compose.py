"""Packs built on other packs (``extends:``, ``disable:``): a team pack on cleo-en that disables a rule, changes a
setting and adds a correction checks, classifies with its changes, passes its corpus and cleo-en's (the cases of
the disabled rule skipped and counted) and reloads on a change to its own file; several bases, cycles, ranges and
unknown ids; the compiled-pack cache, the runtime, the service and the traces of a composed pack."""

from __future__ import annotations

import dataclasses
import json
import shutil
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from cleo_rules.cli import cli
from cleo_rules.corpus.files import corpus_dir_of
from cleo_rules.corpus.run import load_cases
from cleo_rules.errors import PackError
from cleo_rules.pack import cache, cache_key
from cleo_rules.pack.compile import compile_pack
from cleo_rules.resources import rules_dir
from cleo_rules.runtime import PackManager
from cleo_rules.pack_check import check

from helpers import MINI
from helpers.compose import HISTORY, OUT_OF_STOCK, TWELVE, write_team


@pytest.fixture(scope="module")
def team(tmp_path_factory) -> Path:
    return write_team(tmp_path_factory.mktemp("team"))


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def manifest(name: str, *, extends=None, disable=None, files=(), version="1.0.0", settings=None) -> str:
    doc: dict = {"pack": name, "version": version, "locale": "en"}
    if extends is not None:
        doc["extends"] = extends
    if disable is not None:
        doc["disable"] = disable
    if settings:
        doc["settings"] = settings
    if files or extends is None:
        doc["files"] = list(files)
    return json.dumps(doc)  # JSON is YAML


def errors_of(path, code: str) -> list:
    with pytest.raises(PackError) as err:
        compile_pack(path, check_examples=False)
    found = [p for p in err.value.problems if p.code == code]
    assert found, err.value.report()
    return found


def test_the_composition_keys_default_as_the_schema_says():
    from cleo_rules.pack.compose import Declared
    from cleo_rules.resources import schemas_dir

    schema = json.loads((schemas_dir() / "pack.schema.json").read_text(encoding="utf-8"))["properties"]
    fields = {f.name: f.default for f in dataclasses.fields(Declared)}
    assert sorted(fields) == ["disable", "extends"]
    assert {name: list(value) for name, value in fields.items()} == {name: schema[name]["default"] for name in fields}


# -- the team pack of the issue ---------------------------------------------------------------------


def test_the_team_pack_checks_its_corpus_and_cleo_en_s_skipping_the_disabled_rule_s_cases(team):
    result = check(team)
    assert result.ok, result.errors()
    assert result.verdict is not None and result.verdict.corpus_report is not None
    own = result.verdict.corpus_report
    assert own.ok and [s.rule for s in own.rules] == ["correction.out-of-stock"] and own.rules[0].tp > 0
    (base, report), = result.verdict.base_reports
    assert (base.name, base.path) == ("cleo-en", rules_dir())
    assert report is not None and report.ok and report.of == "cleo-en" and report.outcomes
    cases, _, _, _ = load_cases(corpus_dir_of(rules_dir()))
    naming = [c for c in cases if "correction.change-of-mind" in (c.rule, *c.not_rules)]
    assert naming and len(report.skipped) >= len(naming)  # every case of the rule, and any it alone decided
    assert {s.rule for s in report.skipped} == {"correction.change-of-mind"}
    assert all(s.reason.endswith("disabled by team") for s in report.skipped)
    assert len(report.outcomes) + len(report.skipped) == len(cases)  # every case run or counted, none dropped
    assert "correction.change-of-mind" not in {s.rule for s in report.rules}
    doc = result.to_dict()
    assert doc["composition"]["bases"][0]["corpus"]["skipped"]["cases"] == len(report.skipped)
    assert doc["composition"]["disabled"] == [{"rule": "correction.change-of-mind", "by": "team", "of": "cleo-en"}]
    assert doc["pack"]["bases"] == [{"name": "cleo-en", "version": base.version, "hash": base.content_hash}]


def test_check_exits_0_and_says_what_was_skipped_and_why(team):
    result = CliRunner().invoke(cli, ["check", str(team)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("pack: team 0.1.0 (") and ", on cleo-en " in lines[0]
    assert "disabled: correction.change-of-mind of cleo-en (by team)" in lines
    assert any(line.startswith("corpus ok: 56 cases, all passed") for line in lines)
    skipped = [line for line in lines if "skipped:" in line]
    assert len(skipped) == 1 and "of correction.change-of-mind (disabled by team)" in skipped[0]
    assert any(line.startswith("corpus of cleo-en ok: ") for line in lines)


def test_the_team_pack_classifies_with_its_changes(team):
    base, pack = compile_pack(), compile_pack(team)
    scratch = "Scratch that, the other one."
    assert base.classify(scratch, HISTORY).rule == "correction.change-of-mind"
    assert pack.classify(scratch, HISTORY).kind != "correction"  # the disabled rule no longer fires
    with pytest.raises(KeyError):
        pack.rule("correction.change-of-mind")
    stock = pack.classify("That one is out of stock.", HISTORY)
    assert base.classify("That one is out of stock.", HISTORY).kind == "substantive"
    assert (stock.kind, stock.rule, stock.query) == ("correction", "correction.out-of-stock", stock.message)
    assert pack.origin(pack.rule("correction.out-of-stock")) == "team" and pack.origin(pack.rule("vocab.nod")) == \
        "cleo-en"
    assert len(TWELVE.split()) == 12
    assert base.classify(TWELVE, HISTORY).kind == "follow_up" and pack.classify(TWELVE, HISTORY).kind == "substantive"
    assert pack.settings == dataclasses.replace(base.settings, max_follow_up_words=11)  # the rest is cleo-en's
    assert [r.id for r in pack.corrections] == [r.id for r in base.corrections
                                                if r.id != "correction.change-of-mind"] + ["correction.out-of-stock"]
    out = CliRunner().invoke(cli, ["classify", "--pack", str(team), "That one is out of stock."]).output
    assert "rule:    correction.out-of-stock" in out and f", on cleo-en {base.version} ({base.content_hash})" in out


def test_the_manager_reloads_the_team_pack_on_a_change_to_its_own_file_and_keeps_it_on_a_bad_one(tmp_path):
    rules = write_team(tmp_path)
    manager = PackManager(rules)
    assert [b["name"] for b in manager.status()["bases"]] == ["cleo-en"]
    assert manager.classify("That one is sold out.").kind == "substantive"
    path = rules / "corrections.yaml"
    path.write_text(OUT_OF_STOCK.replace("(?:is|was|went) out of stock", "(?:is|was|went) (?:out of stock|sold out)")
                    .replace('      - "It went out of stock yesterday."', '      - "That one is sold out."'))
    manager.poll()
    assert manager.poll() and manager.reloads == 1
    assert manager.classify("That one is sold out.").rule == "correction.out-of-stock"
    serving = manager.pack.content_hash
    path.write_text(path.read_text().replace("pattern: '", "pattern: '("))  # a pattern that does not compile
    manager.poll()
    assert not manager.poll() and manager.rejections == 1 and manager.pack.content_hash == serving
    assert isinstance(manager.last_error, PackError)
    (bad,) = [p for p in manager.last_error.problems if p.code == "E130"]
    assert (bad.pack, bad.rule) == ("team", "correction.out-of-stock") and bad.file.endswith("corrections.yaml")


# -- several bases, directories, errors ---------------------------------------------------------------


def directory_bases(tmp_path: Path) -> tuple[Path, Path]:
    """Two directory packs sharing the id correction.already-tried: ``b1`` (mini) and ``b2`` (one correction)."""
    b1 = tmp_path / "b1"
    shutil.copytree(MINI, b1)
    write(b2 := tmp_path / "b2" / "pack.yaml", manifest("b2", files=["corrections.yaml"]))
    write(tmp_path / "b2" / "corrections.yaml", r"""
        kind: corrections
        rules:
          - id: correction.already-tried
            description: The user has given it a go.
            pattern: '\bgave (?:that|it) a go\b'
            examples: ["We gave it a go last week."]
            counterexamples: ["Shall we give it a go?"]
            request_forms: ["Try the second one, please."]
        """)
    return b1, b2.parent


@pytest.mark.parametrize("order, winner, loser", [(["./b1", "./b2"], "b2", "mini"), (["./b2", "./b1"], "mini", "b2")])
def test_with_several_bases_the_later_one_wins_a_shared_id_in_the_first_one_s_place(tmp_path, order, winner, loser):
    directory_bases(tmp_path)
    write(tmp_path / "pack.yaml", manifest("team", extends=order))
    pack = compile_pack(tmp_path)  # the examples of every rule hold in the composed pack
    rule = pack.rule("correction.already-tried")
    assert pack.origin(rule) == winner and [b.name for b in pack.composition.bases] == [
        {"./b1": "mini", "./b2": "b2"}[o] for o in order]
    change = pack.composition.replaced["correction.already-tried"]
    assert (change.by, change.of) == (winner, loser)
    gave, tried = pack.classify("We gave it a go last week."), pack.classify("We already tried it.")
    assert (gave.rule == "correction.already-tried") == (winner == "b2")
    assert (tried.rule == "correction.already-tried") == (winner == "mini")


def test_a_rule_with_a_base_rule_s_id_replaces_it_in_its_place(tmp_path):
    base = compile_pack()
    second = base.corrections[1]
    write(tmp_path / "pack.yaml", manifest("t", extends=["cleo-en"], files=["corrections.yaml"]))
    write(tmp_path / "corrections.yaml", f"""
        kind: corrections
        rules:
          - id: {second.id}
            description: Replaced.
            pattern: '\\bnever again\\b'
            examples: ["Never again, thanks."]
            counterexamples: ["Could we go again?"]
            request_forms: ["The second one, please."]
        """)
    pack = compile_pack(tmp_path, check_examples=False)
    assert [r.id for r in pack.corrections] == [r.id for r in base.corrections]
    assert pack.corrections[1].description == "Replaced." and pack.origin(pack.corrections[1]) == "t"
    assert pack.classify("Never again, thanks.").rule == second.id


def test_a_problem_in_a_base_names_the_base_and_its_file(tmp_path):
    directory_bases(tmp_path)
    corrections = tmp_path / "b2" / "corrections.yaml"
    corrections.write_text(corrections.read_text().replace("We gave it a go", "We gave them a go"))
    write(tmp_path / "pack.yaml", manifest("team", extends=["./b1", "./b2"]))
    result = check(tmp_path, corpus=False)
    (bad,) = [p for p in result.errors() if p.code == "E134"]
    assert (bad.pack, bad.rule, bad.line) == ("b2", "correction.already-tried", 7) and bad.file.endswith(
        "b2/corrections.yaml")
    assert bad.format().startswith(f"{bad.file}:7:") and " correction.already-tried (pack b2) at " in bad.format()


def test_a_cycle_of_extends_is_located_at_the_item_that_closes_it_and_named(tmp_path):
    write(tmp_path / "a" / "pack.yaml", "pack: a\nversion: 1.0.0\nlocale: en\nextends:\n  - ../b\n")
    b = write(tmp_path / "b" / "pack.yaml", "pack: b\nversion: 1.0.0\nlocale: en\nextends: [cleo-en, ../a]\n")
    (cycle,) = errors_of(tmp_path / "a", "E152")
    assert cycle.message == "extends '../a' makes a cycle: a -> b -> a"
    column = b.read_text().splitlines()[3].index("../a") + 1
    assert (cycle.file, cycle.line, cycle.col, cycle.pointer, cycle.pack) == (str(b), 4, column, "/extends/1", "b")
    assert cycle.format().startswith(f"{b}:4:{column}: error[E152] (pack b) at /extends/1: ")
    write(tmp_path / "self" / "pack.yaml", "pack: self\nversion: 1.0.0\nlocale: en\nextends: [./]\n")
    (alone,) = errors_of(tmp_path / "self", "E152")
    assert alone.message.endswith("makes a cycle: self -> self") and (alone.line, alone.col) == (4, 11)


def test_a_base_that_cannot_be_found_is_located_with_the_nearest_name(tmp_path):
    write(tmp_path / "t" / "pack.yaml", manifest("t", extends=["cleo-em", "../nowhere"]))
    (name, where) = errors_of(tmp_path / "t", "E150")
    assert name.message.startswith("extends 'cleo-em': no rule pack named 'cleo-em'") and name.pointer == "/extends/0"
    assert "did you mean 'cleo-en'?" in name.help
    assert where.message == f"extends '../nowhere': no rule pack at {tmp_path / 'nowhere'}: pack.yaml not found"
    assert where.pointer == "/extends/1" and where.line == 1
    shutil.copytree(MINI, tmp_path / "u" / "mini")  # a directory named as if it were an installed pack
    write(tmp_path / "u" / "pack.yaml", manifest("u", extends=["mini"]))
    (bare,) = errors_of(tmp_path / "u", "E150")
    assert bare.help.startswith("did you mean ./mini? a directory is named by a path")


def test_a_version_range_not_met_or_not_readable_is_located_at_the_range(tmp_path):
    bundled = compile_pack()
    write(tmp_path / "pack.yaml", manifest("t", extends=[{"pack": "cleo-en", "version": ">=7"}, "cleo-en@^x.y"]))
    (outside,) = errors_of(tmp_path, "E151")
    (unread,) = errors_of(tmp_path, "E154")
    assert outside.pointer == "/extends/0/version" and f"cleo-en {bundled.version} is outside the range >=7" in \
        outside.message
    major, minor = bundled.version.split(".")[:2]
    assert f"did you mean '^{major}.{minor}'?" in outside.help
    assert unread.pointer == "/extends/1" and unread.message.startswith("cleo-en: invalid version range '^x.y'")


def test_a_disable_id_no_pack_has_is_located_with_the_nearest_id(tmp_path):
    write(tmp_path / "pack.yaml", manifest("t", extends=["cleo-en"], disable=["correction.change-of-mnd"]))
    (unknown,) = errors_of(tmp_path, "E153")
    assert unknown.pointer == "/disable/0" and unknown.file == str(tmp_path / "pack.yaml") and unknown.line == 1
    assert unknown.message == "disable names 'correction.change-of-mnd', which no rule of cleo-en, t has"
    assert "did you mean 'correction.change-of-mind'?" in unknown.help


def test_extends_items_of_the_wrong_shape_are_schema_findings_and_files_are_needed_without_extends(tmp_path):
    write(tmp_path / "pack.yaml", "pack: t\nversion: 1.0.0\nlocale: en\nextends:\n  - 3\n  - {pack: cleo-en, versoin: '^1'}\n")
    with pytest.raises(PackError) as err:
        compile_pack(tmp_path)
    by_code = {p.code: p for p in err.value.problems}
    assert by_code["E123"].pointer == "/extends/0" and by_code["E121"].help.startswith("did you mean 'version'?")
    write(tmp_path / "pack.yaml", "pack: t\nversion: 1.0.0\nlocale: en\n")
    (missing,) = errors_of(tmp_path, "E122")
    assert missing.message == "missing required key 'files'"


# -- the cache, the runtime, the service and the traces ----------------------------------------------------


def test_one_byte_of_a_base_file_changes_the_cache_key_and_the_pack_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.ENV, str(tmp_path / "cache"))
    shutil.copytree(MINI, tmp_path / "base")
    team = write(tmp_path / "team" / "pack.yaml", manifest("team", extends=["../base"])).parent
    first = compile_pack(team)
    again = compile_pack(team)  # read back: the composition and where each rule comes from as compiled
    assert len(list((tmp_path / "cache").glob("pack-*.json"))) == 1
    assert again.composition == first.composition and again.content_hash == first.content_hash
    origins = [again.origin(r) for r in again.rules]
    assert origins == [first.origin(r) for r in first.rules] == ["mini"] * len(compile_pack(MINI).rules)
    assert again.source(again.rule("vocab.nod")).path == tmp_path / "base" / "vocabulary.yaml"
    key = cache_key.key(team, team / "pack.yaml")
    corrections = tmp_path / "base" / "corrections.yaml"
    corrections.write_text(corrections.read_text().replace("has tried", "had tried"))
    assert cache_key.key(team, team / "pack.yaml") != key
    changed = compile_pack(team)
    assert changed.rule("correction.already-tried").description == "The user had tried it already."
    assert changed.content_hash != first.content_hash
    assert changed.composition.bases[0].content_hash != first.composition.bases[0].content_hash


def test_a_change_in_a_directory_base_reloads_the_pack_built_on_it(tmp_path):
    shutil.copytree(MINI, tmp_path / "base")
    team = write(tmp_path / "team" / "rules" / "pack.yaml", manifest("team", extends=["../../base"])).parent
    manager = PackManager(team)
    assert manager.classify("We gave that a go already.").kind != "correction"
    corrections = tmp_path / "base" / "corrections.yaml"
    corrections.write_text(corrections.read_text().replace(r"(?:already )?tried (?:that|this|it)",
                                                           r"(?:(?:already )?tried|gave) (?:that|this|it)"))
    manager.poll()
    assert manager.poll() and manager.reloads == 1
    assert manager.classify("We gave that a go already.").rule == "correction.already-tried"


def test_edit_served_as_judged_with_symlinked_pack_one_resolution_of_a_relative_base(tmp_path, monkeypatch):
    """Issue 30, item 1, below the service (tests/serve/test_edit_bases.py drives it): the base a relative path names
    is found from the pack's real directory, links followed, by compiling, the watcher, the cache's key and ``check``
    alike, whichever path names the pack."""
    from cleo_rules.pack.compose import base_dir, directory_bases

    monkeypatch.setenv(cache.ENV, str(tmp_path / "cache"))
    shutil.copytree(MINI, tmp_path / "real" / "deep" / "b")
    write(tmp_path / "work" / "b" / "pack.yaml", manifest("elsewhere", version="9.0.0"))
    real = write(tmp_path / "real" / "deep" / "p" / "pack.yaml", manifest("p", extends=["../b"])).parent
    (tmp_path / "work" / "p").symlink_to(real, target_is_directory=True)
    named = tmp_path / "work" / "p"
    assert base_dir("../b", named) == base_dir("../b", real) == tmp_path / "real" / "deep" / "b"
    assert directory_bases(named) == directory_bases(real) == [tmp_path / "real" / "deep" / "b"]
    for where in (named, real, named):  # the second time from the cache
        pack = compile_pack(where, check_examples=False)
        assert [(b.name, b.path) for b in pack.composition.bases] == [("mini", tmp_path / "real" / "deep" / "b")]
    assert check(named).ok and check(named).pack.composition.bases[0].path == tmp_path / "real" / "deep" / "b"
    manager = PackManager(named)  # a change in the base the pack is built on reloads it
    assert manager.classify("We gave that a go already.").kind != "correction"
    corrections = tmp_path / "real" / "deep" / "b" / "corrections.yaml"
    corrections.write_text(corrections.read_text().replace(r"(?:already )?tried (?:that|this|it)",
                                                           r"(?:(?:already )?tried|gave) (?:that|this|it)"))
    manager.poll()
    assert manager.poll() and manager.reloads == 1
    assert manager.classify("We gave that a go already.").rule == "correction.already-tried"


def test_a_turn_with_a_composed_pack_records_the_base_in_its_trace(tmp_path, toy_embedder):
    from cleo_rules.retrieval import MemoryStore
    from cleo_rules.trace import read_traces
    from cleo_rules.turn import Recall

    shutil.copytree(MINI, tmp_path / "base")
    team = write(tmp_path / "team" / "pack.yaml", manifest("team", extends=["../base"])).parent
    pack = compile_pack(team)
    with MemoryStore.open(tmp_path / "memory", embedder=toy_embedder) as store:
        Recall(store, pack).turn("We already tried it.")
        Recall(store, compile_pack(tmp_path / "base")).turn("We already tried it.")
        rows = list(read_traces(store))
    (base,) = pack.composition.bases
    assert [r["pack_bases"] for r in rows] == [[{"name": "mini", "version": "1.0.0", "hash": base.content_hash}], []]
    assert [r["pack"] for r in rows] == ["team", "mini"]


def test_the_service_shows_which_pack_each_rule_comes_from(team):
    from starlette.testclient import TestClient

    from cleo_rules.serve import ServeSettings, create_app

    app = create_app(ServeSettings(pack=str(team), watch_interval=0))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        deadline = time.monotonic() + 90
        while not app.state.service.ready and time.monotonic() < deadline:  # the pack is judged first
            time.sleep(0.05)
        rules = client.get("/v1/pack/rules").json()
        status = client.get("/v1/pack").json()
        base_rule = next(r for r in rules["rules"] if r["id"] == "vocab.nod")
        source = client.get("/v1/pack/source", params={"file": base_rule["file"]})
    by_id = {r["id"]: r["pack"] for r in rules["rules"]}
    assert by_id["correction.out-of-stock"] == "team" and by_id["vocab.nod"] == "cleo-en"
    assert "correction.change-of-mind" not in by_id
    assert rules["disabled"] == [{"rule": "correction.change-of-mind", "by": "team", "of": "cleo-en"}]
    assert [b["name"] for b in rules["bases"]] == [b["name"] for b in status["bases"]] == ["cleo-en"]
    assert source.status_code == 200 and any("vocab.nod" in line for line in source.json()["lines"])


def test_junit_cases_of_a_composed_pack_are_its_own_whether_it_compiles_or_not(tmp_path):
    from cleo_rules.findings import outline

    rules = write_team(tmp_path)
    green = check(rules).findings()
    assert [r.id for r in green.rules] == ["correction.out-of-stock"]
    (rules / "corrections.yaml").write_text(OUT_OF_STOCK.replace("pattern: '", "pattern: '("))
    red = check(rules)
    assert not red.ok and [r.id for r in red.findings().rules] == [r.id for r in outline(rules)[1]] == [
        "correction.out-of-stock"]


# -- properties ------------------------------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cleo_rules.pack.compose import read_refs  # noqa: E402
from cleo_rules.reading.load import parse_yaml  # noqa: E402
from cleo_rules.pack.discovery import VersionRange, VersionRangeError  # noqa: E402

IDS = ("c.one", "c.two", "c.three", "c.four")


def correction(base: int, rid: str) -> dict:
    word = f"w{base}x{IDS.index(rid)}"
    return {"id": rid, "description": f"{rid} of b{base}", "pattern": rf"\b{word}\b", "examples": [f"{word} is what we got"],
            "counterexamples": ["nothing here at all"], "request_forms": ["nothing to ask for"]}


def composition(root: Path, defined: list[list[str]], disable: list[str]) -> Path:
    for b, ids in enumerate(defined):
        write(root / f"b{b}" / "pack.yaml", manifest(f"b{b}", files=["corrections.yaml"]))
        write(root / f"b{b}" / "corrections.yaml",
              json.dumps({"kind": "corrections", "rules": [correction(b, rid) for rid in ids]}))
    write(root / "t" / "pack.yaml", manifest("t", extends=[f"../b{b}" for b in range(len(defined))], disable=disable))
    return root / "t"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(defined=st.lists(st.lists(st.sampled_from(IDS), min_size=1, max_size=4, unique=True), min_size=1, max_size=3),
       data=st.data())
def test_the_last_pack_to_define_an_id_wins_in_the_first_one_s_place_and_disable_takes_it_off(
        tmp_path_factory, monkeypatch, defined, data):
    union = list(dict.fromkeys(rid for ids in defined for rid in ids))  # in the order first defined
    disable = data.draw(st.lists(st.sampled_from(union), unique=True))
    monkeypatch.setenv(cache.ENV, "off")
    pack = compile_pack(composition(tmp_path_factory.mktemp("c"), defined, disable), check_examples=False)
    assert [r.id for r in pack.corrections] == [rid for rid in union if rid not in disable]
    assert set(pack.composition.disabled) == set(disable)
    assert set(pack.composition.replaced) == {rid for rid in union if rid not in disable
                                              and sum(rid in ids for ids in defined) > 1}
    for rid in union:
        definers = [b for b, ids in enumerate(defined) if rid in ids]
        for b in definers:
            fired = pack.classify(f"w{b}x{IDS.index(rid)} is what we got").rule
            assert (fired == rid) == (rid not in disable and b == definers[-1]), (rid, b, fired)
        if rid not in disable:
            assert pack.origin(pack.rule(rid)) == f"b{definers[-1]}"
            change = pack.composition.replaced.get(rid)
            assert change is None or (change.by, change.of) == (f"b{definers[-1]}", f"b{definers[0]}")


VERSIONS = st.tuples(*[st.integers(0, 2)] * 3).map(lambda v: ".".join(map(str, v)))
RANGES = st.one_of(
    st.builds(lambda op, v: f"{op}{v}", st.sampled_from([">=", ">", "<", "<=", "^", "~", "=", ""]),
              st.one_of(VERSIONS, st.sampled_from(["1", "1.2", "1.x", "0.1"]))),
    st.builds(lambda a, b: f">={a},<{b}", VERSIONS, VERSIONS),
    st.sampled_from(["", "bogus", "^", ">=1.0 ||", "1.2.3.4"]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(version=VERSIONS, wanted=RANGES)
def test_a_base_outside_the_range_asked_is_an_e151_and_a_range_that_cannot_be_read_an_e154(
        tmp_path_factory, monkeypatch, version, wanted):
    monkeypatch.setenv(cache.ENV, "off")
    root = tmp_path_factory.mktemp("v")
    write(root / "base" / "pack.yaml", manifest("base", version=version, files=["c.yaml"]))
    write(root / "base" / "c.yaml", "kind: corrections\nrules: []\n")
    write(root / "t" / "pack.yaml", manifest("t", extends=[{"pack": "../base", "version": wanted}]))
    try:
        holds = VersionRange.parse(wanted).contains(version)
    except VersionRangeError:
        holds = None
    if holds:
        assert compile_pack(root / "t").composition.bases[0].version == version
        return
    if wanted == "":  # an empty range is the schema's finding (minLength)
        assert errors_of(root / "t", "E125")[0].pointer == "/extends/0/version"
        return
    (found,) = errors_of(root / "t", "E154" if holds is None else "E151")
    assert found.pointer == "/extends/0/version" and found.file == str(root / "t" / "pack.yaml")


@given(name=st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True), wanted=RANGES.filter(lambda r: r.strip()))
def test_the_string_form_name_at_range_reads_as_the_mapping_form(name, wanted):
    def refs(item):
        src, _ = parse_yaml(json.dumps({"extends": [item]}), Path("pack.yaml"), "pack.yaml")
        assert src is not None
        problems: list = []
        return [(r.spec, str(r.range)) for r in read_refs(src, problems)], [p.code for p in problems]

    assert refs(f"{name}@{wanted}") == refs({"pack": name, "version": wanted})
    assert refs(name) == ([(name, "None")], [])


def test_text_output_names_an_installed_base_by_its_name_and_json_keeps_the_path(tmp_path):
    base = tmp_path / "lib" / "python3.11" / "site-packages" / "shared_pack" / "rules"
    shutil.copytree(MINI, base)
    corrections = base / "corrections.yaml"
    corrections.write_text(corrections.read_text().replace("already )?tried", "already )?tried("))
    write(tmp_path / "team" / "pack.yaml", manifest("team", extends=[str(base)]))
    text = CliRunner().invoke(cli, ["check", str(tmp_path / "team")])
    assert text.exit_code == 1
    assert "<installed pack mini>/corrections.yaml:5:" in text.output and "site-packages" not in text.output
    assert "error[E130] correction.already-tried (pack mini)" in text.output
    doc = json.loads(CliRunner().invoke(cli, ["check", str(tmp_path / "team"), "--format", "json"]).output)
    (bad,) = [p for p in doc["problems"] if p["code"] == "E130"]
    assert bad["pack"] == "mini" and "site-packages" in bad["file"]


def test_a_base_whose_manifest_cannot_be_read_and_too_many_packs_are_located_errors(tmp_path):
    write(tmp_path / "broken" / "pack.yaml", "pack: [broken\n")
    write(tmp_path / "t" / "pack.yaml", manifest("t", extends=["../broken"]))
    (unread,) = errors_of(tmp_path / "t", "E155")
    (syntax,) = errors_of(tmp_path / "t", "E110")
    assert unread.pointer == "/extends/0" and unread.file == str(tmp_path / "t" / "pack.yaml")
    assert syntax.file == str(tmp_path / "broken" / "pack.yaml")
    for i in range(20):  # a chain: p0 extends p1, which extends p2, ...
        write(tmp_path / f"p{i}" / "pack.yaml", manifest(f"p{i}", extends=[f"../p{i + 1}"] if i < 19 else None,
                                                          files=[] if i < 19 else ["c.yaml"]))
    write(tmp_path / "p19" / "c.yaml", "kind: corrections\nrules: []\n")
    (many,) = errors_of(tmp_path / "p0", "E156")
    assert many.message.endswith("the composition would hold more than 16 packs") and many.pointer == "/extends/0"


def test_a_base_case_naming_no_rule_is_skipped_when_the_base_alone_decides_it_by_a_disabled_rule(tmp_path):
    shutil.copytree(MINI, tmp_path / "base" / "rules")
    write(tmp_path / "base" / "corpus" / "regressions.yaml", """
        kind: corpus
        cases:
          - {id: r/tried, message: "We already tried it, twice.", expect: correction}
          - {id: r/tell, message: "Could you tell me more about it?", expect: follow_up}
          - {id: r/named, message: "We already tried that one.", expect: correction, rule: correction.already-tried}
        """)
    write(tmp_path / "t" / "pack.yaml", manifest("t", extends=["../base/rules"], disable=["correction.already-tried"]))
    result = check(tmp_path / "t")
    assert result.verdict is not None
    (_, report), = result.verdict.base_reports
    assert report is not None and [o.case.id for o in report.outcomes] == ["r/tell"] and report.outcomes[0].ok
    assert [(s.case.id, s.rule, s.reason) for s in report.skipped] == [
        ("r/named", "correction.already-tried", "disabled by t"),
        ("r/tried", "correction.already-tried", "decided by it in mini alone; disabled by t")]
