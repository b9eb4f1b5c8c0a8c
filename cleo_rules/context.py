"""The context block: what the model is told about memory on one turn.

There are exactly three situations, and the block says which one happened:

* no search was made (the turn was skipped): the pack's ``skipped`` template.
  It never says that a search came back empty, because none ran;
* a search ran and nothing cleared the score floor: the ``empty`` template;
* a search ran and found items: ``header``, then one line per item from the
  ``snippet`` template (conversations) or the ``passage`` template
  (documents), then ``footer`` when the pack has a non-empty one.

All wording comes from the rule pack's ``context:`` section (see
:attr:`cleo_rules.pack.model.Pack.context`), not from this module. The
templates are ``str.format`` strings; the fields they can use are

``header``, ``empty``, ``skipped``, ``footer``
    ``query`` (the query actually searched; empty for ``skipped``),
    ``message`` (the user's message), ``kind``, ``count`` (number of items)
``snippet``, ``passage``
    ``title``, ``date``, ``text``, ``score`` (a float: ``{score:.2f}``),
    ``id`` (conversation or document id), ``item`` (snippet or passage id),
    ``source``, ``rank`` (1-based)

An unknown field in a template is a :class:`~cleo_rules.errors.UsageError`
naming the template, raised when the block is built. A pack's templates are
read when the pack is loaded (:mod:`cleo_rules.pack.templates`: only these
fields, written plainly, a precision such as ``{score:.2f}`` aside), so a
pack that loads never raises here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .errors import UsageError

TEMPLATE_KEYS = ("skipped", "empty", "header", "snippet", "passage")
"""Templates every pack must provide (``footer`` is optional)."""

_ITEM_TEMPLATE = {"conversation": "snippet", "document": "passage"}


def _format(templates: Mapping[str, str], key: str, fields: dict) -> str:
    try:
        template = templates[key]
    except KeyError:
        raise UsageError(f"the rule pack has no context template {key!r} (context: section of pack.yaml)") from None
    try:
        return template.format(**fields)
    except (KeyError, IndexError, ValueError, AttributeError) as exc:
        raise UsageError(f"context template {key!r} cannot be filled: {exc!r} in {template!r}") from None


def item_fields(result, rank: int) -> dict:
    """The fields a ``snippet``/``passage`` template can use for one result."""
    return {
        "title": result.title or "",
        "date": result.date or "",
        "text": result.text,
        "score": float(result.score),
        "id": result.id,
        "item": result.item,
        "source": result.source,
        "rank": rank,
    }


def build_context(
    templates: Mapping[str, str],
    *,
    query: str | None,
    results: Sequence = (),
    message: str = "",
    kind: str = "",
) -> str:
    """Render the context block for one turn.

    ``query`` is the query actually searched, ``None`` when no search was
    made; ``results`` are :class:`~cleo_rules.retrieval.Result` objects (or
    anything with the same attributes), best first.

    >>> t = {"skipped": "No memory search was made for this turn.",
    ...      "empty": "Searched {query!r}: nothing relevant.",
    ...      "header": "Recalled for {query!r}:", "snippet": "- {title} ({date}): {text}",
    ...      "passage": "- doc {title} ({date}): {text}"}
    >>> build_context(t, query=None, message="Yes.")
    'No memory search was made for this turn.'
    >>> build_context(t, query="kiln quotes", results=())
    "Searched 'kiln quotes': nothing relevant."
    """
    base = {"query": query or "", "message": message, "kind": kind, "count": len(results)}
    if query is None:
        return _format(templates, "skipped", base)
    if not results:
        return _format(templates, "empty", base)
    lines = [_format(templates, "header", base)]
    for rank, result in enumerate(results, 1):
        key = _ITEM_TEMPLATE.get(result.source)
        if key is None:
            raise UsageError(f"result {result.item!r} has unknown source {result.source!r}")
        lines.append(_format(templates, key, item_fields(result, rank)))
    footer = templates.get("footer") or ""
    if footer:
        lines.append(_format(templates, "footer", base))
    return "\n".join(line for line in lines if line != "")
