"""Hostile and careless rule packs (issue 12, items 1-9): every failure located and contained.

Each test is named after its item. The attacks run on a copy of the small
``tests/packs/mini-1.0`` pack (the bundled pack where it matters). Those that
could exhaust memory, recurse or print a traceback run ``check`` in a fresh
interpreter under ``RLIMIT_AS`` and an alarm (``hostile.run_python``), in text
and in JSON; the others run in-process.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import shutil
from pathlib import Path

import pytest
import regex
from click.testing import CliRunner

from cleo_rules import load_pack
from cleo_rules.cli import cli
from cleo_rules.corpus.files import read_dir
from cleo_rules.errors import PackError
from cleo_rules.reading import bounds
from cleo_rules.reading.backtracking import probe, static_risk
from cleo_rules.reading.load import LoadedFile, load_yaml
from cleo_rules.pack.discovery import pack_info
from cleo_rules.reading.validate import lint_pattern
from cleo_rules.resources import rules_dir
from cleo_rules.runtime import MAX_WATCHED_FILES, NO_CORPUS, PackManager

from helpers import MINI
from helpers.hostile import run_python

LOCATED = re.compile(r"^(?P<file>\S.*?):(?P<line>\d+):(?P<col>\d+): error\[(?P<code>E\d{3})\]", re.M)
RULE_PATTERN = "    pattern: '\\btell (?:me|us) more\\b'"


@pytest.fixture
def mini(tmp_path) -> Path:
    """A writable copy of the mini pack, in ``tmp_path/pack`` (no corpus beside it)."""
    path = tmp_path / "pack"
    shutil.copytree(MINI, path)
    return path


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def codes_of(exc: PackError) -> list[str]:
    return [p.code for p in exc.problems]


def refused(pack_dir: Path) -> PackError:
    with pytest.raises(PackError) as info:
        load_pack(pack_dir)
    return info.value


def check(pack_dir: Path, *args: str):
    """``cleo-rules check`` in-process; it must end with an exit code, never an exception."""
    res = CliRunner().invoke(cli, ["check", "--no-corpus", *args, str(pack_dir)])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    return res


CHECK_BOTH = '''
import contextlib, io, json, sys
from cleo_rules.cli import main
for extra in ([], ["--json"]):
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(["check", "--no-corpus", *extra, sys.argv[1]])
        except SystemExit as exc:
            code = exc.code
    print(json.dumps({"json": bool(extra), "code": code, "out": out.getvalue(), "err": err.getvalue()}))
'''


def check_in_subprocess(pack_dir: Path, *, memory: int = 1 << 30, seconds: int = 60) -> tuple[str, dict, str]:
    """``check`` (text, then --json) in a fresh interpreter under limits: ``(text output, json document, stderr)``."""
    res = run_python(CHECK_BOTH, str(pack_dir), memory=memory, seconds=seconds)
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr + res.stdout, res.stderr[-2000:]
    assert res.returncode == 0, res.stderr[-2000:]
    text_run, json_run = (json.loads(line) for line in res.stdout.strip().splitlines()[-2:])
    assert text_run["code"] == 1 and json_run["code"] == 1, (text_run, json_run)
    for run in (text_run, json_run):
        assert "Traceback" not in run["err"] and "internal error" not in run["err"], run["err"]
    return text_run["out"] + text_run["err"], json.loads(json_run["out"]), res.stderr


def assert_located(text: str, doc: dict, code: str, file_name: str) -> dict:
    """The first problem has ``code``, in ``file_name``, at a line and column, with help; text and JSON agree."""
    m = LOCATED.search(text)
    assert m is not None, text
    assert m.group("code") == code and m.group("file").endswith(file_name), text
    assert "\n  help: " in text[m.end():]
    assert doc["ok"] is False and doc["problems"], doc
    first = doc["problems"][0]
    assert first["code"] == code and first["file"].endswith(file_name)
    assert first["line"] >= 1 and first["col"] >= 1 and first["help"]
    assert (first["line"], first["col"]) == (int(m.group("line")), int(m.group("col")))
    return first


# -- 1: the repeat product and the pattern's size are bounded before regex.compile ----------------------------

BOMB = "zz(?:(?:(?:a{100}){100}){100}){100}"


def test_1_the_bomb_is_sixty_bytes_and_weighs_a_hundred_million():
    assert len(BOMB) < 60 and bounds.pattern_weight(BOMB) > 10 ** 8


@pytest.mark.parametrize("pattern", [
    BOMB,                                      # 24 GB in regex.compile before any lint ran
    "(?:(?:ab{50}){50}){50}",                  # the same product spread over a literal
    "x{100000}",                               # one count, copied out a hundred thousand times
    "a{99999999999999999999}",                 # a count past any bound
    "(?:" + "|".join(f"w{i:05d}" for i in range(4000)) + ")",   # 28,000 characters of alternatives
])
def test_1_check_refuses_a_pattern_too_big_to_compile_under_rlimit_as(mini, pattern):
    edit(mini / "follow_ups.yaml", RULE_PATTERN, "    pattern: '" + pattern + "'")
    text, doc, _ = check_in_subprocess(mini, memory=1 << 30)
    first = assert_located(text, doc, "E147", "follow_ups.yaml")
    assert first["pointer"] == "/rules/0/pattern" and first["rule"] == "follow_up.tell-me-more"


def test_1_a_list_of_small_patterns_is_bounded_as_joined(mini):
    alternatives = "".join(f"\n      - 'w{i:05d}'" for i in range(3000))
    edit(mini / "follow_ups.yaml", RULE_PATTERN, "    pattern:" + alternatives)
    assert "E147" in codes_of(refused(mini))


GATE = '''
import sys
from cleo_rules.runtime import PackManager
good, bad = sys.argv[1], sys.argv[2]
manager = PackManager(good)
print(manager.reload(bad), manager.pack.version, manager.last_error.problems[0].code)
'''


def test_1_the_pack_manager_gate_refuses_the_bomb_under_rlimit_as(tmp_path, mini):
    bad = tmp_path / "bad"
    shutil.copytree(mini, bad)
    edit(bad / "follow_ups.yaml", RULE_PATTERN, "    pattern: '" + BOMB + "'")
    res = run_python(GATE, str(mini), str(bad), memory=1 << 30)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == ["False", "1.0.0", "E147"]


def test_1_every_bundled_pattern_is_far_inside_the_bounds(default_pack):
    rules = [*default_pack.corrections, *default_pack.follow_ups, *default_pack.referent_rules]
    weights = [bounds.pattern_weight(r.pattern) for r in rules]
    assert max(weights) * 10 < bounds.MAX_PATTERN_WEIGHT
    assert max(len(r.pattern) for r in rules) * 10 < bounds.MAX_PATTERN_CHARS


# -- 2: NaN, infinity and numbers that are not whole ------------------------------------------------------------

@pytest.mark.parametrize("old, new, code", [
    ("timeout_ms: 50", "timeout_ms: .nan", "E104"),       # passes exclusiveMinimum and maximum: no timeouts at all
    ("timeout_ms: 50", "timeout_ms: .NaN", "E104"),
    ("timeout_ms: 50", "timeout_ms: .inf", "E104"),
    ("min_chars: 10", "min_chars: -.inf", "E104"),
    ("min_chars: 10", "min_chars: 10.0", "E123"),         # JSON Schema calls 10.0 an integer
    ("max_follow_up_words: 12", "max_follow_up_words: 12.5", "E123"),
    ("min_chars: 10", "min_chars: 1:30", "E103"),         # YAML 1.1 sexagesimal: 90
    ("timeout_ms: 50", "timeout_ms: 1:30.5", "E103"),
    ("max_follow_up_words: 12", "max_follow_up_words: 2:30", "E103"),
])
def test_2_settings_refuse_nan_infinity_and_numbers_that_are_not_whole(mini, old, new, code):
    edit(mini / "pack.yaml", old, new)
    exc = refused(mini)
    assert codes_of(exc)[0] == code
    first = exc.problems[0]
    assert first.file.endswith("pack.yaml") and first.col >= 3
    assert first.line == next(i for i, line in enumerate((mini / "pack.yaml").read_text().splitlines(), 1)
                              if new in line)


@pytest.mark.parametrize("value, code", [(".nan", "E104"), ("3.0", "E123"), ("1:03", "E103")])
def test_2_rule_files_refuse_them_too(mini, value, code):
    edit(mini / "follow_ups.yaml", "    max_content_words: 3", f"    max_content_words: {value}")
    assert codes_of(refused(mini))[0] == code


def test_2_the_gate_keeps_serving_when_a_reload_brings_nan(mini):
    manager = PackManager(mini)
    edit(mini / "pack.yaml", "timeout_ms: 50", "timeout_ms: .nan")
    assert manager.reload() is False
    assert manager.pack.settings.timeout_ms == 50 and "E104" in str(manager.last_error)


# -- 3: every template read with string.Formatter at load --------------------------------------------------------

@pytest.mark.parametrize("template, says", [
    ("{anchor:d}\\n{message}", "format spec :d"),           # every follow-up raised ValueError
    ("{anchor:>100000000}\\n{message}", "format spec :>100000000"),   # 100 MB queries
    ("{anchor!r}\\n{message}", "conversion !r"),
    ("{anchor.upper}\\n{message}", "attribute and index access"),
    ("{anchor[0]}\\n{message}", "attribute and index access"),
    ("{}\\n{message}", "positional field"),
    ("{nope}\\n{anchor}\\n{message}", "unknown field(s) nope"),
    ("{anchor}\\n{message", "malformed"),
    ("{message}", "lacks {anchor}"),
])
def test_3_query_templates_are_parsed_at_load(mini, template, says):
    edit(mini / "pack.yaml", "  timeout_ms: 50", f'  timeout_ms: 50\n  combine: "{template}"')
    problems = refused(mini).problems
    assert {p.code for p in problems} == {"E137"}
    (first,) = [p for p in problems if says in p.message]
    assert first.pointer == "/settings/combine" and first.line == 11


def test_3_combine_resolved_is_parsed_too(mini):
    edit(mini / "pack.yaml", "  timeout_ms: 50", '  timeout_ms: 50\n  combine_resolved: "{referent:^9999}\\n{message}"')
    (first,) = refused(mini).problems
    assert first.code == "E137" and first.pointer == "/settings/combine_resolved"


@pytest.mark.parametrize("key, template, says", [
    ("snippet", "- {title}: {nope}", "unknown field(s) nope"),     # every turn with a result raised
    ("header", "Recalled for {query:>100000000}:", "format spec"),
    ("empty", "Nothing for {query!r}.", "conversion !r"),
    ("passage", "- {text.__class__}", "attribute and index access"),
    ("footer", "{0}", "positional field"),
    ("skipped", "{title}", "unknown field(s) title"),               # an item's field where no item is
    ("snippet", "{score:>9}", "format spec"),
])
def test_3_context_templates_are_parsed_at_load(mini, key, template, says):
    with (mini / "pack.yaml").open("a", encoding="utf-8") as fh:
        fh.write(f"context:\n  {key}: {json.dumps(template)}\n")
    (first,) = refused(mini).problems
    assert first.code == "E148" and says in first.message and first.pointer == f"/context/{key}"


def test_3_a_precision_on_the_score_is_what_a_template_may_format(mini):
    with (mini / "pack.yaml").open("a", encoding="utf-8") as fh:
        fh.write('context:\n  snippet: "- {title} ({date}, {score:.2f}, #{rank}): {text}"\n')
    assert load_pack(mini).context["snippet"].endswith("{text}")


def test_3_the_gate_refuses_a_template_that_would_raise_on_every_turn(mini):
    manager = PackManager(mini)
    edit(mini / "pack.yaml", "  timeout_ms: 50", '  timeout_ms: 50\n  combine: "{anchor:d}\\n{message}"')
    assert manager.reload() is False and "E137" in str(manager.last_error)
    assert manager.classify("Tell me more about that.", ["Which van insurer should we use?"]).kind == "follow_up"


# -- 4: no traceback from check, in text or JSON -------------------------------------------------------------

def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def _nested_blocks(levels: int) -> str:
    return "kind: follow_ups\nrules:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(levels)) \
        + "  " * (levels + 1) + "v\n"


def _link_environ(pack: Path) -> None:
    (pack / "follow_ups.yaml").unlink()
    (pack / "follow_ups.yaml").symlink_to("/proc/self/environ")


F, M = "follow_ups.yaml", "pack.yaml"
# attack -> (the file it is made on, what it does to that file, the file the error names, the code)
ATTACKS_4 = {
    "a NUL byte": (F, lambda p: _write(p, p.read_text() + "\x00\n"), F, "E110"),
    "a bell byte": (F, lambda p: _write(p, p.read_text().replace("rules:", "rules: \x07", 1)), F, "E110"),
    "a link to /proc/self/environ": (F, lambda p: _link_environ(p.parent), M, "E119"),
    "the manifest a link to /proc/self/environ": (M, lambda p: p.unlink() or p.symlink_to("/proc/self/environ"),
                                                  M, "E106"),
    "flow nesting of 400 levels": (F, lambda p: _write(p, "kind: follow_ups\nrules: " + "[" * 400 + "]" * 400 + "\n"),
                                   F, "E102"),
    "block nesting of 350 levels": (F, lambda p: _write(p, _nested_blocks(350)), F, "E102"),
    "!!int abc": (M, lambda p: edit(p, "min_chars: 10", "min_chars: !!int abc"), M, "E103"),
    "!!float x": (M, lambda p: edit(p, "timeout_ms: 50", "timeout_ms: !!float x"), M, "E103"),
    "!!bool maybe": (F, lambda p: edit(p, "max_content_words: 3", "max_content_words: 3\n    unless_name: !!bool maybe"),
                     F, "E103"),
    "a 5000-digit integer": (M, lambda p: edit(p, "min_chars: 10", "min_chars: " + "9" * 5000), M, "E103"),
    "- 42 in a pattern list": (F, lambda p: edit(p, RULE_PATTERN, "    pattern:\n      - 42"), F, "E123"),
    "- [a, b] in a pattern list": (F, lambda p: edit(p, RULE_PATTERN, "    pattern:\n      - 'x'\n      - [a, b]"),
                                   F, "E123"),
    "a 5000-character file name": (M, lambda p: edit(p, "follow_ups.yaml]", "follow_ups.yaml, " + "f" * 5000 + ".yaml]"),
                                   M, "E108"),
}


@pytest.mark.parametrize("attack", list(ATTACKS_4))
def test_4_check_gives_a_located_error_never_a_traceback(mini, attack):
    made_on, attack_it, reported_in, code = ATTACKS_4[attack]
    attack_it(mini / made_on)
    text, doc, _ = check_in_subprocess(mini, memory=1 << 30)
    first = assert_located(text, doc, code, reported_in)
    assert len(first["message"]) < 300  # a 5000-character value is never echoed whole


def test_4_the_environment_behind_a_link_is_never_read(mini):
    (mini / "follow_ups.yaml").unlink()
    (mini / "follow_ups.yaml").symlink_to("/proc/self/environ")
    os.environ["CLEO_TEST_SECRET"] = "do-not-print-me"
    try:
        res = check(mini, "--json")
    finally:
        del os.environ["CLEO_TEST_SECRET"]
    assert res.exit_code == 1 and "do-not-print-me" not in res.output
    assert json.loads(res.output)["problems"][0]["code"] == "E119"


# -- 5: the ReDoS lint ------------------------------------------------------------------------------------------

FAMILIES = {
    "nested quantifiers": [r"(?:a+)+b", r"(\w+\s?)+$", r"(?:\w*)*!", r"(?:[a-z]+\d*)+!"],
    "overlapping alternatives under a repeat": [r"(?:\w|\w)+$", r"(?:[a-z]|[a-m])+$", r"(?:.|a)*!$",
                                                r"(?:ab|a|b)*c", r"(?:\d|[0-9a-f])+!"],
    "adjacent overlapping repeats": [r"\w*\w*$", r"\d+\w+$", r"[a-z]+\w*!", r"\w+\s*\w+$"],
}
PREFIXES = ["", "zq", "the "]
CASES_5 = [(family, pattern, prefix) for family, patterns in FAMILIES.items() for pattern in patterns
           for prefix in PREFIXES]


def _lint(pattern: str):
    src = LoadedFile(Path("follow_ups.yaml"), "follow_ups.yaml", {})
    return lint_pattern(src, "/rules/0/pattern", "follow_up.x", pattern)


@pytest.mark.parametrize("family, pattern, prefix", CASES_5, ids=[f"{f}: {p!r} after {x!r}" for f, p, x in CASES_5])
def test_5_check_flags_every_family_with_and_without_a_literal_prefix(family, pattern, prefix):
    _, problems = _lint(prefix + pattern)
    assert [p.code for p in problems if p.code == "E131"] == ["E131"], (family, problems)


@pytest.mark.parametrize("pattern", [r"zq(?:a|aa)+$", r"the (?:a|aa)+$", r"\bzq(?:a|aa)+$"])
def test_5_the_probe_pumps_after_the_literal_prefix(pattern):
    """``(?:a|aa)`` is read as ``a(?:|a)``, which the static check passes: the probe must reach it."""
    assert static_risk(pattern) is None
    why = probe(regex.compile(pattern), pattern, budget=0.05)
    assert why is not None and "repeated 40 times after " in why


@pytest.mark.parametrize("pattern", [
    r"\p{L}(?:\p{L}|\w)+$",           # \p{..}: read as \w
    r"zq\p{L}*\p{Ll}*$",
    r"(?>(?:a+)+b)",                  # an atomic group guards nothing inside itself
    r"(a)?(?(1)(?:b+)+|c)!",          # a conditional's arms are read
    r"\X(?:\X|a)*!$",
])
def test_5_regex_only_syntax_is_analysed_and_flagged(pattern):
    _, problems = _lint(pattern)
    assert "E131" in [p.code for p in problems]


@pytest.mark.parametrize("pattern", [r"(?:foo){e<=1}x", r"(?:cat|dog){i<=1,d<=1}", r"(?|(a)|(b))+", r"(a(?R)?b)"])
def test_5_a_pattern_neither_analysed_nor_probed_is_refused(pattern):
    assert regex.compile(pattern)  # regex compiles it: it would serve
    _, problems = _lint(pattern)
    (e131,) = [p for p in problems if p.code == "E131"]
    assert "cannot read" in e131.message


@pytest.mark.parametrize("pattern", [
    r"\p{L}+(?:\s\p{L}+)*",           # each round starts at a space
    r"\b(?:we|i)(?:'ve| have)? (?:already )?tried (?:that|this|it)\b",
    r"^(?:\w+ ){0,2}(?:food|place)\W*$",
    r"(?>\w+)\s",
    r"\w++\w*!",                      # possessive: nothing to give back
])
def test_5_safe_patterns_still_pass(pattern):
    _, problems = _lint(pattern)
    assert problems == []


def test_5_the_bundled_pack_passes_and_its_one_risky_pattern_was_made_possessive(default_pack):
    """``(?:[ ,-]+[\\w'-]+){0,3}`` split a run of hyphens two ways (``any`` + 100 hyphens + five words took
    over 5 s); the possessive form matches the same messages, with the same spans."""
    (rule,) = [r for r in default_pack.follow_ups if r.id == "follow_up.fragment"]
    assert r"(?:[ ,-]++[\w'-]++){0,3}" in rule.pattern
    old = rule.pattern.replace(r"(?:[ ,-]++[\w'-]++){0,3}", r"(?:[ ,-]+[\w'-]+){0,3}")
    assert static_risk(old) is not None and static_risk(rule.pattern) is None
    new_rx, old_rx = regex.compile(rule.pattern), regex.compile(old)
    words = ["any", "some", "cheap", "either", "-", "--", " ", ",", "'", "a", "b-c", "é", "!", "?"]
    for parts in itertools.product(words, repeat=4):
        message = "".join(parts)
        a, b = old_rx.search(message, timeout=1), new_rx.search(message, timeout=1)
        assert (a and a.span()) == (b and b.span()), message


# -- 6: corpus files read with the rule files' loader and bounds ------------------------------------------------

LAUGHS = "kind: corpus\ngenerated: {rule: vocab.nod}\n" + "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")) + "cases: *i\n"


def _corpus(tmp_path: Path) -> Path:
    gen = tmp_path / "corpus" / "generated"
    gen.mkdir(parents=True)
    return gen


def test_6_a_billion_laughs_corpus_file_is_refused_at_once_under_rlimit_as(tmp_path, mini):
    assert len(LAUGHS.encode()) < 600
    (_corpus(tmp_path) / "vocab.nod.yaml").write_text(LAUGHS, encoding="utf-8")
    code = '''
import sys, time
from pathlib import Path
from cleo_rules.corpus.files import read_dir
start = time.process_time()
hand, gen, problems = read_dir(Path(sys.argv[1]))
print(time.process_time() - start, problems[0].code, problems[0].line, problems[0].col, problems[0].message)
'''
    res = run_python(code, str(tmp_path / "corpus"), memory=1 << 30, seconds=30)
    assert res.returncode == 0, res.stderr[-2000:]
    seconds, code_, line, col, message = res.stdout.split(maxsplit=4)
    assert float(seconds) < 1 and code_ == "E210" and (line, col) == ("3", "4") and "anchor &a" in message


def test_6_the_gate_pays_nothing_for_it_on_reload(tmp_path, mini):
    manager = PackManager(mini)
    (_corpus(tmp_path) / "vocab.nod.yaml").write_text(LAUGHS, encoding="utf-8")
    assert manager.reload() is False and "E210" in str(manager.last_error)


@pytest.mark.parametrize("content, says", [
    ("kind: corpus\ngenerated: {rule: x}\ncases:\n" + "  - {id: c, message: " + "x" * (1 << 20) + ", expect: skip}\n",
     "over the limit"),
    ("kind: corpus\ngenerated: {rule: x}\ncases: " + "[" * 500 + "]" * 500 + "\n", "nested more than"),
    ("kind: corpus\ngenerated: !!python/object:os.system {rule: x}\ncases: []\n", "not allowed"),
    ("kind: corpus\ngenerated: {rule: x}\ncases:\n  - {id: c, message: hi, expect: skip, n: .nan}\n", "not a finite"),
])
def test_6_generated_files_meet_the_rule_files_bounds(tmp_path, content, says):
    (_corpus(tmp_path) / "x.yaml").write_text(content, encoding="utf-8")
    _, _, problems = read_dir(tmp_path / "corpus")
    assert problems and problems[0].code == "E210" and says in problems[0].message and problems[0].line >= 1


def test_6_a_fifo_in_the_corpus_does_not_hang_the_gate(tmp_path):
    os.mkfifo(_corpus(tmp_path) / "x.yaml")
    _, _, problems = read_dir(tmp_path / "corpus")
    assert problems[0].code == "E210" and "not a regular file" in problems[0].message


# -- 7: the manifest is confined to the pack; nothing outside it is echoed ---------------------------------------

SECRET = "root:$6$do-not-echo-this-hash:19000:0:99999:7:::\nsecret_key: do-not-echo-this-either\n"


def test_7_a_manifest_linked_outside_the_pack_is_refused_unread(tmp_path, mini):
    outside = tmp_path / "shadow"
    outside.write_text(SECRET, encoding="utf-8")
    (mini / "pack.yaml").unlink()
    (mini / "pack.yaml").symlink_to(outside)
    for args in ((), ("--json",)):
        res = check(mini, *args)
        assert res.exit_code == 1 and "E106" in res.output
        assert "do-not-echo" not in res.output and "secret_key" not in res.output
    info = pack_info(mini)
    assert "outside the pack directory" in (info.error or "") and "do-not-echo" not in repr(info)


def test_7_a_manifest_linked_inside_the_pack_is_read(mini):
    (mini / "real.yaml").write_text((mini / "pack.yaml").read_text())
    (mini / "pack.yaml").unlink()
    (mini / "pack.yaml").symlink_to("real.yaml")
    assert load_pack(mini).name == "mini"


def test_7_a_member_linked_outside_is_refused_unread(tmp_path, mini):
    outside = tmp_path / "secret.yaml"
    outside.write_text(SECRET, encoding="utf-8")
    (mini / "follow_ups.yaml").unlink()
    (mini / "follow_ups.yaml").symlink_to(outside)
    res = check(mini)
    assert res.exit_code == 1 and "E119" in res.output and "do-not-echo" not in res.output


def test_7_a_corpus_file_linked_outside_the_corpus_is_refused_unread(tmp_path):
    outside = tmp_path / "secret.yaml"
    outside.write_text("kind: corpus\ncases:\n  - {id: x, message: do-not-echo-this, expect: nonsense}\n")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "regressions.yaml").symlink_to(outside)
    _, _, problems = read_dir(corpus)
    assert [p.code for p in problems] == ["E214"]
    assert all("do-not-echo" not in p.format() for p in problems)


# -- 8: reload sees every member; a pack without a corpus says what judged it ------------------------------------

def test_8_reload_sees_a_change_to_a_hidden_member_file(mini):
    (mini / "follow_ups.yaml").rename(mini / ".follow_ups.yaml")
    edit(mini / "pack.yaml", "follow_ups.yaml]", ".follow_ups.yaml]")
    manager = PackManager(mini)
    before = manager.pack.content_hash
    edit(mini / ".follow_ups.yaml", "Tell me more about that.", "Tell me more about that one.")
    assert manager.reload() is True and manager.pack.content_hash != before
    assert manager.poll() is False  # the watcher sees nothing new after the reload


def test_8_the_watcher_sees_a_hidden_member_change(mini):
    (mini / "follow_ups.yaml").rename(mini / ".follow_ups.yaml")
    edit(mini / "pack.yaml", "follow_ups.yaml]", ".follow_ups.yaml]")
    manager = PackManager(mini)
    edit(mini / ".follow_ups.yaml", "Tell me more about that.", "Tell me more about that one.")
    assert manager.poll() is False and manager.poll() is True  # seen, settled, loaded


def test_8_reload_is_not_fooled_by_a_thousand_files_sorting_first(mini):
    for i in range(MAX_WATCHED_FILES + 1):
        (mini / f"0{i:04d}.yaml").write_text("x: 1\n")
    manager = PackManager(mini)
    before = manager.pack.content_hash
    edit(mini / "follow_ups.yaml", "Tell me more about that.", "Tell me more about that one.")
    assert manager.reload() is True and manager.pack.content_hash != before


def test_8_without_a_corpus_status_and_the_log_say_the_gate_ran_the_examples_only(mini, caplog):
    caplog.set_level(logging.INFO, logger="cleo_rules")
    manager = PackManager(mini)
    assert manager.status()["corpus"] is None and manager.status()["gate"] == NO_CORPUS
    assert NO_CORPUS in caplog.text
    # the blind spot it names: a rule file cut at a rule boundary still passes the examples
    path = mini / "follow_ups.yaml"
    whole = path.read_text()
    path.write_text(whole + """  - id: follow_up.go-on
    description: Asking to continue.
    pattern: '\\bgo on\\b'
    examples: ["Go on, then."]
    counterexamples: ["Go online to renew the van insurance policy"]
""")
    assert manager.reload() is True and len(manager.pack.follow_ups) == 2
    caplog.clear()
    path.write_text(whole)
    assert manager.reload() is True and len(manager.pack.follow_ups) == 1
    assert NO_CORPUS in caplog.text and manager.status()["gate"] == NO_CORPUS


def test_8_with_a_corpus_status_names_it(tmp_path):
    shutil.copytree(rules_dir(), tmp_path / "rules")
    shutil.copytree(rules_dir().parent / "corpus", tmp_path / "corpus")
    status = PackManager(tmp_path / "rules").status()
    assert status["corpus"] == str((tmp_path / "corpus").resolve()) and status["gate"] == "examples and corpus"


# -- 9: lines and columns as editors count them ------------------------------------------------------------------

@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085"])
def test_9_errors_after_unicode_separators_are_placed_as_editors_count(mini, separator):
    path = mini / "follow_ups.yaml"
    text = path.read_text(encoding="utf-8")
    text = text.replace("kind: follow_ups", f"# a comment{separator}with a separator\nkind: follow_ups", 1)
    text = text.replace("    description: Asking for more on the current subject.",
                        f"    description: \"Asking{separator}for more.\"\n    bogus: 1", 1)
    path.write_text(text, encoding="utf-8")
    exc = refused(mini)
    (first,) = [p for p in exc.problems if p.code == "E121"]
    editor_line = next(i for i, line in enumerate(text.split("\n"), 1) if "bogus" in line)
    assert (first.line, first.col) == (editor_line, 5)


def test_9_a_nel_in_a_comment_leaves_a_valid_file_valid(mini):
    path = mini / "vocabulary.yaml"
    plain = load_yaml(path)[0]
    path.write_text("# the nod words\u0085 and: the rest\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    with_nel, problems = load_yaml(path)
    assert problems == [] and with_nel is not None and plain is not None
    assert with_nel.data == plain.data
    assert load_pack(mini).name == "mini"


def test_9_separators_inside_strings_are_kept(mini):
    path = mini / "follow_ups.yaml"
    edit(path, "    description: Asking for more on the current subject.",
         '    description: "Asking\u2028for more\u0085on the\u2029subject."')
    (rule,) = load_pack(mini).follow_ups
    assert rule.description == "Asking\u2028for more\u0085on the\u2029subject."
