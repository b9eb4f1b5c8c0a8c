"""``packs``: list the rule packs that can be loaded. Imports no model code."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..errors import CleoError, UsageError

PACK_COLUMNS = ("NAME", "VERSION", "LOCALE", "SOURCE", "PATH")


def _source(info) -> str:
    if info.origin == "entry point":
        text = f"entry point {info.entry_point}"
        return text + (f" ({info.distribution})" if info.distribution else "")
    return info.origin


def _status(info, require) -> tuple[bool, str, str | None]:
    """Judge one pack as ``cleo-rules check`` and the serving gate do: ``(ok, status text, hash)``.

    :func:`cleo_rules.pack_check.check`: compiled, its version checked, then its
    examples and its corpus (when it has one beside it) judged.
    """
    from ..pack_check import check

    try:
        result = check(info.path, require=require)
        error = result.as_error()
        if error is not None:
            raise error
    except CleoError as exc:
        problems = getattr(exc, "problems", ())
        errors = sum(1 for p in problems if p.severity == "error")
        lead = str(exc).split("\n")[0] if not problems else problems[0].format().split("\n")[0]
        if errors > 1:
            lead += f" (and {errors - 1} more)"
        return False, f"error: {lead}", None
    assert result.pack is not None
    return True, f"ok ({result.pack.content_hash})", result.pack.content_hash


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [cell.ljust(widths[i]) if i < len(row) - 1 else cell for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


@click.command()
@click.argument("directories", nargs=-1, type=click.Path(file_okay=True, dir_okay=True))
@click.option("--require", metavar="RANGE", default=None,
              help="Only packs whose version is in RANGE, e.g. '>=1.0,<2' or '^1.2'.")
@click.option("--check", "check_", is_flag=True,
              help="Also judge each pack as `cleo-rules check` does (schema, lints, examples, its corpus when it "
                   "has one); exit 1 if any fails.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def packs(directories, require, check_, as_json):
    """List the rule packs that can be loaded: installed ones, the bundled one, and DIRECTORIES.

    Installed packs are advertised by Python distributions in the entry point
    group cleo_rules.packs; load one by name with --pack NAME.

    \b
    Examples:
      cleo-rules packs
      cleo-rules packs --check --require '^1.0'
      cleo-rules packs ./my-pack --json
    """
    from ..pack.discovery import VersionRange, available_packs, pack_info, resolve_pack

    wanted = VersionRange.parse(require) if require is not None else None
    infos = available_packs()
    for d in directories:
        infos.append(pack_info(resolve_pack(Path(d))))

    def in_range(info) -> bool:
        if wanted is None:
            return True
        try:
            return wanted.contains(info.version)
        except CleoError:
            return False

    listed = [i for i in infos if in_range(i)]
    if wanted is not None and not listed:
        found = ", ".join(f"{i.name} {i.version}" for i in infos if not i.error) or "none"
        raise UsageError(f"no rule pack satisfies {wanted} (available: {found})")

    failed = 0
    records = []
    for info in listed:
        record = info.to_dict()
        status = f"error: {info.error}" if info.error else None
        if info.error:
            failed += 1
        elif check_:
            ok, status, digest = _status(info, wanted)
            record["hash"] = digest
            failed += not ok
        record["ok"] = info.error is None and (status is None or status.startswith("ok"))
        record["status"] = status
        records.append((info, record))

    if as_json:
        click.echo(json.dumps({"packs": [r for _, r in records]}, indent=2, ensure_ascii=False))
    else:
        header = PACK_COLUMNS + (("STATUS",) if check_ or any(i.error for i, _ in records) else ())
        rows: list[tuple[str, ...]] = [header]
        for info, record in records:
            row = (info.name, info.version or "-", info.locale or "-", _source(info),
                   str(info.path) if info.path else "-")
            if len(header) > len(PACK_COLUMNS):
                row += (record["status"] or "ok",)
            rows.append(row)
        click.echo(_table(rows))
    if check_ and failed:
        sys.exit(1)
