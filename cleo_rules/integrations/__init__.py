"""cleo-rules in front of a retriever you already have: LangChain and LlamaIndex.

Both adapters wrap any base retriever of their framework and keep its
interface. On each call they read the conversation (the framework's own
chat messages: human or user turns are the user's, AI or assistant turns
the assistant's, system and tool messages are passed over), classify the
last user message with the turns before it, and

* on a turn with a query, call the base retriever with the **shaped
  query** (``decision.query``) and return its results, each carrying the
  decision in its metadata under ``"cleo_rules"``: kind, rule, query, anchor,
  referent, pack, pack version and hash (see :func:`decision_metadata`);
* on a **skipped** turn, return nothing without calling the base retriever,
  and tell the caller why through the framework's own events.

``cleo_rules.integrations.langchain``    :class:`~cleo_rules.integrations.langchain.CleoRulesRetriever`
                                          (``pip install 'cleo-rules[langchain]'``)
``cleo_rules.integrations.llama_index``  :class:`~cleo_rules.integrations.llama_index.CleoRulesRetriever`
                                          (``pip install 'cleo-rules[llama-index]'``)

Importing this package imports neither framework.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DECISION_EVENT", "METADATA_KEY", "classifier", "decision_metadata", "text_of"]

#: where each result's metadata carries the decision
METADATA_KEY = "cleo_rules"
#: the name of the event that carries each decision (a LangChain custom event)
DECISION_EVENT = "cleo_rules.decision"


def classifier(pack: Any = None):
    """What classifies: ``pack`` itself when it has ``classify`` (a compiled pack, a
    :class:`~cleo_rules.PackManager`), else the pack that :func:`cleo_rules.load_pack` loads
    from it (a directory, an installed pack's name, or None for the bundled pack)."""
    if pack is not None and callable(getattr(pack, "classify", None)):
        return pack
    from ..pack.compile import load_pack

    return load_pack(pack)


def decision_metadata(decision) -> dict:
    """The decision as a result's metadata (and an event's data): plain JSON values only."""
    return {
        "kind": decision.kind,
        "rule": decision.rule,
        "query": decision.query,
        "anchor": decision.anchor,
        "referent": decision.referent,
        "searched": decision.query is not None,
        "pack": decision.pack,
        "pack_version": decision.pack_version,
        "pack_hash": decision.pack_hash,
        "note": decision.note,
    }


def text_of(content) -> str | None:
    """A chat message's text: a string as it is; a list of parts, its text parts joined by a space
    (as :mod:`cleo_rules.history` reads them); None when it holds no text."""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        texts = [p if isinstance(p, str) else p.get("text") for p in content
                 if isinstance(p, str) or (isinstance(p, dict) and p.get("type", "text") == "text"
                                           and isinstance(p.get("text"), str))]
        return " ".join(t for t in texts if t is not None) if texts else None
    return None
