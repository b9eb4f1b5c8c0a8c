"""Editing a team's own pack (cleo_rules.editing, issue 24): the whole pack judged, written only if it passes.

The library behind `cleo-rules playground --writable-pack` (tests/serve/test_playground_editing.py drives the
endpoints, tests/serve/test_playground_browser.py the page). Each edit is judged by the serving gate's own
judgement on a copy of the pack and its corpus; its problems are placed at the real files; nothing is
written unless the pack passes, and what is written replaces the file in one rename.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleo_rules import runtime
from cleo_rules.editing import EditConflict, edit_file, editable_files, read_file, refuse_unwritable
from cleo_rules.errors import UsageError
from cleo_rules.reading.load import MAX_FILE_BYTES
from cleo_rules.resources import rules_dir
from cleo_rules.runtime import PackManager, load_checked
from cleo_rules.pack_check import check

FOLLOW_UPS = "rules/follow_ups.yaml"


@pytest.fixture
def team(tmp_path, monkeypatch):
    """A pack started with `cleo-rules init`, the working directory its repository (files are named rules/...)."""
    from cleo_rules.starter import init_pack

    init_pack(tmp_path / "team", standalone=True)
    monkeypatch.chdir(tmp_path / "team")
    return tmp_path / "team"


def staging_dirs() -> set[str]:
    return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith("cleo-rules-edit-")}


def no_copy_named(edit) -> None:
    """No problem names the copy the pack was judged in: every one is placed at the real files."""
    for p in edit.problems:
        text = f"{p.file} {p.message} {p.help}"
        assert "cleo-rules-edit-" not in text and tempfile.gettempdir() + "/" not in text, p.format()


# -- which files ---------------------------------------------------------------------------------------------------

def test_the_editable_files_are_the_manifest_the_files_it_lists_and_the_hand_written_corpus(team):
    (team / "corpus" / "edge-cases.yaml").write_text("kind: corpus\ncases: []\n", encoding="utf-8")
    (team / "rules" / "notes.yaml").write_text("not: listed\n", encoding="utf-8")
    files = editable_files(team / "rules")
    assert [(f.name, f.role) for f in files] == [
        ("rules/pack.yaml", "manifest"), ("rules/vocabulary.yaml", "rules"), ("rules/corrections.yaml", "rules"),
        (FOLLOW_UPS, "rules"), ("rules/slots.yaml", "rules"), ("corpus/edge-cases.yaml", "corpus"),
        ("corpus/regressions.yaml", "corpus")]
    described = files[3].to_dict()
    raw = (team / FOLLOW_UPS).read_bytes()
    assert described["bytes"] == len(raw) and read_file(team / "rules", FOLLOW_UPS) == (raw.decode(),
                                                                                         described["sha256"])


@pytest.mark.parametrize("name", ["../corpus/generated/vocab.nod.yaml", "corpus/generated/vocab.nod.yaml",
                                  "rules/../rules/follow_ups.yaml", "/etc/passwd", "rules/notes.yaml", "pack.yaml",
                                  "rules/follow_ups.yaml\x00"])
def test_a_file_that_is_not_one_of_the_packs_own_is_refused(team, name):
    (team / "rules" / "notes.yaml").write_text("not: listed\n", encoding="utf-8")
    before = {p: p.read_bytes() for p in team.rglob("*.yaml")}
    with pytest.raises(UsageError) as refused:
        edit_file(team / "rules", name, "kind: vocabulary\n")
    assert refused.value.code == "E241" and "is not a file of pack rules that can be edited" in str(refused.value)
    with pytest.raises(UsageError):
        read_file(team / "rules", name)
    assert {p: p.read_bytes() for p in team.rglob("*.yaml")} == before


def test_a_member_that_links_out_of_the_pack_is_not_editable(team, tmp_path):
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text("kind: vocabulary\nsets: []\n", encoding="utf-8")
    (team / "rules" / "linked.yaml").symlink_to(outside)
    manifest = team / "rules" / "pack.yaml"
    manifest.write_text(manifest.read_text(encoding="utf-8") + "  - linked.yaml\n", encoding="utf-8")
    assert "rules/linked.yaml" not in {f.name for f in editable_files(team / "rules")}
    with pytest.raises(UsageError, match="E241|can be edited"):
        edit_file(team / "rules", "rules/linked.yaml", "kind: vocabulary\nsets: []\n")
    assert outside.read_text(encoding="utf-8") == "kind: vocabulary\nsets: []\n"


def test_a_bundled_or_installed_pack_is_never_edited(tmp_path):
    with pytest.raises(UsageError) as bundled:
        refuse_unwritable(rules_dir())
    assert bundled.value.code == "E240" and "is the bundled pack cleo-en" in str(bundled.value)
    installed = tmp_path / "lib" / "python3.11" / "site-packages" / "acme_rules" / "pack"
    shutil.copytree(rules_dir(), installed)
    for call in (lambda: edit_file(installed, str(installed / "pack.yaml"), "x"),
                 lambda: read_file(installed, str(installed / "pack.yaml"))):
        with pytest.raises(UsageError) as caught:
            call()
        assert caught.value.code == "E240" and "installed as a Python package (site-packages)" in str(caught.value)
    assert (installed / "pack.yaml").read_bytes() == (rules_dir() / "pack.yaml").read_bytes()


# -- an edit that passes ----------------------------------------------------------------------------------------------

def test_an_edit_that_passes_is_written_whole_with_its_mode_and_served_without_judging_again(team, monkeypatch):
    path = team / FOLLOW_UPS
    os.chmod(path, 0o640)
    text, sha = read_file(team / "rules", FOLLOW_UPS)
    new = text.replace("(?:tell|show|give) (?:me|us) more", "(?:tell|show|give|bring) (?:me|us) more")
    assert new != text
    staged_before = staging_dirs()
    edit = edit_file(team / "rules", FOLLOW_UPS, new, base=sha)
    assert edit.written and edit.ok and edit.problems == () and edit.file == FOLLOW_UPS
    assert path.read_text(encoding="utf-8") == new and stat.S_IMODE(path.stat().st_mode) == 0o640
    assert edit.sha256 == read_file(team / "rules", FOLLOW_UPS)[1] and edit.pack is not None
    assert sorted(p.name for p in path.parent.iterdir()) == sorted(
        ["pack.yaml", "vocabulary.yaml", "corrections.yaml", "follow_ups.yaml", "slots.yaml"])  # no temporary file
    assert staging_dirs() == staged_before  # the copy it was judged in is gone
    # the gate's verdict on these very files is remembered: the runtime accepts the pack without judging it again
    monkeypatch.setattr(runtime, "check_compiled", lambda *a, **k: pytest.fail("the pack was judged again"))
    assert load_checked(team / "rules").content_hash == edit.pack["hash"]
    with PackManager(team / "rules") as manager:
        assert manager.classify("Could you bring me more?").rule == "follow_up.tell-me-more"


def test_the_same_text_again_writes_nothing_and_still_says_what_holds(team):
    text, sha = read_file(team / "rules", FOLLOW_UPS)
    mtime = (team / FOLLOW_UPS).stat().st_mtime_ns
    edit = edit_file(team / "rules", FOLLOW_UPS, text, base=sha)
    assert edit.ok and not edit.written and edit.sha256 == sha and (team / FOLLOW_UPS).stat().st_mtime_ns == mtime


def test_a_manifest_edit_is_judged_with_the_files_it_lists(team):
    manifest = "rules/pack.yaml"
    text, sha = read_file(team / "rules", manifest)
    renamed = edit_file(team / "rules", manifest, text.replace("version: 0.1.0", "version: 0.2.0"), base=sha)
    assert renamed.written and renamed.pack is not None and renamed.pack["version"] == "0.2.0"
    text, sha = read_file(team / "rules", manifest)
    # a limit the generated corpus was built with: the corpus is stale until it is built again
    lower = edit_file(team / "rules", manifest, text.replace("min_chars: 10 ", "min_chars: 9  "), base=sha)
    assert not lower.written and {p.code for p in lower.errors()} == {"E231"}
    (team / "rules" / "sub").mkdir()
    (team.parent / "outside.yaml").write_text("kind: vocabulary\nsets: []\n", encoding="utf-8")
    (team / "rules" / "away.yaml").symlink_to(team.parent / "outside.yaml")
    for listed, code in (("  - missing.yaml\n", "E115"), ("  - ../corpus/regressions.yaml\n", "E119"),
                         ("  - sub\n", None), ('  - "nul\\0.yaml"\n', None), ("  - away.yaml\n", None)):
        edit = edit_file(team / "rules", manifest, text + listed, base=sha)
        assert not edit.written and not edit.ok, [p.format() for p in edit.problems]
        assert code is None or code in {p.code for p in edit.errors()}, [p.format() for p in edit.problems]
        no_copy_named(edit)
        # the same manifest written by hand: the very same errors, at the very same places
        (team / manifest).write_text(text + listed, encoding="utf-8")
        by_hand = [(p.code, p.file, p.line, p.col, p.message) for p in check(team / "rules").errors()]
        assert [(p.code, p.file, p.line, p.col, p.message) for p in edit.errors()] == by_hand
        (team / manifest).write_text(text, encoding="utf-8")
    assert (team / manifest).read_text(encoding="utf-8") == text


def test_a_limit_edit_builds_the_generated_corpus_again_with_it_when_asked(team, monkeypatch):
    from cleo_rules.corpus.build import build_corpus
    from cleo_rules import load_pack

    manifest = "rules/pack.yaml"
    generated = team / "corpus" / "generated"
    before = {p.name: p.read_bytes() for p in generated.iterdir()}
    text, sha = read_file(team / "rules", manifest)
    too_far = edit_file(team / "rules", manifest, text.replace("min_chars: 10 ", "min_chars: 60 "), base=sha,
                        rebuild=True)  # rebuilt, the corpus is up to date; the rules' own examples still fail
    assert not too_far.written and "E134" in {p.code for p in too_far.errors()} and not too_far.rebuilt
    assert {p.name: p.read_bytes() for p in generated.iterdir()} == before
    new = text.replace("min_chars: 10 ", "min_chars: 9  ")
    done = edit_file(team / "rules", manifest, new, base=sha, rebuild=True)
    assert done.written and done.ok, [p.format() for p in done.problems]
    assert (team / manifest).read_text(encoding="utf-8") == new
    changed = {f"corpus/generated/{name}" for name, raw in before.items() if (generated / name).read_bytes() != raw}
    assert changed and set(done.rebuilt) == changed
    # what `cleo-rules corpus build` writes, byte for byte: building again changes nothing
    assert all(line.startswith("# yaml-language-server: $schema=../../schemas/corpus.schema.json")
               for line in ((generated / Path(name).name).read_text().splitlines()[0] for name in changed))
    again = build_corpus(load_pack(team / "rules"))
    assert again.written == [] and again.removed == [] and check(team / "rules").ok
    monkeypatch.setattr(runtime, "check_compiled", lambda *a, **k: pytest.fail("the pack was judged again"))
    assert load_checked(team / "rules").content_hash == done.pack["hash"]


# -- an edit that does not pass ---------------------------------------------------------------------------------------

def broken_edits(text: str) -> dict[str, tuple[str, str, int]]:
    """name -> (edited text, the error code expected, the line it is placed at in follow_ups.yaml; 0: elsewhere)."""
    lines = text.splitlines()
    pattern = next(n for n, line in enumerate(lines, 1) if line.strip().startswith("pattern:"))
    bound = next(n for n, line in enumerate(lines, 1) if "max_content_words: 3" in line)
    return {
        "yaml": (text.replace("    pattern:", "    pattern: [", 1), "E110", 0),  # where the parser notices
        "schema": (text.replace("max_content_words: 3", "max_content_words: lots", 1), "E123", bound),
        "regex": (text.replace("(?:tell|show|give)", "(?:tell|show|give", 1), "E130", pattern),
        "examples": (text.replace("(?:me|us) more", "(?:me|us) mor", 1), "E134", 0),
        "corpus": (text.replace("(?:tell|show|give)", "(?:tell|give)", 1), "E230", 0),
    }


@pytest.mark.parametrize("kind", ["yaml", "schema", "regex", "examples", "corpus"])
def test_an_edit_that_does_not_pass_writes_nothing_and_places_every_error(team, kind):
    path = team / FOLLOW_UPS
    before = path.read_bytes()
    text, sha = read_file(team / "rules", FOLLOW_UPS)
    new, code, line = broken_edits(text)[kind]
    edit = edit_file(team / "rules", FOLLOW_UPS, new, base=sha)
    assert not edit.written and not edit.ok and path.read_bytes() == before and edit.sha256 == sha
    errors = edit.errors()
    assert code in {p.code for p in errors}, [p.format() for p in errors]
    first = next(p for p in errors if p.code == code)
    if line:
        assert (first.file, first.line) == (FOLLOW_UPS, line) and first.col >= 1
    assert first.help
    if kind == "corpus":  # a failing case is placed at the case, in the real corpus file, with its rule
        assert first.file.startswith("corpus/generated/") and first.rule == "follow_up.tell-me-more"
        shown = (team / first.file).read_text(encoding="utf-8").splitlines()[first.line - 1]
        assert shown.startswith("  - {") and first.message.split()[2] in shown
    no_copy_named(edit)
    # the same edit written by hand and checked: the very same errors at the very same places
    path.write_text(new, encoding="utf-8")
    located = [(p.code, p.file, p.line, p.col, p.rule, p.message, p.help) for p in check(team / "rules").errors()]
    assert [(p.code, p.file, p.line, p.col, p.rule, p.message, p.help) for p in errors] == located


def test_a_corpus_edit_is_judged_with_the_pack_and_an_open_case_passes(team):
    name = "corpus/regressions.yaml"
    text, sha = read_file(team / "rules", name)
    case = '  - id: regression/go-on\n    message: "Could you go on about it please?"\n    expect: skip\n'
    failing = edit_file(team / "rules", name, text + case, base=sha)
    assert not failing.written and [(p.code, p.file, p.line) for p in failing.errors()] == [
        ("E230", name, len(text.splitlines()) + 1)]
    opened = edit_file(team / "rules", name, text + case + "    open: true\n", base=sha)
    assert opened.written and opened.ok
    assert [(p.code, p.severity, p.file) for p in opened.problems] == [("E232", "note", name)]


def test_the_version_range_required_is_kept(team):
    text, sha = read_file(team / "rules", FOLLOW_UPS)
    edit = edit_file(team / "rules", FOLLOW_UPS, text + "\n", base=sha, require=">=2")
    assert not edit.written and [p.code for p in edit.errors()] == ["E190"]
    assert edit_file(team / "rules", FOLLOW_UPS, text + "\n", base=sha, require=">=0.1,<1").written


def test_a_text_over_the_size_limit_is_refused_as_the_loader_refuses_a_file(team):
    text, sha = read_file(team / "rules", FOLLOW_UPS)
    big = text + "#" * (MAX_FILE_BYTES - len(text.encode()) + 1)
    edit = edit_file(team / "rules", FOLLOW_UPS, big, base=sha)
    assert not edit.written and [(p.code, p.file, p.line, p.col) for p in edit.problems] == [("E114", FOLLOW_UPS, 1, 1)]
    assert edit.problems[0].message == f"file is {MAX_FILE_BYTES + 1} bytes, over the limit of {MAX_FILE_BYTES}"
    assert (team / FOLLOW_UPS).read_text(encoding="utf-8") == text


# -- a change made meanwhile -------------------------------------------------------------------------------------------

def test_a_change_made_meanwhile_is_never_overwritten(team, monkeypatch):
    path = team / FOLLOW_UPS
    text, sha = read_file(team / "rules", FOLLOW_UPS)
    path.write_text(text + "# saved in another editor\n", encoding="utf-8")
    with pytest.raises(EditConflict) as stale:
        edit_file(team / "rules", FOLLOW_UPS, text + "# mine\n", base=sha)
    assert stale.value.code == "E242" and "changed on disk since the edit began" in str(stale.value)
    assert path.read_text(encoding="utf-8") == text + "# saved in another editor\n"
    # saved while the pack was being judged: the check just before writing sees it
    text, sha = read_file(team / "rules", FOLLOW_UPS)
    judge = runtime.check_for_adoption

    def judged_while_saved(*args, **kwargs):
        path.write_text(text + "# saved while judging\n", encoding="utf-8")
        return judge(*args, **kwargs)

    monkeypatch.setattr(runtime, "check_for_adoption", judged_while_saved)
    with pytest.raises(EditConflict):
        edit_file(team / "rules", FOLLOW_UPS, text + "# mine\n", base=sha)
    assert path.read_text(encoding="utf-8") == text + "# saved while judging\n"


# -- whatever the text ---------------------------------------------------------------------------------------------

@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_edit_is_written_exactly_when_the_pack_then_passes(team, data):
    path = team / FOLLOW_UPS
    text, sha = read_file(team / "rules", FOLLOW_UPS)
    at = data.draw(st.integers(0, len(text)))
    cut = data.draw(st.integers(0, 12))
    inserted = data.draw(st.text(alphabet=st.sampled_from(list("ab :-'\"[]{}()|?\\\n#0")), max_size=6))
    new = text[:at] + inserted + text[at + cut:]
    try:
        edit = edit_file(team / "rules", FOLLOW_UPS, new, base=sha)
        on_disk = path.read_text(encoding="utf-8")
        if edit.written:
            assert on_disk == new and check(team / "rules").ok
        else:
            assert on_disk == text
            if new != text:
                assert not edit.ok and check(team / "rules").ok  # the pack on disk is the one that passed
                path.write_text(new, encoding="utf-8")
                assert not check(team / "rules").ok  # and the edit, written by hand, would not have passed
        no_copy_named(edit)
    finally:
        path.write_text(text, encoding="utf-8")  # every example starts from the same file


# -- a chain of bases named by relative paths (issue 30, item 2) -------------------------------------------------


def chained(root: Path) -> Path:
    """``team/rules`` built on ``../up/rules``, itself built on ``../core/rules`` (a pack of its own); the working
    directory the team's repository. Returns the team's directory."""
    from cleo_rules.starter import init_pack

    team = root / "team"
    init_pack(str(team / "up" / "core"), standalone=True)
    (team / "up" / "rules").mkdir(parents=True)
    (team / "up" / "rules" / "pack.yaml").write_text("pack: up\nversion: 1.0.0\nlocale: en\nextends: [../core/rules]\n",
                                                     encoding="utf-8")
    init_pack(str(team))
    manifest = team / "rules" / "pack.yaml"
    text = manifest.read_text(encoding="utf-8")
    manifest.write_text(text.replace("  - pack: cleo-en\n    version: \"^1.0\"", "  - pack: ../up/rules"),
                        encoding="utf-8")
    assert "../up/rules" in manifest.read_text(encoding="utf-8")
    return team


def test_edit_of_a_pack_on_a_chain_of_relative_bases_is_judged_as_it_checks(tmp_path, monkeypatch):
    team = chained(tmp_path)
    monkeypatch.chdir(team)
    checked = check(team / "rules")
    assert checked.ok, [p.format() for p in checked.errors()]
    assert [b.name for b in checked.pack.composition.bases] == ["core", "up"]
    name = "rules/corrections.yaml"
    own, sha = read_file(team / "rules", name)
    with PackManager(team / "rules") as manager:
        edit = edit_file(team / "rules", name, own.replace("kind:", "# a comment\nkind:", 1), base=sha)
        assert edit.written and edit.ok, [p.format() for p in edit.problems]
        no_copy_named(edit)
        assert edit.pack is not None and edit.pack["hash"] == check(team / "rules").pack.content_hash
        assert edit.accepted is not None
        manager.adopt(edit.accepted)  # a comment changes no rule: the same pack serves, nothing refused
        assert manager.pack.content_hash == edit.pack["hash"] and manager.last_error is None
        assert manager.rejections == 0
        assert [b.path for b in manager.pack.composition.bases] == [team / "up" / "core" / "rules",
                                                                     team / "up" / "rules"]
    # a bad edit's errors name the pack's own paths and the bases' real ones, never the copy
    manifest, msha = read_file(team / "rules", "rules/pack.yaml")
    lost = edit_file(team / "rules", "rules/pack.yaml", manifest.replace("../up/rules", "../nowhere/rules"),
                     base=msha)
    assert not lost.written and [(p.code, p.file) for p in lost.errors()] == [("E150", "rules/pack.yaml")]
    assert "no rule pack at nowhere/rules: " in lost.errors()[0].message  # where the pack itself looks for it
    unknown = edit_file(team / "rules", "rules/pack.yaml",
                        manifest.replace("disable: []", "disable: [follow_up.tell-me-mor]", 1), base=msha)
    assert not unknown.written and [(p.code, p.file) for p in unknown.errors()] == [("E153", "rules/pack.yaml")]
    broken = team / "up" / "core" / "rules" / "follow_ups.yaml"
    broken.write_text(broken.read_text(encoding="utf-8").replace("max_content_words: 3", "max_content_words: lots"),
                      encoding="utf-8")
    refused = edit_file(team / "rules", name, own, base=edit.sha256)
    assert not refused.written and refused.errors()
    assert {p.file for p in refused.errors()} == {"up/core/rules/follow_ups.yaml"}, \
        [p.format() for p in refused.errors()]
    for done in (lost, unknown, refused):
        no_copy_named(done)
