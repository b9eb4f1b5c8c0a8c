"""What a process remembers while a pack is edited (cleo_rules.incremental, issue 24): an edit is judged again only in
what it changed, and the judgement is exactly the full one.

Each memory is keyed by everything its value is made of (a file's text, a pattern, a group's hash, the pack's
decision key); these tests hold every judgement made with what is remembered to the judgement made from nothing
(:func:`cleo_rules.incremental.clear_memos`) and to `cleo-rules check` of the edit written, and each key to the inputs it
must tell apart.
"""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleo_rules.corpus.generate import generate
from cleo_rules.corpus.judge import decision_key
from cleo_rules.editing import edit_file, read_file
from cleo_rules.incremental import clear_memos
from cleo_rules.reading import load
from cleo_rules.pack.compile import _compile, compile_pack
from cleo_rules.reading.validate import find_schema_problems
from cleo_rules.resources import rules_dir
from cleo_rules.pack_check import check

FOLLOW_UPS = "rules/follow_ups.yaml"


@pytest.fixture
def team(tmp_path, monkeypatch):
    """The standalone starter pack, the working directory its repository."""
    from cleo_rules.starter import init_pack

    init_pack(tmp_path / "team", standalone=True)
    monkeypatch.chdir(tmp_path / "team")
    monkeypatch.setenv("CLEO_RULES_CACHE", "off")  # every judgement is worked out, never read back from disk
    return tmp_path / "team"


def errors_of(problems) -> list[str]:
    return sorted(p.format() for p in problems if p.severity == "error")


def judged_alike(pack_dir: Path, name: str, text: str) -> dict:
    """Judge ``text`` as ``name`` with what is remembered, then from nothing, then as `check` judges it written:
    all three the same. The first judgement's document."""
    warm = edit_file(pack_dir, name, text, write=False).to_dict()
    clear_memos()
    cold = edit_file(pack_dir, name, text, write=False).to_dict()
    assert warm == cold
    path = Path(name)
    before = path.read_text(encoding="utf-8")
    path.write_text(text, encoding="utf-8")
    try:
        clear_memos()
        full = check(pack_dir)
        found = full.errors()
        assert errors_of(found) == sorted(p["file"] and _format(p) for p in warm["problems"]
                                          if p["severity"] == "error")
    finally:
        path.write_text(before, encoding="utf-8")
    return warm


def _format(p: dict) -> str:
    from cleo_rules.errors import Problem

    fields = {k: v for k, v in p.items() if k in Problem.__dataclass_fields__}
    return Problem(**fields).format()


PATTERN = re.compile(r"(    pattern: ')([^'\n]*)(')")


@st.composite
def edits(draw, text: str):
    """An edit of a rule file: a description, a pattern or a bound changed, in any of its rules."""
    what = draw(st.sampled_from(["description", "pattern", "bound"]))
    if what == "description":
        at = [m.end() for m in re.finditer(r"\n    description: ", text)]
        i = draw(st.sampled_from(at))
        return text[:i] + draw(st.text(alphabet="abc ", min_size=1, max_size=5)) + text[i:]
    if what == "bound":
        return text.replace("max_content_words: 3", f"max_content_words: {draw(st.integers(0, 5))}", 1)
    found = list(PATTERN.finditer(text))
    m = draw(st.sampled_from(found))
    body = m.group(2)
    start = draw(st.integers(0, len(body)))
    end = draw(st.integers(start, min(len(body), start + 6)))
    new = body[:start] + draw(st.text(alphabet=list("ab |?()mr"), max_size=4)) + body[end:]
    return text[:m.start(2)] + new + text[m.end(2):]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_edit_judged_with_what_is_remembered_is_the_full_check(team, data):
    text, _ = read_file(team / "rules", FOLLOW_UPS)
    for _ in range(3):  # one after another: each judged with what the ones before left remembered
        new = data.draw(edits(text))
        judged_alike(team / "rules", FOLLOW_UPS, new)


def test_edits_of_the_bundled_pack_copied_are_judged_as_the_full_check(tmp_path, monkeypatch):
    monkeypatch.setenv("CLEO_RULES_CACHE", "off")
    shutil.copytree(rules_dir(), tmp_path / "rules")
    shutil.copytree(rules_dir().parent / "corpus", tmp_path / "corpus")
    monkeypatch.chdir(tmp_path)
    text = (tmp_path / FOLLOW_UPS).read_text(encoding="utf-8")
    judged_alike(tmp_path / "rules", FOLLOW_UPS, text)
    described = re.sub(r"(\n    description: )", r"\g<1>(edited) ", text, count=1)
    assert judged_alike(tmp_path / "rules", FOLLOW_UPS, described)["ok"]
    m = PATTERN.search(text)
    assert m is not None
    narrowed = text[:m.start(2)] + "zzz-" + text[m.start(2):]  # the rule fires on none of its cases now
    broken = judged_alike(tmp_path / "rules", FOLLOW_UPS, narrowed)
    assert not broken["ok"] and any(p["code"] == "E230" for p in broken["problems"])
    assert judged_alike(tmp_path / "rules", FOLLOW_UPS, described)["ok"]  # and back: nothing stale


