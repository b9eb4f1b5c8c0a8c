"""``corpus build``, ``corpus check`` and ``corpus diff``: the generated rule corpus.

None of these import torch or sentence-transformers.
"""

from __future__ import annotations

import json
import sys

import click

corpus_dir_option = click.option(
    "--corpus", "corpus_dir", type=click.Path(file_okay=False), default=None,
    help="Corpus directory (default: corpus/ beside the pack directory).")


def _load(spec, *, check_examples: bool = True):
    from ..pack.compile import load_pack

    return load_pack(spec, check_examples=check_examples)


@click.group()
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
    Examples:
      cleo-rules corpus build
      cleo-rules corpus check --json
      cleo-rules corpus diff main:rules rules/
    """


@corpus.command()
@click.argument("pack", required=False)
@corpus_dir_option
def build(pack, corpus_dir):
    """Regenerate corpus/generated/ from PACK's templates (default: the bundled pack).

    Only files whose cases changed are rewritten; files of rules that are gone
    are removed; hand-written files are never touched.

    \b
    Examples:
      cleo-rules corpus build
      cleo-rules corpus build rules/ --corpus corpus/
    """
    from ..corpus import build_corpus

    result = build_corpus(_load(pack), corpus_dir)
    click.echo(result.format())


@corpus.command()
@click.argument("pack", required=False)
@corpus_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print the whole result as one JSON document (for CI annotations).")
@click.option("--all", "show_all", is_flag=True, help="List every failing case (default: the first 20 per rule).")
def check(pack, corpus_dir, as_json, show_all):
    """Run the corpus against PACK; exit 1 if anything fails.

    Fails when a case fails, when the checked-in corpus is stale (run `cleo-rules
    corpus build`), when a rule has no positive or no negative case, or when a
    rule fires on none of its positives. Prints TP, FN, TN, FP per rule, then
    every failing case with the rule that fired instead, then a summary line.

    \b
    Examples:
      cleo-rules corpus check
      cleo-rules corpus check rules/ --json > corpus-report.json
    """
    from ..corpus import check_corpus
    from ..errors import PackError

    try:
        pack_obj = _load(pack, check_examples=False)
    except PackError as exc:
        if as_json:
            click.echo(json.dumps({"ok": False, "problems": [p.to_dict() for p in exc.problems]}, indent=2))
            sys.exit(1)
        raise
    report = check_corpus(pack_obj, corpus_dir, examples=True)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        click.echo(report.format(max_shown=0 if show_all else 20))
    if not report.ok:
        sys.exit(1)


@corpus.command()
@click.argument("old_pack")
@click.argument("new_pack")
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
    REV:PATH for a pack as committed in git.

    \b
    Examples:
      cleo-rules corpus diff main:rules rules/
      cleo-rules corpus diff HEAD:rules rules/ --jsonl traffic.jsonl
    """
    from ..corpus.diff import diff_packs, pack_dir

    with pack_dir(old_pack) as old_dir, pack_dir(new_pack) as new_dir:
        # examples are not checked: a change that breaks them is exactly what a reviewer wants to see
        old, new = _load(old_dir, check_examples=False), _load(new_dir, check_examples=False)
        report = diff_packs(old, new, corpus_dir=corpus_dir, jsonl=jsonl, old_label=old_pack, new_label=new_pack)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        click.echo(report.format())
    if exit_code and report.changes:
        sys.exit(1)
