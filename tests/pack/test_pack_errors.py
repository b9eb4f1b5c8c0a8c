"""Every lint and error path names file:line:col, the rule id, the JSON pointer and a fix.

Each test builds a small pack, breaks one thing at a known place and asserts
the exact location reported.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from cleo_rules import load_pack
from cleo_rules.errors import PackError

MANIFEST = """\
pack: t
version: 1.0.0
locale: en
files: [vocabulary.yaml, corrections.yaml]
"""

VOCAB = """\
kind: vocabulary
sets:
  - id: vocab.request
    role: request
    description: requests
    words: [try, that, one, first, let's, could]
    examples: ["Could we try that one?"]
    counterexamples: ["We tried a loyalty scheme in 2023"]
  - id: vocab.filler
    role: filler
    description: function words
    words: [we, the, a]
    examples: ["Let's try the first one."]
    counterexamples: ["the the the the the"]
"""

CORR = """\
kind: corrections
rules:
  - id: correction.already-tried
    description: tried already
    pattern: '\\bwe tried (?:that|it)\\b'
    examples: ["We tried that one already."]
    counterexamples: ["Could we try that one?"]
    request_forms: ["Let's try the first one."]
"""


def make(tmp_path, manifest=MANIFEST, vocab=VOCAB, corr=CORR):
    d = tmp_path / "p"
    d.mkdir()
    (d / "pack.yaml").write_text(manifest)
    (d / "vocabulary.yaml").write_text(vocab)
    (d / "corrections.yaml").write_text(corr)
    return d


def problems(path):
    with pytest.raises(PackError) as info:
        load_pack(path)
    return info.value.problems


def only(path, code):
    found = [p for p in problems(path) if p.code == code]
    assert found, f"no {code} among {[p.format() for p in problems(path)]}"
    return found[0]


def test_minimal_pack_is_valid(tmp_path):
    pack = load_pack(make(tmp_path))
    assert pack.classify("We tried that one already.").kind == "correction"
    assert pack.classify("Let's try the first one.").kind == "follow_up"


def test_malformed_yaml(tmp_path):
    corr = CORR.replace('examples: ["We tried that one already."]', 'examples: ["We tried that one already."')
    p = only(make(tmp_path, corr=corr), "E110")
    assert (p.file.endswith("corrections.yaml"), p.line, p.col) == (True, 7, 5)
    assert "YAML syntax error" in p.message and p.help


def test_unknown_key_points_at_the_key_and_suggests(tmp_path):
    corr = CORR.replace("    examples:", "    exmaples:")
    found = problems(make(tmp_path, corr=corr))
    p = next(p for p in found if p.code == "E121")
    assert (p.line, p.col, p.pointer, p.rule) == (6, 5, "/rules/0/exmaples", "correction.already-tried")
    assert "did you mean 'examples'" in p.help
    missing = next(p for p in found if p.code == "E122")
    assert (missing.line, missing.col, missing.pointer) == (3, 5, "/rules/0")
    assert "'examples'" in missing.message


def test_missing_counterexamples(tmp_path):
    corr = CORR.replace('    counterexamples: ["Could we try that one?"]\n', "")
    p = only(make(tmp_path, corr=corr), "E122")
    assert (p.line, p.col, p.rule, p.pointer) == (3, 5, "correction.already-tried", "/rules/0")
    assert "counterexamples" in p.message and "both directions" in p.help


@pytest.mark.parametrize("flags", ["(?a)(?u)", "(?aL)", "(?u)(?a)"])
def test_flags_that_exclude_each_other_are_a_pattern_that_does_not_compile(tmp_path, flags):
    """The engine refuses (?a) with (?u) or (?L) with a ValueError, not its own error: a located E130 all the same."""
    p = only(make(tmp_path, corr=CORR.replace("pattern: '\\bwe", f"pattern: '{flags}\\bwe")), "E130")
    assert (p.line, p.pointer, p.rule) == (5, "/rules/0/pattern", "correction.already-tried")
    assert p.message == "pattern does not compile: ASCII, LOCALE and UNICODE flags are mutually incompatible"
    assert "keep one of the flags" in p.help


def test_empty_examples_list(tmp_path):
    corr = CORR.replace('examples: ["We tried that one already."]', "examples: []")
    p = only(make(tmp_path, corr=corr), "E125")
    assert (p.line, p.col, p.pointer) == (6, 15, "/rules/0/examples")


def test_bad_regex_points_inside_the_pattern(tmp_path):
    corr = CORR.replace("(?:that|it)\\b'", "(?:that|it\\b'")
    p = only(make(tmp_path, corr=corr), "E130")
    assert (p.line, p.pointer, p.rule) == (5, "/rules/0/pattern", "correction.already-tried")
    # value starts at col 14 (the quote); the regex error is at the end of the pattern
    assert p.col == 14 + 1 + len("\\bwe tried (?:that|it\\b")
    assert "does not compile" in p.message


@pytest.mark.parametrize("pattern", ["(?:\\w+\\s?)+$", "(a|aa)+$", "^(?:\\w+\\s*)*$"])
def test_backtracking_pattern(tmp_path, pattern):
    corr = CORR.replace("'\\bwe tried (?:that|it)\\b'", f"'\\bwe tried (?:that|it)\\b|{pattern}'")
    p = only(make(tmp_path, corr=corr), "E131")
    assert (p.line, p.col, p.pointer, p.rule) == (5, 14, "/rules/0/pattern", "correction.already-tried")
    assert "catastrophically" in p.message and "{0,4}" in p.help


def test_duplicate_id_names_both_places(tmp_path):
    vocab = VOCAB.replace("  - id: vocab.filler", "  - id: vocab.request")
    p = only(make(tmp_path, vocab=vocab), "E132")
    assert (p.line, p.col, p.pointer) == (9, 9, "/sets/1/id")
    assert "first defined at" in p.message and "vocabulary.yaml:3:9" in p.message


def test_vocabulary_entry_in_two_sets(tmp_path):
    vocab = VOCAB.replace("words: [we, the, a]", "words: [we, the, a, first]")
    p = only(make(tmp_path, vocab=vocab), "E133")
    assert (p.line, p.col, p.pointer, p.rule) == (12, 25, "/sets/1/words/3", "vocab.filler")
    assert "also in vocab.request" in p.message


def test_example_that_misses_its_rule(tmp_path):
    corr = CORR.replace('examples: ["We tried that one already."]', 'examples: ["I have tested it before."]')
    p = only(make(tmp_path, corr=corr), "E134")
    assert (p.line, p.col, p.pointer) == (6, 16, "/rules/0/examples/0")
    assert "classified substantive" in p.message


def test_counterexample_that_fires(tmp_path):
    corr = CORR.replace('counterexamples: ["Could we try that one?"]', 'counterexamples: ["We tried it twice."]')
    p = only(make(tmp_path, corr=corr), "E135")
    assert (p.line, p.col, p.pointer) == (7, 23, "/rules/0/counterexamples/0")
    assert "on 'We tried it'" in p.message


def test_correction_widened_to_catch_its_request_form(tmp_path):
    corr = CORR.replace("'\\bwe tried (?:that|it)\\b'", "'\\bwe tried (?:that|it)\\b|\\btry\\b'")
    found = problems(make(tmp_path, corr=corr))
    p = next(p for p in found if p.code == "E136")
    assert (p.line, p.col, p.pointer) == (8, 21, "/rules/0/request_forms/0")
    assert p.message.startswith("request form ") and "is a correction: it is classified correction by" in p.message


def test_object_constructing_tag_is_refused(tmp_path):
    corr = CORR.replace("description: tried already", "description: !!python/object/apply:os.system ['true']")
    p = only(make(tmp_path, corr=corr), "E111")
    assert (p.line, p.col) == (4, 18)
    assert "python/object" in p.message


def test_alias_is_refused(tmp_path):
    vocab = VOCAB.replace("words: [we, the, a]", "words: &w [we, the, a]")
    p = only(make(tmp_path, vocab=vocab), "E112")
    assert (p.line, p.col) == (12, 12)


def test_duplicate_key(tmp_path):
    corr = CORR.replace("    description: tried already\n", "    description: tried already\n    description: again\n")
    p = only(make(tmp_path, corr=corr), "E113")
    assert (p.line, p.col) == (5, 5) and "first at line 4" in p.message


def test_manifest_cannot_leave_the_pack(tmp_path):
    manifest = MANIFEST.replace("files: [vocabulary.yaml, corrections.yaml]",
                                "files: [vocabulary.yaml, corrections.yaml, ../../etc/passwd.yaml]")
    p = only(make(tmp_path, manifest=manifest), "E119")
    assert (p.line, p.pointer) == (4, "/files/2") and "outside the pack" in p.message


def test_yaml_boolean_word_gets_quoting_help(tmp_path):
    vocab = VOCAB.replace("words: [try,", "words: [yes, try,")
    p = only(make(tmp_path, vocab=vocab), "E123")
    assert (p.line, p.col, p.pointer) == (6, 13, "/sets/0/words/0")
    assert "quote it" in p.help


def test_version_read_as_number(tmp_path):
    p = only(make(tmp_path, manifest=MANIFEST.replace("version: 1.0.0", "version: 1.0")), "E123")
    assert (p.line, p.col, p.pointer) == (2, 10, "/version") and "'1.0'" in p.help


def test_bad_combine_template(tmp_path):
    manifest = MANIFEST + 'settings:\n  combine: "{anchor} {msg}"\n'
    found = [p for p in problems(make(tmp_path, manifest=manifest)) if p.code == "E137"]
    assert {p.line for p in found} == {6}
    assert any("unknown field(s) msg" in p.message for p in found)
    assert any("{message}" in p.message for p in found)


def test_unknown_file_kind(tmp_path):
    p = only(make(tmp_path, corr=CORR.replace("kind: corrections", "kind: correction")), "E124")
    assert (p.line, p.col) == (1, 7) and "did you mean 'corrections'" in p.help


def test_all_errors_are_collected_best_first(tmp_path):
    corr = CORR.replace("    examples:", "    exmaples:").replace("(?:that|it)\\b'", "(?:that|it\\b'")
    with pytest.raises(PackError) as info:
        load_pack(make(tmp_path, corr=corr))
    codes = [p.code for p in info.value.problems]
    assert {"E121", "E122", "E130"} <= set(codes)
    assert codes[0] == "E130"  # a regex that cannot compile leads
    report = info.value.report()
    assert report.splitlines()[-1].startswith(f"{len(codes)} errors")


def test_cli_check_reports_without_traceback(tmp_path):
    corr = CORR.replace("    examples:", "    exmaples:")
    pack = make(tmp_path, corr=corr)
    result = subprocess.run([sys.executable, "-m", "cleo_rules", "check", str(pack)],
                            capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "p/corrections.yaml:6:5: error[E121] correction.already-tried at /rules/0/exmaples" in result.stderr
    assert "help: did you mean 'examples'?" in result.stderr


def test_cli_check_missing_pack(tmp_path):
    result = subprocess.run([sys.executable, "-m", "cleo_rules", "check", str(tmp_path / "nope")],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.startswith("Error: no rule pack at") and "Traceback" not in result.stderr


def test_bundled_pack_is_valid():
    pack = load_pack()
    assert pack.name == "cleo-en" and len(pack.corrections) >= 9
    assert textwrap.dedent(pack.settings.combine) == "{anchor}\n{topic}\n{referent}\n{message}\n{reply}"


def test_absolute_file_name_in_manifest(tmp_path):
    manifest = MANIFEST.replace("files: [vocabulary.yaml, corrections.yaml]",
                                "files: [vocabulary.yaml, corrections.yaml, /etc/passwd.yaml]")
    found = problems(make(tmp_path, manifest=manifest))
    named = next(p for p in found if p.code == "E127")
    assert (named.line, named.pointer) == (4, "/files/2")
    assert named.message == "'/etc/passwd.yaml' is not a valid file name"
    assert any(p.code == "E119" and "outside the pack" in p.message for p in found)


# -- the less common findings, each with its code -------------------------------------------


def test_file_that_is_not_utf8(tmp_path):
    d = make(tmp_path)
    (d / "corrections.yaml").write_bytes(CORR.encode().replace(b"tried already", b"tried \xff already"))
    p = only(d, "E116")
    assert (p.message, p.line) == ("file is not valid UTF-8", 4)


def test_empty_rule_file(tmp_path):
    p = only(make(tmp_path, corr="# nothing here yet\n"), "E117")
    assert p.message == "file is empty" and p.file.endswith("corrections.yaml")


def test_rule_file_that_is_not_a_mapping(tmp_path):
    p = only(make(tmp_path, corr="- kind: corrections\n"), "E120")
    assert p.message == "a rule file must be a mapping, found a list" and p.help.startswith("start the file with")


def test_file_listed_twice(tmp_path):
    manifest = MANIFEST.replace("files: [vocabulary.yaml, corrections.yaml]",
                                "files: [vocabulary.yaml, corrections.yaml, vocabulary.yaml]")
    p = only(make(tmp_path, manifest=manifest), "E126")
    assert (p.message, p.pointer) == ("items must be unique", "/files")


def test_setting_out_of_range(tmp_path):
    manifest = MANIFEST + "settings:\n  min_chars: 0\n"
    p = only(make(tmp_path, manifest=manifest), "E128")
    assert p.message.startswith("0 is out of range (minimum 1)") and p.pointer == "/settings/min_chars"


def test_named_group_in_a_pattern(tmp_path):
    assert CORR.count("(?:that|it)") == 1
    corr = CORR.replace("(?:that|it)", "(?P<what>that|it)")
    p = only(make(tmp_path, corr=corr), "E138")
    assert p.message == "pattern uses named group(s) what" and p.pointer == "/rules/0/pattern"


def test_unreadable_corpus_file_is_reported_not_raised(tmp_path):
    from cleo_rules.corpus import run_corpus

    pack = load_pack(make(tmp_path))
    corpus = tmp_path / "corpus"
    (corpus / "extra.yaml").mkdir(parents=True)  # a directory named like a corpus file
    (corpus / "gone.yaml").symlink_to(tmp_path / "nowhere.yaml")
    found = [p for p in run_corpus(pack, corpus).problems if p.code == "E108"]
    assert sorted(p.file.rsplit("/", 1)[-1] for p in found) == ["extra.yaml", "gone.yaml"]
    assert all(p.message.startswith("cannot read file: ") for p in found)


def test_head_in_must_name_a_set_of_the_lexicon(pack_copy):
    pack_copy.replace("follow_ups.yaml", "    head_in: nouns\n", "    head_in: nuons\n")
    with pytest.raises(PackError) as err:
        load_pack(pack_copy.dir)
    (p,) = [p for p in err.value.problems if p.code == "E143"]
    assert p.file.endswith("follow_ups.yaml") and p.pointer.endswith("/head_in") and "'nuons'" in p.message
    assert "nouns" in p.help


def test_a_referent_example_that_finds_another_referent_is_located(pack_copy):
    pack_copy.replace("referents.yaml", 'referent: "Cresswell quotes 1,865 with a 500 excess"', 'referent: "Hadley"')
    with pytest.raises(PackError) as err:
        load_pack(pack_copy.dir)
    (p,) = [p for p in err.value.problems if p.code == "E145"]
    assert p.rule == "referent.position" and "should find 'Hadley'" in p.message and "'Cresswell quotes 1,865" in p.message
    assert p.file.endswith("referents.yaml")
    lines = pack_copy.read("referents.yaml").splitlines()
    assert lines[p.line - 1].strip().startswith("- message:")  # the example itself


def test_a_referent_counterexample_that_finds_something_by_its_rule_is_located(pack_copy):
    text = pack_copy.read("referents.yaml")
    old = '''    counterexamples:
      - message: "Yes, go with the second one."
        history:
          - "Compare the two van insurance quotes"'''
    assert old in text
    pack_copy.write("referents.yaml", text.replace(old, old + '''
          - {role: assistant, content: "Hadley quotes 2,140 and Cresswell quotes 1,865."}''', 1))
    with pytest.raises(PackError) as err:
        load_pack(pack_copy.dir)
    (p,) = [p for p in err.value.problems if p.code == "E146"]
    assert p.rule == "referent.position" and "finds 'Cresswell quotes 1,865' by this rule" in p.message
