"""``rules``: every rule id of a pack and of the packs it is built on. Imports no embedding runtime."""

from __future__ import annotations

import json

import click

from .common import EXIT_CODES_HELP, composition_lines, find, pack_line, plain

RULE_COLUMNS = ("ID", "KIND", "PACK", "STATUS", "DESCRIPTION")


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(widths[i]) if i < len(row) - 1 else cell
                               for i, cell in enumerate(row)).rstrip() for row in rows)


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("pack_dir", required=False, metavar="[PACK]")
@click.option("--where", is_flag=True, help="Add the file and line each rule is defined at.")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON document: the pack used and every rule, with its file and line.")
def rules(pack_dir, where, as_json):
    """List every rule of a pack and of the packs it is built on: id, kind, pack, description.

    PACK is found as `cleo-rules check` finds it (default: ./rules, else the
    bundled cleo-en). Each rule names the pack it comes from; a rule that a
    `disable:` leaves out is listed last, marked "disabled by" the pack that
    disables it, and a rule with a base rule's id is marked as replacing it.
    Put an id in `disable:` of pack.yaml to turn the rule off, or define a rule
    of the same id in the pack's own files to replace it.

    \b
    Examples:
      cleo-rules rules
      cleo-rules rules --where | grep correction
      cleo-rules rules rules/ --json
    """
    from ..pack.compile import compile_pack
    from ..rule_list import list_rules

    found = find(pack_dir)
    pack = compile_pack(found.path, check_examples=False)  # a pack whose examples fail still has ids to list
    listed = list_rules(pack)
    if as_json:
        doc = {"pack": found.record(pack), "rules": [r.to_dict() for r in listed]}
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
        return
    header = RULE_COLUMNS[:4] + (("AT",) if where else ()) + RULE_COLUMNS[4:]
    rows: list[tuple[str, ...]] = [header]
    for r in listed:
        at = (f"{r.file}:{r.line}" if r.file else "-",) if where else ()
        rows.append((r.id, r.kind or "-", r.pack, r.status() or "-", *at, r.description))
    lines = [f"pack: {pack_line(pack, found)}", *composition_lines(pack), _table(rows)]
    disabled = sum(1 for r in listed if r.disabled_by is not None)
    lines.append(f"{len(listed) - disabled} rules apply, {disabled} disabled")
    click.echo(plain("\n".join(lines), found, pack.name, pack))
