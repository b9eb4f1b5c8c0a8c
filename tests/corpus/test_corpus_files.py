"""Reading and writing corpus files (cleo_rules.corpus.files): where a corpus lives, the generator's
one-case-per-line layout read back exactly, hand-written files placed case by case."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleo_rules import load_pack
from cleo_rules.corpus import files
from cleo_rules.corpus.files import (
    CROSS_FILE, GENERATED_DIR, case_line, corpus_dir_of, default_corpus_dir, group_file, read_dir, render_corpus_file,
)
from cleo_rules.corpus.model import CROSS, Case, CaseTurn
from cleo_rules.kinds import DecisionKind
from cleo_rules.resources import rules_dir

# printable text: YAML refuses control characters even inside a JSON string (the reader reads it without YAML)
words = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Cn")), min_size=1, max_size=30)
turns = st.one_of(words, st.builds(CaseTurn, st.sampled_from(["user", "assistant"]), words))
cases = st.builds(
    lambda n, message, expect, rule, history, referent: Case(
        f"follow_up.x/p{n}", message, expect, rule=rule, not_rules=() if rule else ("follow_up.x",),
        history=tuple(history), has_referent=referent is not False,
        referent=referent if isinstance(referent, str) else None),
    st.integers(0, 10**6), words, st.sampled_from(list(DecisionKind)), st.sampled_from([None, "follow_up.x"]),
    st.lists(turns, max_size=3), st.one_of(st.just(False), st.none(), words),
)


def test_a_packs_corpus_is_beside_its_directory(tmp_path):
    assert corpus_dir_of(tmp_path / "rules") == tmp_path.resolve() / "corpus"
    assert default_corpus_dir(load_pack(check_examples=False)) == rules_dir().resolve().parent / "corpus"


def test_each_group_has_its_file():
    assert group_file("vocab.choice") == "vocab.choice.yaml" and group_file(CROSS) == CROSS_FILE


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(cases, max_size=5, unique_by=lambda c: c.id))
def test_a_generated_file_reads_back_case_for_case_at_its_lines(tmp_path, written):
    gdir = tmp_path / "corpus" / GENERATED_DIR
    gdir.mkdir(parents=True, exist_ok=True)
    path = gdir / "follow_up.x.yaml"
    text = render_corpus_file(path, {"pack": "p", "rule": "follow_up.x", "hash": "0"}, written, what="rule follow_up.x")
    path.write_text(text, encoding="utf-8")
    assert yaml.safe_load(text)["kind"] == "corpus"  # the fast layout is YAML too
    hand, generated, problems = read_dir(tmp_path / "corpus")
    assert hand == [] and problems == []
    (cf,) = generated
    assert cf.header["rule"] == "follow_up.x" and cf.generated
    lines = text.split("\n")
    for want, got in zip(written, cf.cases, strict=True):
        assert dataclasses.replace(got, file="", line=0, group=CROSS, generated=True) == want
        assert got.group == "follow_up.x" and lines[got.line - 1] == case_line(want)
        assert Path(got.file).name == "follow_up.x.yaml"


def test_a_hand_written_file_places_each_case_and_each_mistake(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "regressions.yaml").write_text(
        "kind: corpus\n"
        "cases:\n"
        "  - id: r/1\n"
        "    message: We tried that one already.\n"
        "    expect: correction\n"
        "  - id: r/2\n"
        "    message: Yes, that one.\n"
        "    history:\n"
        "      - Compare the two quotes\n"
        "      - {role: assistant, content: \"Acme or Zed?\"}\n"
        "    expect: follow_up\n", encoding="utf-8")
    hand, generated, problems = read_dir(corpus)
    assert generated == [] and problems == []
    (cf,) = hand
    assert [(c.id, c.line, c.generated) for c in cf.cases] == [("r/1", 3, False), ("r/2", 6, False)]
    assert cf.cases[1].history == ("Compare the two quotes", CaseTurn("assistant", "Acme or Zed?"))
    (corpus / "regressions.yaml").write_text(
        "kind: corpus\ncases:\n  - id: r/3\n    message: Hello there.\n    expect: maybe\n", encoding="utf-8")
    _, _, problems = read_dir(corpus)
    assert problems and all(p.file.endswith("regressions.yaml") for p in problems)
    assert any(p.line == 5 and "expect" in p.pointer for p in problems)


def test_an_edited_generated_file_is_still_read_with_positions(tmp_path):
    gdir = tmp_path / "corpus" / GENERATED_DIR
    gdir.mkdir(parents=True)
    (gdir / "vocab.nod.yaml").write_text(
        "kind: corpus\ngenerated: {rule: vocab.nod}\ncases:\n"
        "  - id: vocab.nod/p1\n    message: Yes, that works.\n    expect: follow_up\n    rule: vocab.nod\n"
        "  - {id: vocab.nod/p2}\n", encoding="utf-8")
    _, (cf,), problems = read_dir(tmp_path / "corpus")
    assert [(c.id, c.line, c.group) for c in cf.cases] == [("vocab.nod/p1", 4, "vocab.nod")]
    assert [(p.code, p.line) for p in problems] == [("E211", 8)]


def test_no_directory_no_cases(tmp_path):
    assert read_dir(tmp_path / "nowhere") == ([], [], [])


# a generated file's header: the generator's own lines, and lines near them that YAML reads otherwise or refuses
header_keys = st.sampled_from(["pack", "pack_version", "rule", "from", "hash", "generator", "on", "yes", "null",
                               "n", "Rule", "a-b", "kind"])
near_values = st.one_of(
    st.integers(-5, 10**20).map(str), st.sampled_from(["010", "1_000", "0x1f", "1.5", "~", "yes", "true", "[]"]),
    st.text(max_size=12), st.text(max_size=12).map(lambda t: '"' + t + '"'))
plain_values = st.one_of(st.integers(0, 10**18).map(str),
                         st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters='"\\'),
                                 max_size=12).map(lambda t: '"' + t + '"'))
plain_lines = st.tuples(st.sampled_from(["pack", "pack_version", "rule", "from", "hash", "generator"]),
                        plain_values).map(lambda kv: f"  {kv[0]}: {kv[1]}")
header_lines = st.lists(st.one_of(
    plain_lines, plain_lines, plain_lines, plain_lines, plain_lines, plain_lines,
    st.tuples(header_keys, near_values).map(lambda kv: f"  {kv[0]}: {kv[1]}"),
    st.text(max_size=12).map(lambda t: "#" + t), st.sampled_from(["", "generated:", "kind: corpus", "  - x"])),
    max_size=6)


@settings(max_examples=400, deadline=None)
@given(lines=header_lines, first=st.sampled_from([["kind: corpus", "generated:"], ["generated:"], ["# a", "kind: corpus",
                                                                                                 "generated:"]]))
def test_a_generated_header_is_read_as_the_yaml_loader_reads_it_or_left_to_it(lines, first):
    from cleo_rules.corpus.files import _generated_header
    from cleo_rules.reading.load import parse_yaml

    header = first + lines
    fast = _generated_header(header)
    if fast is None:
        return
    src, problems = parse_yaml("\n".join(header), Path("h.yaml"), "h.yaml")
    assert problems == [] and src is not None
    assert fast == src.data and [type(v) for v in fast["generated"].values()] == \
           [type(v) for v in src.data["generated"].values()]


def test_every_bundled_generated_header_is_read_without_the_loader():
    from cleo_rules.corpus.files import _generated_header

    generated = sorted((rules_dir().parent / "corpus" / GENERATED_DIR).glob("*.yaml"))
    assert len(generated) > 50
    for path in generated:
        lines = path.read_text(encoding="utf-8").split("\n")
        assert _generated_header(lines[:lines.index("cases:")]) is not None, path.name


def test_a_copy_of_a_corpus_named_alike_is_read_once_each_file_its_own(tmp_path, monkeypatch):
    for name in ("one", "two"):
        shutil.copytree(corpus_dir_of(rules_dir()), tmp_path / name / "corpus")
    read: list = []
    real = files._read_lines

    def spy(path, shown, text):
        read.append(shown)
        return real(path, shown, text)

    monkeypatch.setattr(files, "_read_lines", spy)
    files._read.clear()
    monkeypatch.chdir(tmp_path / "one")
    _, first, _ = read_dir(Path("corpus"))
    assert len(read) == len(first) > 0
    monkeypatch.chdir(tmp_path / "two")
    _, second, _ = read_dir(Path("corpus"))
    assert len(read) == len(first)  # the same text under the same name: read once
    for a, b in zip(first, second, strict=True):
        assert a.cases == b.cases and a.header == b.header and a.display == b.display
        assert a.path == Path("corpus") / GENERATED_DIR / Path(a.display).name == b.path
        assert a.cases is not b.cases
    (tmp_path / "two" / "corpus" / GENERATED_DIR / Path(first[0].display).name).write_text(
        (tmp_path / "two" / "corpus" / GENERATED_DIR / Path(first[0].display).name).read_text() + "\n")
    read_dir(Path("corpus"))
    assert read[len(first):] == [first[0].display]  # another text is read again
