"""Saving a turn as a regression: the case's YAML, appending it to regressions.yaml, and what is refused."""

from __future__ import annotations

import shutil

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleo_rules import load_pack
from cleo_rules.corpus import run_corpus
from cleo_rules.corpus.regressions import regression_entry, regressions_path, render_entry, save_regression
from cleo_rules.errors import CleoError, UsageError
from cleo_rules.resources import corpus_dir, package_dir, rules_dir

HISTORY = [
    "Which van insurer covers tools left in the van overnight?",
    {"role": "assistant", "content": 'Two do: Brightline Commercial and "Zego" Van.'},
    {"role": "system", "content": "be brief"},
]


@pytest.fixture
def team(tmp_path):
    """A copy of the bundled pack with its corpus, as a team keeps them side by side."""
    shutil.copytree(rules_dir(), tmp_path / "rules")
    shutil.copytree(corpus_dir(), tmp_path / "corpus")
    return tmp_path, load_pack(tmp_path / "rules")


def test_an_entry_keeps_message_history_and_kind_in_the_one_history_format(team):
    _, pack = team
    entry = regression_entry("Yes, go with the second one.", HISTORY, "follow_up", pack=pack)
    assert entry["id"] == "regression/yes-go-with-the-second-one"
    assert entry["message"] == "Yes, go with the second one."
    # user turns as strings, assistant turns role-tagged, the system item left out (as the classifier does)
    assert entry["history"] == [HISTORY[0], HISTORY[1]]
    assert entry["expect"] == "follow_up"
    decision = pack.classify("Yes, go with the second one.", HISTORY)
    assert entry["note"] == (f"Saved from the playground: cleo-en {pack.version} ({pack.content_hash}) gave "
                             f"{decision.kind} by {decision.rule}.")
    assert yaml.safe_load(render_entry(entry)) == [entry]


def test_a_message_without_history_has_no_history_key():
    entry = regression_entry("Thanks!", [], "skip", note="")
    assert entry == {"id": "regression/thanks", "message": "Thanks!", "expect": "skip"}
    assert render_entry(entry) == '  - id: regression/thanks\n    message: "Thanks!"\n    expect: skip\n'


def test_bad_kinds_and_histories_are_refused():
    with pytest.raises(UsageError, match="expect must be one of skip, correction, follow_up, substantive"):
        regression_entry("Thanks!", [], "nod")
    with pytest.raises(UsageError, match="the message must be a string"):
        regression_entry(7, [], "skip")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"history\[0\]: unknown role 'bot'"):
        regression_entry("Thanks!", [{"role": "bot", "content": "x"}], "skip")


def test_ids_are_unique_in_the_whole_corpus(team):
    root, pack = team
    first = regression_entry("Yes, go with the second one.", HISTORY, "follow_up", pack=pack)
    save_regression(pack, first)
    second = regression_entry("Yes, go with the second one!", HISTORY, "follow_up", pack=pack)
    assert second["id"] == "regression/yes-go-with-the-second-one-2"
    # an id the generated corpus already holds is taken too
    taken = next((root / "corpus" / "generated").glob("*.yaml")).read_text().split('"id": "', 1)[1].split('"')[0]
    assert regression_entry("x", [], "skip", pack=pack, case_id=taken)["id"] == taken  # given ids are kept as given


def test_appending_keeps_the_file_and_the_corpus_passes_with_the_new_case(team):
    root, pack = team
    path = regressions_path(pack)
    assert path == (root / "corpus" / "regressions.yaml").resolve()
    before = path.read_text(encoding="utf-8")
    turns = [("Yes, go with the second one.", HISTORY), ("Thanks!", HISTORY[:2]),
             ("We tried that one already.", HISTORY[:2]), ("What about the smaller one?", HISTORY[:2])]
    for message, history in turns:
        d = pack.classify(message, history)
        saved = save_regression(pack, regression_entry(message, history, d.kind, pack=pack))
        assert saved.written and saved.file == path
    after = path.read_text(encoding="utf-8")
    assert after.startswith(before.rstrip("\n") + "\n\n")  # nothing of the file as it was is touched
    cases = yaml.safe_load(after)["cases"]
    assert [c["message"] for c in cases[-4:]] == [m for m, _ in turns]
    report = run_corpus(pack, root / "corpus")
    assert report.ok, report.format(max_shown=5)


