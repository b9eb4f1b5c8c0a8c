"""The pack's ``str.format`` templates, read with :class:`string.Formatter` when the pack is loaded.

A pack fills two kinds of template on every turn: the query templates of
``settings`` (``combine``, ``combine_resolved``: :data:`QUERY_FIELDS`) and the
wording of the context block (``context:``: :data:`CONTEXT_FIELDS`). A
template that cannot be filled would raise on every turn that uses it, and a
format spec such as ``{anchor:>100000000}`` would build a 100 MB query, so
each is read at load and may hold only:

* the documented fields of its template, written plainly (``{anchor}``);
* no conversion (``!r``, ``!s``, ``!a``), no attribute or index access
  (``{anchor.upper}``, ``{anchor[0]}``), no positional field (``{}``);
* no format spec, except a precision on a number (``{score:.2f}``, at most
  :data:`MAX_PRECISION` digits).

:func:`template_faults` says what is wrong with one template, in words;
:func:`lint_context` places the faults of the ``context:`` templates (E148).
:func:`lint_combine` places those of the query templates (E137).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable

from ..errors import Problem
from ..reading.load import LoadedFile

__all__ = ["CONTEXT_FIELDS", "MAX_PRECISION", "NUMBER_FIELDS", "QUERY_FIELDS", "lint_combine", "lint_context",
           "template_faults"]

QUERY_FIELDS = ("anchor", "topic", "referent", "message", "reply")
_TURN_FIELDS = ("query", "message", "kind", "count")
_ITEM_FIELDS = ("title", "date", "text", "score", "id", "item", "source", "rank")
#: The fields each context template may use (see :mod:`cleo_rules.context`).
CONTEXT_FIELDS = {"header": _TURN_FIELDS, "empty": _TURN_FIELDS, "skipped": _TURN_FIELDS, "footer": _TURN_FIELDS,
                  "snippet": _ITEM_FIELDS, "passage": _ITEM_FIELDS}
#: Fields that hold a number, on which a precision (``.2f``) may be given.
NUMBER_FIELDS = frozenset({"score"})
MAX_PRECISION = 6
_PRECISION = re.compile(rf"\.[0-{MAX_PRECISION}]f")


def template_faults(template: str, fields: Iterable[str], required: Iterable[str] = ()) -> list[str]:
    """What is wrong with ``template`` over ``fields`` (empty when nothing is), each a phrase
    that follows "<name> template ..." (``uses unknown field(s) nope``)."""
    allowed = tuple(fields)
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        return [f"is malformed: {exc}"]
    faults: list[str] = []
    unknown: list[str] = []
    used: set[str] = set()
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
        if name == "" or name.isdigit():
            faults.append(f"uses the positional field {shown}: name the field")
            continue
        base = re.split(r"[.\[]", name, maxsplit=1)[0]
        if base != name:
            faults.append(f"reaches into a field with {shown}: attribute and index access are not allowed")
            used.add(base)
            continue
        if conversion:
            faults.append(f"uses the conversion !{conversion} in {shown}: write the field plainly")
        if spec and not (name in NUMBER_FIELDS and _PRECISION.fullmatch(spec)):
            faults.append(f"uses the format spec :{spec} in {shown}: write the field plainly"
                          + (f" (a number may take a precision, such as .2f)" if name in NUMBER_FIELDS else ""))
        if name not in allowed:
            unknown.append(name)
        used.add(name)
    if unknown:
        faults.append(f"uses unknown field(s) {', '.join(sorted(set(unknown)))}")
    missing = [r for r in required if r not in used]
    if missing:
        faults.append(f"lacks {', '.join('{' + m + '}' for m in missing)}")
    return faults


def lint_context(source: LoadedFile, templates) -> list[Problem]:
    """Every fault of the manifest's ``context:`` templates, placed at the template (E148)."""
    problems: list[Problem] = []
    if not isinstance(templates, dict):
        return problems
    for key, template in templates.items():
        fields = CONTEXT_FIELDS.get(key)
        if fields is None or not isinstance(template, str):
            continue  # an unknown key or a value that is not a string: the schema's finding
        for fault in template_faults(template, fields):
            problems.append(source.problem("E148", f"context template {key!r} {fault}", f"/context/{key}",
                                           help=f"{key} may use {', '.join('{' + f + '}' for f in fields)}"))
    return problems


def lint_combine(source: LoadedFile, template: str, key: str = "combine",
                  required: tuple[str, ...] = ("anchor", "message")) -> list[Problem]:
    """A query template (``settings.<key>``) uses only plain {anchor}, {referent} and {message}, and all of
    ``required`` (:func:`template_faults`: no format spec, conversion, attribute or index)."""
    ptr = f"/settings/{key}"
    help = "use {anchor}, {referent} and {message}, written plainly; write {{ or }} for a literal brace"
    return [source.problem("E137", f"{key} template {fault}", ptr,
                           help=f"this query needs {' and '.join('{' + r + '}' for r in required)}"
                           if fault.startswith("lacks") else help)
            for fault in template_faults(template, QUERY_FIELDS, required)]