# -- the keys ----------------------------------------------------------------------------------------------------


def test_a_file_read_again_is_the_same_document_at_its_own_path_and_one_byte_makes_another(tmp_path):
    clear_memos()
    text = (rules_dir() / "follow_ups.yaml").read_text(encoding="utf-8")
    a, problems = load.parse_yaml(text, tmp_path / "a.yaml", "a.yaml")
    b, _ = load.parse_yaml(text, tmp_path / "b.yaml", "b.yaml")
    assert a is not None and b is not None and not problems
    assert (b.path, b.display) == (tmp_path / "b.yaml", "b.yaml") and b.data is a.data and b.values == a.values
    changed = text.replace("description: ", "description: x", 1)
    c, _ = load.parse_yaml(changed, tmp_path / "a.yaml", "a.yaml")
    assert c is not None and c.data is not a.data and c.data != a.data
    clear_memos()
    fresh, _ = load.parse_yaml(changed, tmp_path / "a.yaml", "a.yaml")
    assert fresh is not None and fresh.data == c.data and fresh.values == c.values and fresh.keys == c.keys


def test_a_document_remembered_is_never_changed_by_compiling_and_judging_its_pack(team):
    clear_memos()
    text = (team / FOLLOW_UPS).read_text(encoding="utf-8")
    src, _ = load.parse_yaml(text, team / FOLLOW_UPS, FOLLOW_UPS)
    assert src is not None
    kept = copy.deepcopy((src.data, src.values, src.keys, src.styles))
    assert check(team / "rules").ok
    again, _ = load.parse_yaml(text, team / FOLLOW_UPS, FOLLOW_UPS)
    assert again is not None and again.data is src.data
    assert (again.data, again.values, again.keys, again.styles) == kept


def test_schema_findings_remembered_are_placed_at_the_file_read(tmp_path):
    clear_memos()
    text = "kind: follow_ups\nrules:\n  - id: follow_up.x\n    pattern: 'x'\n    colour: blue\n"
    a, _ = load.parse_yaml(text, tmp_path / "a.yaml", "one/a.yaml")
    b, _ = load.parse_yaml(text, tmp_path / "b.yaml", "two/b.yaml")
    assert a is not None and b is not None
    first, second = find_schema_problems(a, "follow_ups"), find_schema_problems(b, "follow_ups")
    assert first and {p.file for p in first} == {"one/a.yaml"} and {p.file for p in second} == {"two/b.yaml"}
    assert [(p.code, p.line, p.col, p.message) for p in first] == [(p.code, p.line, p.col, p.message)
                                                                   for p in second]


def test_what_is_remembered_never_crosses_from_one_pack_to_another(tmp_path, monkeypatch):
    """Two packs alike but for one pattern: each compiles, generates and is judged as its own files say."""
    from cleo_rules.starter import init_pack

    monkeypatch.setenv("CLEO_RULES_CACHE", "off")
    for name in ("a", "b"):
        init_pack(tmp_path / name, standalone=True)
    path = tmp_path / "b" / FOLLOW_UPS
    path.write_text(path.read_text(encoding="utf-8").replace("(?:tell|show|give)", "(?:tell|show)", 1),
                    encoding="utf-8")
    clear_memos()
    a = check(tmp_path / "a" / "rules")
    b = check(tmp_path / "b" / "rules")
    clear_memos()
    b_alone = check(tmp_path / "b" / "rules")
    assert a.ok and not b.ok
    assert errors_of(b.errors(10_000)) == errors_of(b_alone.errors(10_000))
    assert a.pack is not None and b.pack is not None
    assert a.pack.follow_ups[0].pattern.startswith(r"\b(?:tell|show|give)")
    assert b.pack.follow_ups[0].pattern.startswith(r"\b(?:tell|show) ")
    assert decision_key(a.pack) != decision_key(b.pack)


def test_the_decision_key_holds_what_decides_and_nothing_else(team):
    base = _compile(team / "rules")
    path = team / FOLLOW_UPS
    text = path.read_text(encoding="utf-8")

    def key_with(new: str) -> str:
        path.write_text(new, encoding="utf-8")
        try:
            return decision_key(_compile(team / "rules"))
        finally:
            path.write_text(text, encoding="utf-8")

    assert key_with(text) == decision_key(base)
    assert key_with(text.replace("\n    description: ", "\n    description: edited ", 1)) == decision_key(base)
    assert key_with(text.replace("\nkind: follow_ups", "\n# a comment\nkind: follow_ups", 1)) == decision_key(base)
    assert key_with(text.replace("(?:me|us)", "(?:me|us|them)", 1)) != decision_key(base)
    assert key_with(text.replace("max_content_words: 3", "max_content_words: 2", 1)) != decision_key(base)
    manifest = team / "rules" / "pack.yaml"
    settings_text = manifest.read_text(encoding="utf-8")
    changed = re.sub(r"max_follow_up_words: \d+", "max_follow_up_words: 9", settings_text, count=1)
    assert changed != settings_text
    manifest.write_text(changed, encoding="utf-8")
    try:
        assert decision_key(_compile(team / "rules")) != decision_key(base)
    finally:
        manifest.write_text(settings_text, encoding="utf-8")


