"""Search results and a decision, as several test modules build them (context, traces, relevance, stores)."""

from __future__ import annotations

from cleo_rules.decision import Decision
from cleo_rules.retrieval import Result

R = Result  # the store's own result type

SNIPPET = R("conversation", "c1", "c1#s0", "Van insurance renewal", "2024-02-03", "user: the van quote", 0.61)
PASSAGE = R("document", "d1", "d1#p0", "Price list 2024", "2024-01-02", "Call-out fee 45", 0.55)


def decision(kind="follow_up", query="Compare the two quotes\nYes, the second one.", message="Yes, the second one."):
    return Decision(kind=kind, rule="vocab.choice" if kind != "skip" else None, span=None, matched=None,
                    query=query, anchor="Compare the two quotes" if kind == "follow_up" else None,
                    message=message, pack="cleo-en", pack_version="1.0.0", pack_hash="abc123")
