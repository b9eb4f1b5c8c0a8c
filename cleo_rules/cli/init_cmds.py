"""``init`` (a team's first rule pack) and ``schemas`` (the JSON Schemas for editors)."""

from __future__ import annotations

import click

from .common import EXIT_CODES_HELP


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("directory", required=False, default=".", type=click.Path(file_okay=False))
@click.option("--name", default=None, help="The pack's name (default: from the directory's name).")
@click.option("--standalone", is_flag=True,
              help="Write a pack of its own (one vocabulary set, one follow-up pattern, one correction) instead of "
                   "one that extends cleo-en.")
def init(directory, name, standalone):
    """Start a rule pack in DIRECTORY (default: here): rules/, corpus/ and schemas/.

    By default the pack extends cleo-en, the bundled pack: its manifest names
    cleo-en (within the major version installed) with `disable:` and
    `settings:` ready to fill, beside two files for the team's own rules,
    corrections.yaml and follow_ups.yaml (each listed in the manifest, empty,
    with a commented example rule that checks once uncommented and its corpus
    built), and an empty regressions corpus; every cleo-en rule applies until
    the manifest says otherwise (`cleo-rules rules` lists every rule id, to
    disable or to replace). With --standalone it writes a pack of
    its own instead: a manifest, one vocabulary set, one follow-up pattern and
    one correction with its request forms, each with examples,
    counterexamples and templates, and the corpus generated from them. Either
    way it writes the JSON Schemas the files point at, so editors validate
    them as you type. `cleo-rules check` passes on it straight away, and finds
    it as ./rules. Nothing is overwritten.

    \b
    Examples:
      cleo-rules init team && cd team && cleo-rules check
      cleo-rules rules team/rules
      cleo-rules init --standalone team
    """
    from ..reading.load import display
    from ..starter import init_pack

    result = init_pack(directory, name=name, standalone=standalone)
    click.echo(f"wrote rule pack {result.name} 0.1.0 in {display(result.directory)}:")
    for path in result.written:
        click.echo(f"  {display(path)}")
    corpus = getattr(result.corpus, "format", None)
    if callable(corpus):
        click.echo(corpus())
    where = display(result.directory)
    step = "" if where == "." else f"cd {where} && "
    click.echo(f"next: {step}cleo-rules check")


@click.command(epilog=EXIT_CODES_HELP)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Directory to write the schemas into (created when missing).")
def schemas(out_dir):
    """Write the JSON Schemas of manifests, rule files and corpus files into --out DIR.

    Point a rule file at one with a first line such as
    `# yaml-language-server: $schema=../schemas/corrections.schema.json` and
    editors validate it as you type.

    \b
    Example:
      cleo-rules schemas --out schemas/
    """
    from ..reading.load import display
    from ..starter import write_schemas

    written = write_schemas(out_dir)
    click.echo(f"wrote {len(written)} schemas to {display(out_dir)}:")
    for path in written:
        click.echo(f"  {display(path)}")