def test_a_template_changed_generates_that_rules_cases_again_and_no_other(team):
    clear_memos()
    before = generate(compile_pack(team / "rules", check_examples=False))
    path = team / FOLLOW_UPS
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("{Tell|Show|Give} me more", "{Tell|Show} me more", 1), encoding="utf-8")
    warm = generate(compile_pack(team / "rules", check_examples=False))
    clear_memos()
    cold = generate(compile_pack(team / "rules", check_examples=False))
    assert [(g.name, g.hash, g.cases) for g in warm] == [(g.name, g.hash, g.cases) for g in cold]
    changed = [g.name for g, old in zip(warm, before) if g.cases != old.cases]
    assert changed == ["follow_up.tell-me-more"]


# -- a base named by a relative path -------------------------------------------------------------------------------


def test_a_team_pack_on_a_base_named_by_a_relative_path_is_edited_with_that_base(tmp_path, monkeypatch):
    from cleo_rules.starter import init_pack

    monkeypatch.setenv("CLEO_RULES_CACHE", "off")
    base = tmp_path / "shared" / "base"
    init_pack(base, standalone=True)
    init_pack(tmp_path / "team")
    manifest = tmp_path / "team" / "rules" / "pack.yaml"
    text = manifest.read_text(encoding="utf-8")
    manifest.write_text(text.replace("  - pack: cleo-en\n    version: \"^1.0\"", "  - pack: ../../shared/base/rules"),
                        encoding="utf-8")
    assert "../../shared/base/rules" in manifest.read_text(encoding="utf-8")
    monkeypatch.chdir(tmp_path / "team")
    on_disk = check(tmp_path / "team" / "rules")
    assert on_disk.ok, [p.format() for p in on_disk.errors()]
    assert [b.name for b in on_disk.pack.composition.bases] == ["base"]
    name = "rules/corrections.yaml"
    own, sha = read_file(tmp_path / "team" / "rules", name)
    edit = edit_file(tmp_path / "team" / "rules", name, own.replace("kind:", "# edited\nkind:", 1), base=sha)
    assert edit.written and edit.ok, [p.format() for p in edit.problems]
    # a base's error is placed at the base's own file, never at the copy
    broken = (base / "rules" / "follow_ups.yaml")
    good = broken.read_text(encoding="utf-8")
    broken.write_text(good.replace("max_content_words: 3", "max_content_words: lots", 1), encoding="utf-8")
    refused = edit_file(tmp_path / "team" / "rules", name, own, base=edit.sha256)
    assert not refused.written
    assert any(p.file.endswith("shared/base/rules/follow_ups.yaml") for p in refused.errors()), \
        [p.format() for p in refused.errors()]
    assert all("cleo-rules-edit-" not in f"{p.file} {p.message}" for p in refused.problems)
    # the manifest edited to name the base one directory further up resolves from where the pack is, too
    (tmp_path / "base").symlink_to(base, target_is_directory=True)
    broken.write_text(good, encoding="utf-8")
    now, sha = read_file(tmp_path / "team" / "rules", "rules/pack.yaml")
    moved = edit_file(tmp_path / "team" / "rules", "rules/pack.yaml",
                      now.replace("../../shared/base/rules", "../../base/rules"), base=sha, write=False)
    assert moved.ok, [p.format() for p in moved.problems]


# -- judged ahead of the first edit --------------------------------------------------------------------------------


def test_a_pack_judged_ahead_of_its_edits_leaves_its_first_edit_only_what_it_changed(tmp_path, monkeypatch):
    from cleo_rules.editing import warm
    from cleo_rules.starter import init_pack

    monkeypatch.setenv("CLEO_RULES_CACHE", "off")
    init_pack(str(tmp_path / "team"))
    monkeypatch.chdir(tmp_path / "team")
    pack_dir, name = tmp_path / "team" / "rules", "rules/corrections.yaml"
    files = {p: p.read_bytes() for p in (tmp_path / "team").rglob("*") if p.is_file()}
    clear_memos()
    warm(pack_dir)
    assert {p: p.read_bytes() for p in (tmp_path / "team").rglob("*") if p.is_file()} == files  # nothing written
    parsed: list[str] = []
    real = load._parse_text

    def parse(text, path, display, min_flow_items):
        parsed.append(display)
        return real(text, path, display, min_flow_items)

    monkeypatch.setattr(load, "_parse_text", parse)
    text, _ = read_file(pack_dir, name)
    new = text.replace("\nkind: corrections", "\n# edited\nkind: corrections", 1)
    first = edit_file(pack_dir, name, new, write=False)
    assert first.ok and len(parsed) == 1 and parsed[0].endswith("corrections.yaml")  # cleo-en's files are known
    clear_memos()
    assert edit_file(pack_dir, name, new, write=False).to_dict() == first.to_dict()
    warm(rules_dir())  # the bundled pack is never edited: nothing judged, nothing raised
