"""Comparing compiled packs field for field (the compiled-pack cache and the editing loop's hand-over)."""

from __future__ import annotations

from cleo_rules.pack import cache, snapshot

QUOTES = ["Compare the two van insurance quotes",
          {"role": "assistant", "content": "Hadley quotes 2,140 a year and Cresswell 1,865."}]


def same_pack(a, b, *, same_process: bool = True) -> None:
    """``a`` and ``b`` are the same compiled pack, field for field.

    The prefilter's requirements of a pattern are one of several sound sets,
    chosen in the order a set of strings is walked, which depends on the
    process's hash seed: packs compiled in two processes may differ there
    only (and decide alike).
    """
    mine, theirs = snapshot.to_data(a), snapshot.to_data(b)
    if not same_process:
        mine.pop("requirements")
        theirs.pop("requirements")
        for message, history in probe_messages(a):
            assert a.classify(message, history) == b.classify(message, history)
    assert mine == theirs
    assert a.path == b.path and a.content_hash == b.content_hash
    assert a.manifest == b.manifest and dict(a.sources) == dict(b.sources)
    for mine, theirs in zip(a.sources.values(), b.sources.values(), strict=True):
        assert (mine.values, mine.keys, mine.styles) == (theirs.values, theirs.keys, theirs.styles)
    rules = a.rules + a.referent_rules
    assert rules == b.rules + b.referent_rules
    for mine, theirs in zip(rules, b.rules + b.referent_rules, strict=True):
        compiled = getattr(mine, "compiled", None)
        if compiled is not None:
            assert (compiled.pattern, compiled.flags) == (theirs.compiled.pattern, theirs.compiled.flags)
        assert a.source(mine).display == mine.file
    assert a.matcher.requirements == b.matcher.requirements or not same_process


def probe_messages(pack) -> list[tuple[str, list]]:
    out: list[tuple[str, list]] = []
    for rule in pack.rules + pack.referent_rules:
        for ex in rule.examples + rule.counterexamples:
            if isinstance(ex, dict):
                out.append((ex["message"], list(ex.get("history") or [])))
            else:
                out.append((ex, QUOTES))
    return out


def entry_reads(monkeypatch) -> list[str]:
    """The kind of every entry read from the compiled-pack cache from now on (``Store.read``), in order."""
    calls: list[str] = []
    real = cache.Store.read

    def spy(self, key, kind="pack"):
        calls.append(kind)
        return real(self, key, kind)

    monkeypatch.setattr(cache.Store, "read", spy)
    return calls
