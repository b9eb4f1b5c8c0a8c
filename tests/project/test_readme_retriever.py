"""The README's plain-Python way in front of a retriever runs as written, with a vector store of its own."""

from __future__ import annotations

import re

from cleo_rules import load_pack

from helpers import ROOT


class Store:
    """A vector store's search, as far as the example needs one: it records what it is asked."""

    def __init__(self):
        self.asked: list[tuple[str, int]] = []

    def similarity_search(self, query: str, k: int = 4) -> list[str]:
        self.asked.append((query, k))
        return [f"hit for {query!r}"] * k


def example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Use it in front of your own retriever")
    return re.search(r"```python\n(.*?)```", text[start:], re.S).group(1)


def test_the_plain_python_example_searches_the_shaped_query_or_nothing(capsys):
    code = example()
    namespace: dict = {}
    exec(compile(code, "README.md (plain Python)", "exec"), namespace)
    history = namespace["history"]
    decision = load_pack().classify("Yes, go with the second one.", history)
    assert decision.kind == "follow_up" and decision.query != decision.message
    assert namespace["decision"] == decision
    assert namespace["hits"][0].startswith("Zego Van")  # the chosen option's note, found by the shaped query
    assert capsys.readouterr().out.startswith("follow_up ")
    # the example's recall() calls the store's search with the shaped query, or not at all
    store = Store()
    shaped, hits = namespace["recall"]("Yes, go with the second one.", history, store.similarity_search)
    assert shaped == decision and store.asked == [(decision.query, 5)] and len(hits) == 5
    skipped, hits = namespace["recall"]("Thanks!", history, store.similarity_search)
    assert skipped.kind == "skip" and hits == [] and len(store.asked) == 1