def test_a_case_the_pack_gets_wrong_is_saved_open_and_fails_the_corpus_only_when_closed(team):
    root, pack = team
    entry = regression_entry("Thanks!", HISTORY[:2], "follow_up", pack=pack)
    assert entry["open"] is True  # the pack gives skip: saved open, so the corpus still passes
    save_regression(pack, entry)
    report = run_corpus(pack, root / "corpus")
    assert report.ok and [o.case.id for o in report.open] == ["regression/thanks"] and not report.failed
    closed = regression_entry("Thanks!", HISTORY[:2], "follow_up", pack=pack, open=False)
    assert closed["id"] == "regression/thanks-2" and "open" not in closed
    save_regression(pack, closed)
    report = run_corpus(pack, root / "corpus")
    assert not report.ok
    assert [o.case.id for o in report.failed] == ["regression/thanks-2"]


def test_write_false_writes_nothing(team):
    _, pack = team
    path = regressions_path(pack)
    before = path.read_text(encoding="utf-8")
    entry = regression_entry("Thanks!", [], "skip", pack=pack)
    saved = save_regression(pack, entry, write=False)
    assert not saved.written and saved.yaml == render_entry(entry)
    assert path.read_text(encoding="utf-8") == before


def test_a_missing_file_is_created_and_an_empty_list_filled(tmp_path):
    shutil.copytree(rules_dir(), tmp_path / "rules")
    pack = load_pack(tmp_path / "rules")
    path = regressions_path(pack)
    # no corpus beside the pack: none is started with one case (the pack's coverage would fail)
    with pytest.raises(CleoError) as caught:
        save_regression(pack, regression_entry("Thanks!", [], "skip", pack=pack))
    assert caught.value.code == "E203" and str(caught.value) == f"no corpus at {tmp_path / 'corpus'}"
    assert not path.parent.exists()
    path.parent.mkdir()
    save_regression(pack, regression_entry("Thanks!", [], "skip", pack=pack))
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert data["kind"] == "corpus" and [c["id"] for c in data["cases"]] == ["regression/thanks"]
    assert not run_corpus(pack, path.parent).failed  # the case passes (coverage is not its business)

    path.write_text("kind: corpus\ncases: []\n", encoding="utf-8")
    save_regression(pack, regression_entry("Thanks!", [], "skip", pack=pack))
    assert [c["id"] for c in yaml.safe_load(path.read_text(encoding="utf-8"))["cases"]] == ["regression/thanks"]


def test_a_file_whose_cases_do_not_end_it_is_left_alone(tmp_path):
    shutil.copytree(rules_dir(), tmp_path / "rules")
    pack = load_pack(tmp_path / "rules")
    path = regressions_path(pack)
    path.parent.mkdir()
    text = "kind: corpus\ncases:\n  - id: regression/a\n    message: \"Hello there you\"\n    expect: substantive\n" \
           "description: cases first, then a description\n"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CleoError) as caught:
        save_regression(pack, regression_entry("Thanks!", [], "skip", pack=pack))
    assert caught.value.code == "E206"
    assert "its `cases:` list does not end the file" in str(caught.value)
    assert path.read_text(encoding="utf-8") == text
    assert [p.name for p in path.parent.iterdir()] == ["regressions.yaml"]  # no temporary file left behind

    path.write_text("kind: corpus\ncases: [\n", encoding="utf-8")
    with pytest.raises(CleoError) as caught:
        save_regression(pack, regression_entry("Thanks!", [], "skip", pack=pack))
    assert caught.value.code == "E206" and "YAML" in str(caught.value)


def test_nothing_is_written_into_the_installed_package(tmp_path, monkeypatch):
    """The bundled pack of an installed wheel (its files inside the package) is refused, as `corpus build` refuses it.

    (tests/project/test_packaging.py does the same with a wheel really installed.)
    """
    pack = load_pack()
    target = package_dir() / "_data" / "corpus" / "regressions.yaml"
    with pytest.raises(UsageError) as caught:
        save_regression(pack, regression_entry("Thanks!", [], "skip"), path=target)
    assert caught.value.code == "E205"
    assert "saving a regression never writes into the installed package" in str(caught.value)
    assert not target.exists()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(message=st.text(max_size=60),
       history=st.lists(st.one_of(st.text(max_size=40),
                                  st.builds(lambda c: {"role": "assistant", "content": c}, st.text(max_size=40))),
                        max_size=4),
       expect=st.sampled_from(["skip", "correction", "follow_up", "substantive"]), opened=st.booleans())
def test_any_entry_reads_back_as_itself(message, history, expect, opened):
    entry = regression_entry(message, history, expect, note="n\u00e9e: \"quoted\"\n", open=opened)
    assert ("open" in entry) is opened
    assert yaml.safe_load(render_entry(entry)) == [entry]
