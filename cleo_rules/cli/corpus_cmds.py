"""``corpus build``, ``corpus check`` and ``corpus diff``: the generated rule corpus.

None of these import an embedding runtime (ONNX Runtime, torch).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from .common import EXIT_CODES_HELP, SuggestingGroup, find, pack_line
from .outputs import format_option
from .rules_cmds import check_report

corpus_dir_option = click.option(
    "--corpus", "corpus_dir", type=click.Path(file_okay=False), default=None,
    help="Corpus directory (default: corpus/ beside the pack directory).")


def _compile(found, *, check_examples: bool = True):
    from ..pack.compile import compile_pack

    return compile_pack(found.path, check_examples=check_examples)


@click.group(cls=SuggestingGroup, epilog=EXIT_CODES_HELP)
def corpus():
    """Build, check and diff the generated rule corpus.

    \b
    The corpus asserts every rule both ways: messages that must fire it and
    messages that must not (for corrections, their request forms, which must
    stay follow-ups). Rules carry templates (`generate:`), the pack's slots
    file the fillers; `build` expands them into corpus/generated/, one file per
    rule. Hand-written cases go in corpus/regressions.yaml and are never
    overwritten.

    \b
    The pack is PACK when given; else $CLEO_RULES_PACK, else [tool.cleo-rules]
    pack in the nearest pyproject.toml, else ./rules when it holds a pack.yaml,
    else the bundled cleo-en.

    \b
    Examples:
      cleo-rules corpus build
      cleo-rules corpus check --format github
      cleo-rules corpus diff main:rules
    """


@corpus.command(epilog=EXIT_CODES_HELP)
@click.argument("pack", required=False)
@corpus_dir_option
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Write the corpus into this directory instead (required for the bundled pack of an installed "
                   "cleo-rules, which is never written to).")
def build(pack, corpus_dir, out_dir):
    """Regenerate corpus/generated/ beside PACK from its templates.

    Only files whose cases changed are rewritten; files of rules that are gone
    are removed; hand-written files are never touched. Nothing is ever written
    into the installed cleo-rules package: for its bundled pack give --out DIR.

    \b
    Examples:
      cleo-rules corpus build
      cleo-rules corpus build rules/ --out corpus/
    """
    from ..corpus import build_corpus, default_corpus_dir
    from ..errors import UsageError
    from ..resources import inside_package
    from ..reading.load import display

    found = find(pack)
    pack_obj = _compile(found)
    target = Path(out_dir or corpus_dir) if (out_dir or corpus_dir) else default_corpus_dir(pack_obj)
    if inside_package(target):
        raise UsageError(f"{pack_obj.name} is the bundled pack of an installed cleo-rules ({display(found.path)}); "
                         f"corpus build never writes into the installed package; give --out DIR to write the corpus "
                         f"elsewhere, or start a pack of your own with `cleo-rules init`", code="E204")
    click.echo(f"pack: {pack_line(pack_obj, found)}")
    click.echo(build_corpus(pack_obj, target).format())


@corpus.command(epilog=EXIT_CODES_HELP)
@click.argument("pack", required=False)
@corpus_dir_option
@format_option
@click.option("--all", "show_all", is_flag=True, help="List every failing case (default: the first 20 per rule).")
def check(pack, corpus_dir, outputs, show_all):
    """Run the corpus against PACK; exit 1 if anything fails.

    Fails when a case fails, when the checked-in corpus is stale (run `cleo-rules
    corpus build`), when a rule has no positive or no negative case, or when a
    rule fires on none of its positives. Prints TP, FN, TN, FP per rule, then
    every failing case with the rule that fired instead, then a summary line.
    -o FILE and --F-output FILE write reports into files, as for `cleo-rules
    check`.

    \b
    Examples:
      cleo-rules corpus check
      cleo-rules corpus check rules/ --json > corpus-report.json
      cleo-rules corpus check --junit-output corpus.xml
    """
    from ..pack_check import check as check_pack

    # the corpus always runs (a missing one is a finding), and its report shows the pack's own examples too
    result = check_pack(find(pack), corpus_dir, corpus_required=True)
    outputs.emit(lambda fmt: check_report(result, fmt, "corpus check", max_shown=0 if show_all else 20))
    if not result.ok:
        sys.exit(1)


@corpus.command(epilog=EXIT_CODES_HELP)
@click.argument("old_pack")
@click.argument("new_pack", required=False)
@click.option("--jsonl", "jsonl", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help='Also compare the messages of this JSON Lines file ({"message": ..., "history": [...]} per line); '
                   "repeat for more.")
@corpus_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print the changes as one JSON document.")
@click.option("--exit-code", is_flag=True, help="Exit 1 when any kind or query changes (like git diff --exit-code).")
def diff(old_pack, new_pack, jsonl, corpus_dir, as_json, exit_code):
    """Show every message whose kind or query changes between OLD_PACK and NEW_PACK.

    Compares the checked-in corpus, the cases both packs' templates generate
    and the messages of any --jsonl file, side by side. A corpus case is
    BROKEN when the old pack got it right and the new one does not, FIXED in
    the reverse case. A pack is a directory, an installed pack's name, or
    REV:PATH for a pack as committed in git. Without NEW_PACK, the new pack
    is the one the other commands use (see `cleo-rules corpus --help`).

    \b
    Examples:
      cleo-rules corpus diff main:rules
      cleo-rules corpus diff HEAD:rules rules/ --jsonl traffic.jsonl
    """
    from ..corpus.diff import diff_packs, pack_dir
    from ..pack.compile import compile_pack
    from ..pack.discovery import find_pack

    if new_pack is None:
        found_new = find(None)
        new_spec, new_label = str(found_new.path), f"{found_new.to_dict()['path']} ({found_new.describe()})"
    else:
        new_spec = new_label = new_pack
    with pack_dir(old_pack) as old_dir, pack_dir(new_spec) as new_dir:
        # examples are not checked: a change that breaks them is exactly what a reviewer wants to see
        old = compile_pack(find_pack(old_dir).path, check_examples=False)
        new = compile_pack(find_pack(new_dir).path, check_examples=False)
        report = diff_packs(old, new, corpus_dir=corpus_dir, jsonl=jsonl, old_label=old_pack, new_label=new_label)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        click.echo(report.format())
    if exit_code and report.changes:
        sys.exit(1)

