"""Rule files are data, never code; work per message is bounded.

* Only plain YAML loads: a tag that constructs objects is refused with its
  position, and nothing it names is run.
* A manifest cannot reach outside its pack directory; files are bounded in
  number and size.
* Every pattern search runs under the pack's time limit. A pattern that
  runs out of time at runtime is logged with its rule id, and the message is
  searched as typed (``substantive``): never combined, and a correction that
  timed out never lets its message fall through to ``follow_up``.
* Messages of any size classify in bounded time.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import regex

from cleo_rules import load_pack
from cleo_rules.matcher import Matcher
from cleo_rules.errors import PackError
from cleo_rules.pack.model import Pack, PatternRule, VocabSet
from cleo_rules.reading.load import MAX_FILE_BYTES, MAX_FILES

from helpers import PACKS

MINI = PACKS / "mini-1.0"


@pytest.fixture
def pack_dir(tmp_path):
    d = tmp_path / "pack"
    shutil.copytree(MINI, d)
    return d


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1))


def refused(pack_dir) -> PackError:
    with pytest.raises(PackError) as info:
        load_pack(pack_dir)
    return info.value


# -- plain YAML only ----------------------------------------------------------

@pytest.mark.parametrize("tagged", [
    "!!python/object/apply:os.system ['touch {sentinel}']",
    "!!python/object/new:os.system ['touch {sentinel}']",
    "!!python/name:os.system",
    "!!binary aGVsbG8=",
    "!custom thing",
])
def test_object_constructing_tags_are_refused_and_never_run(pack_dir, tmp_path, tagged):
    sentinel = tmp_path / "ran"
    edit(pack_dir / "corrections.yaml", "description: The user has tried it already.",
         "description: " + tagged.format(sentinel=sentinel))
    err = refused(pack_dir)
    lead = err.problems[0]
    assert lead.code == "E111"
    assert lead.file.endswith("corrections.yaml") and (lead.line, lead.col) == (4, 18)
    assert "is not allowed in rule files" in lead.message
    assert lead.help.startswith("use plain strings")
    assert not sentinel.exists()


def test_tag_in_the_manifest_is_refused(pack_dir):
    edit(pack_dir / "pack.yaml", "description: Small test pack.", "description: !!python/object:os.system {}")
    lead = refused(pack_dir).problems[0]
    assert lead.code == "E111" and lead.file.endswith("pack.yaml") and lead.line == 6


def test_aliases_are_refused(pack_dir):
    edit(pack_dir / "vocabulary.yaml", "words: [first,", "words: &w [first,")
    edit(pack_dir / "vocabulary.yaml", "words: [try,", "words: *w\n    x: [try,")
    lead = refused(pack_dir).problems[0]
    assert lead.code == "E112" and "anchor &w" in lead.message


# -- files stay inside the pack ----------------------------------------------------

@pytest.mark.parametrize("name", ["../../etc/passwd", "../../etc/passwd.yaml", "/etc/passwd.yaml",
                                  "sub/../../outside.yaml"])
def test_manifest_cannot_reach_outside_the_pack(pack_dir, name):
    edit(pack_dir / "pack.yaml", "follow_ups.yaml]", f"follow_ups.yaml, '{name}']")
    err = refused(pack_dir)
    escape = [p for p in err.problems if p.code == "E119"]
    assert escape, err.report()
    p = escape[0]
    assert p.message == f"file {name!r} is outside the pack directory"
    assert p.file.endswith("pack.yaml") and p.pointer == "/files/3" and p.line == 11
    assert p.help == "list files by a path inside the pack, without '..' or a leading '/'"


def test_symlink_out_of_the_pack_is_refused(pack_dir, tmp_path):
    outside = tmp_path / "secret.yaml"
    outside.write_text("kind: vocabulary\n")
    os.symlink(outside, pack_dir / "link.yaml")
    edit(pack_dir / "pack.yaml", "follow_ups.yaml]", "follow_ups.yaml, link.yaml]")
    assert any(p.code == "E119" and "'link.yaml' is outside" in p.message for p in refused(pack_dir).problems)


def test_oversized_file_is_refused_before_parsing(pack_dir):
    with open(pack_dir / "vocabulary.yaml", "a") as fh:
        fh.write("#" * (MAX_FILE_BYTES + 1))
    lead = refused(pack_dir).problems[0]
    assert lead.code == "E114" and f"over the limit of {MAX_FILE_BYTES}" in lead.message


def test_too_many_files_is_refused(pack_dir):
    names = [f"f{i}.yaml" for i in range(MAX_FILES + 1)]
    edit(pack_dir / "pack.yaml", "files: [vocabulary.yaml, corrections.yaml, follow_ups.yaml]",
         "files: [" + ", ".join(names) + "]")
    assert any(p.code == "E118" and "at most" in p.message for p in refused(pack_dir).problems)


def test_cli_refusal_is_an_error_not_a_traceback(pack_dir):
    edit(pack_dir / "pack.yaml", "follow_ups.yaml]", "follow_ups.yaml, ../../etc/passwd.yaml]")
    proc = subprocess.run([sys.executable, "-m", "cleo_rules", "classify", "Tell me more about that.",
                           "--pack", str(pack_dir)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.startswith("Error: ")
    assert "pack.yaml:11:" in proc.stderr and "is outside the pack directory" in proc.stderr
    assert "Traceback" not in proc.stderr


# -- time limits at runtime ---------------------------------------------------------

def test_a_pattern_that_slips_past_the_lint_times_out_and_is_searched_as_typed(caplog):
    """``tests/packs/slow`` compiles: its correction pattern has five ``.*`` in a row,
    which the lint does not flag (no nested repeat; fast on the lint's short
    probes) but which backtracks polynomially. On a long message it runs past
    the pack's 20 ms limit, as an unforeseen pattern would in production. The
    message holds every word the pattern requires ("already" comes first), so
    the prefilter cannot rule the search out."""
    pack = load_pack(PACKS / "slow")
    message = "We tried already: " + "that one " * 2000
    caplog.set_level(logging.WARNING, logger="cleo_rules")
    start = time.perf_counter()
    d = pack.classify(message, ["Which van insurer should we use?"])
    assert time.perf_counter() - start < 1.0
    assert (d.kind, d.rule, d.query, d.anchor) == ("substantive", None, message, None)
    assert d.note == "timeout in correction.tried-both"
    assert any("correction.tried-both" in r.getMessage() and r.levelno == logging.WARNING
               for r in caplog.records)
    # the same rule still fires on an ordinary message
    assert pack.classify("We tried that one and that one already.").rule == "correction.tried-both"


CATASTROPHIC = r"\b(?:a|aa)+z"  # exponential on a run of a's with no z


def _with_rules(pack: Pack, *, corrections=(), follow_ups=(), vocab_sets=()) -> Pack:
    """A copy of ``pack`` with extra rules in front, built without the compiler."""
    return Pack(name=pack.name, version=pack.version, locale=pack.locale, description="", path=pack.path,
                content_hash="test-" + pack.content_hash, settings=pack.settings,
                vocab_sets=tuple(vocab_sets) + pack.vocab_sets, follow_ups=tuple(follow_ups) + pack.follow_ups,
                corrections=tuple(corrections) + pack.corrections, context=pack.context, slots=pack.slots,
                slots_seed=pack.slots_seed)


def _rule(rid, kind, pattern):
    return PatternRule(id=rid, kind=kind, description="", pattern=pattern, examples=(), counterexamples=(),
                       file="test", line=1, compiled=regex.compile(pattern))


def test_the_compiler_refuses_the_catastrophic_pattern(pack_dir):
    edit(pack_dir / "corrections.yaml", r"pattern: '\b(?:we|i) (?:already )?tried (?:that|this|it)\b'",
         f"pattern: '{CATASTROPHIC}|\\b(?:we|i) (?:already )?tried (?:that|this|it)\\b'")
    lead = refused(pack_dir).problems[0]
    assert lead.code == "E131" and lead.rule == "correction.already-tried"


def test_timed_out_correction_never_falls_through_to_follow_up(caplog):
    """The compiler refuses this pattern (test above), so the rule is put in
    front of the mini pack's compiled rules directly, standing for a pattern
    that times out on input nobody foresaw. Without it the message is a
    follow-up and would be combined with the anchor; with it, the correction
    check cannot finish, and the message must be searched as typed."""
    base = load_pack(MINI)
    message = "Tell me more about " + "a" * 48 + "."
    history = ["Which van insurer should we use?"]
    assert base.classify(message, history).kind == "follow_up"
    pack = _with_rules(base, corrections=[_rule("correction.slow", "correction", CATASTROPHIC)])
    caplog.set_level(logging.WARNING, logger="cleo_rules")
    start = time.perf_counter()
    d = pack.classify(message, history)
    assert time.perf_counter() - start < 1.0
    assert (d.kind, d.rule, d.query, d.anchor, d.note) == ("substantive", None, message, None,
                                                           "timeout in correction.slow")
    assert "correction.slow" in caplog.text
    # a short message is unaffected: the rule only times out on a long run of a's
    assert pack.classify("Tell me more about that.", history).kind == "follow_up"


def test_timed_out_follow_up_rule_is_searched_as_typed():
    """Built directly for the same reason as above: a follow-up pattern that
    times out leaves the message substantive, not a vocabulary follow-up."""
    base = load_pack(MINI)
    pack = _with_rules(base, follow_ups=[_rule("follow_up.slow", "follow_up", CATASTROPHIC)])
    message = "Yes, that works " + "a" * 48
    d = pack.classify(message, ["Which van insurer should we use?"])
    assert (d.kind, d.query, d.note) == ("substantive", message, "timeout in follow_up.slow")


def test_timed_out_token_pattern_is_searched_as_typed():
    """Vocabulary token patterns run under the limit too. Built directly: the
    compiler would refuse this token pattern."""
    base = load_pack(MINI)
    slow = VocabSet(id="vocab.slow", role="choice", description="", words=(), token_patterns=("(?:a|aa)+z",),
                    examples=(), counterexamples=(), file="test", line=1)
    pack = _with_rules(base, vocab_sets=[slow])
    message = "Yes, that one " + "a" * 48
    d = pack.classify(message, ["Which van insurer should we use?"])
    assert (d.kind, d.query, d.note) == ("substantive", message, "timeout in vocab.slow")
    ex = pack.explain(message)
    assert ex.attempts[-1].rule == "vocab.slow" and ex.attempts[-1].note.startswith("timed out")


def test_timed_out_token_pattern_among_several_is_named():
    """With several token patterns they run as one alternation; when that runs
    out of time they are tried one by one to name the slow one."""
    base = load_pack(MINI)
    digits = VocabSet(id="vocab.digits", role="choice", description="", words=(), token_patterns=(r"\d+",),
                      examples=(), counterexamples=(), file="test", line=1)
    slow = VocabSet(id="vocab.slow", role="choice", description="", words=(), token_patterns=("(?:a|aa)+z",),
                    examples=(), counterexamples=(), file="test", line=1)
    pack = _with_rules(base, vocab_sets=[digits, slow])
    assert pack.classify("Yes, that one 42 please", HISTORY_ONE).rule == "vocab.choice"
    assert pack.kind_of("Yes, 42 of them") == "follow_up"
    d = pack.classify("Yes, that one " + "a" * 48, HISTORY_ONE)
    assert (d.kind, d.note) == ("substantive", "timeout in vocab.slow")


# -- messages of any size ----------------------------------------------------------------

TEN_MB = 10 * 1024 * 1024


@pytest.mark.parametrize("make", [
    lambda: "x" * TEN_MB,
    lambda: ("Tell me more about that. " * (TEN_MB // 25 + 1))[:TEN_MB],
    lambda: "We tried that one already. " + "é" * TEN_MB,
    lambda: " " * TEN_MB + "Compare the van insurance quotes" + "\n" * TEN_MB,
], ids=["one-word", "many-follow-ups", "correction-then-non-ascii", "white-space"])
def test_ten_megabyte_message_classifies_in_bounded_time(default_pack, make):
    message = make()
    history = ["Compare the van insurance quotes " + "y" * TEN_MB] * 3
    start = time.perf_counter()
    d = default_pack.classify(message, history)
    elapsed = time.perf_counter() - start
    assert elapsed < 0.5, f"{elapsed:.3f}s"
    assert d.kind in ("substantive", "correction")
    assert d.query is message and d.anchor is None


def test_ten_megabyte_message_with_a_slow_pattern_is_bounded_by_the_time_limit():
    pack = load_pack(PACKS / "slow")
    message = "We tried already: " + "that one " * (TEN_MB // 9)
    start = time.perf_counter()
    d = pack.classify(message)
    assert time.perf_counter() - start < 1.0
    assert (d.kind, d.query) == ("substantive", message)
    assert d.note == "timeout in correction.tried-both"


def test_white_space_only_ten_megabytes_is_skipped(default_pack):
    start = time.perf_counter()
    d = default_pack.classify(" \n\t" * (TEN_MB // 3))
    assert time.perf_counter() - start < 0.5
    assert (d.kind, d.query) == ("skip", None)


def test_scan_limit_comes_from_the_pack(default_pack):
    assert dataclasses.asdict(default_pack.settings)["max_scan_chars"] <= 1_000_000
    assert isinstance(default_pack.matcher, Matcher)


class _Flaky:
    """A compiled pattern whose first ``fails`` searches run out of time, as a
    fast search does when its thread is descheduled on a busy machine."""

    def __init__(self, pattern, fails):
        self._rx = regex.compile(pattern)
        self.fails = fails
        self.calls = 0

    def search(self, text, timeout=None):
        self.calls += 1
        if self.calls <= self.fails:
            raise TimeoutError("regex timed out")
        return self._rx.search(text, timeout=timeout)


@pytest.mark.parametrize("fails, kind, note", [
    (1, "correction", None),                                # one lost race: retried, decided normally
    (2, "substantive", "timeout in correction.flaky"),      # twice in a row: treated as a slow pattern
])
def test_one_timeout_is_retried_before_it_counts(fails, kind, note):
    """The limit is wall-clock time, so one timeout may be the machine's
    doing, not the pattern's; the search is run once more before the rule is
    reported. Built directly: a compiled pattern cannot be made to lose a race
    on demand."""
    base = load_pack(MINI)
    flaky = _Flaky(r"\bflaky\b", fails)
    rule = dataclasses.replace(_rule("correction.flaky", "correction", r"\bflaky\b"), compiled=flaky)
    pack = _with_rules(base, corrections=[rule])
    d = pack.classify("That one is flaky again.", HISTORY_ONE)
    assert (d.kind, d.note) == (kind, note)
    assert flaky.calls == 2


HISTORY_ONE = ["Which van insurer should we use?"]
