"""Long flow sequences of strings read by ``reading/flow.py``: the same documents, positions and errors as the loader.

``parse_yaml`` reads a file's long flow sequences of plain strings itself and
lets the YAML loader read the rest; ``min_flow_items`` huge turns that off,
so every test compares the two readings of the same text: data, the position
of every value and key, scalar styles, and the problems (code, message,
place) when the text is not valid.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleo_rules.incremental import clear_memos
from cleo_rules.reading import flow, load
from cleo_rules.reading.load import MAX_YAML_DEPTH, parse_yaml
from cleo_rules.resources import rules_dir

NEVER = 10 ** 9  # min_flow_items that leaves every sequence to the loader


def readings(text: str, name: str = "f.yaml", min_items: int = 1):
    """``(with flow.py, loader alone)``: each ``(data, values, keys, styles, problems)`` or None, problems."""
    def read(n):
        clear_memos()  # each reading parses afresh, never the process's memo of an earlier one
        src, problems = parse_yaml(text, Path(name), name, min_flow_items=n)
        got = None if src is None else (src.data, list(src.values.items()), list(src.keys.items()),
                                        list(src.styles.items()))
        return got, problems
    return read(min_items), read(NEVER)


def data(reading):
    """The document of a reading that succeeded."""
    got, problems = reading
    assert got is not None, problems
    return got[0]


def places(reading) -> dict:
    """The position of every value of a reading that succeeded, by pointer."""
    got, problems = reading
    assert got is not None, problems
    return dict(got[1])


def used_runs(monkeypatch, text: str, min_items: int = 1) -> list[bool]:
    """Whether each sequence ``flow.find_runs`` found in ``text`` was read by it (not re-read by the loader)."""
    seen: list[list] = []
    real = flow.find_runs

    def spy(*args, **kwargs):
        runs = real(*args, **kwargs)
        seen.append(runs)
        return runs

    monkeypatch.setattr(flow, "find_runs", spy)
    clear_memos()  # a text parsed earlier in the process would be answered from the memo, without flow.find_runs
    parse_yaml(text, Path("f.yaml"), "f.yaml", min_flow_items=min_items)
    return [r.used for r in seen[0]] if seen else []


def test_the_bundled_lexicon_reads_the_same_and_through_flow(monkeypatch):
    text = (rules_dir() / "lexicon.yaml").read_text(encoding="utf-8")
    fast, full = readings(text, "lexicon.yaml", flow.MIN_ITEMS)
    assert fast == full and full[0] is not None and not full[1]
    used = used_runs(monkeypatch, text, flow.MIN_ITEMS)
    assert len(used) >= 5 and all(used)  # every word list was read by flow.py
    assert sum(len(v["words"]) for v in data(full)["sets"].values()) > 20000


@pytest.mark.parametrize("name", sorted(p.name for p in rules_dir().glob("*.yaml")))
def test_every_bundled_file_reads_the_same(name):
    fast, full = readings((rules_dir() / name).read_text(encoding="utf-8"), name)
    assert fast == full and full[0] is not None


def test_a_sequence_in_a_block_scalar_or_comment_is_text(monkeypatch):
    text = ('note: |\n  words: [\n    "a", "b",\n    "c" ]\n'
            '# words: ["x", "y"]\n'
            'real: [\n  "p", "q",\n  "r"]\n'
            "quoted: 'x\n  words: [\"m\", \"n\"]'\n")
    fast, full = readings(text)
    assert fast == full
    assert data(full)["note"] == 'words: [\n  "a", "b",\n  "c" ]\n' and data(full)["real"] == ["p", "q", "r"]
    # the block scalar's and the quoted string's were found but are no sequences: the loader read the file again
    assert used_runs(monkeypatch, text) == [False, True, False]


def test_positions_of_strings_are_the_loaders():
    text = 'kind: lexicon\nsets:\n  a:\n    words: [\n"x", "y",\n      "z" ,  "w",\n   ]\n    after: 1\n'
    fast, full = readings(text)
    assert fast == full
    values = places(full)
    assert values["/sets/a/words/0"] == (5, 1) and values["/sets/a/words/3"] == (6, 14)
    assert values["/sets/a/after"] == (8, 12)


def test_line_separators_and_a_carriage_return_read_the_same():
    for text in ('w: [\n  "a\x85b", "c\u2028", "\u2029"]\nx: "\x85"\n', 'w: ["a", "b"]\r\nx: [\r"c", "d"]\n',
                 '\ufeffw: [\n  "a", "b"]\n'):
        assert readings(text)[0] == readings(text)[1]


def test_errors_after_a_sequence_are_placed_as_the_loaders():
    for text in ('w: [\n  "a", "b",\n  "c"]\nx: [1,\ny: 2\n', 'w: [\n  "a", "b"]\nw: [\n  "c"]\n',
                 'w: [\n  "a", "b"]\nx: !!python/object:os.system 1\n', 'w: [\n  "a", "b"] junk\n',
                 'w: [\n  "a",\n  "b"]\n  : 2\n', 'w: &a [\n  "a", "b"]\n', 'w: !!set [\n  "a", "b"]\n',
                 'w: [\n  "a", "b"]\n\x00\n', 'w: [\n  "a", "b"]\n---\nx: 1\n'):
        fast, full = readings(text)
        assert fast == full and full[1], text


def test_a_sequence_nested_to_the_depth_limit_is_the_loaders_error():
    for depth in (MAX_YAML_DEPTH - 2, MAX_YAML_DEPTH - 1, MAX_YAML_DEPTH):
        text = "".join("  " * i + f"k{i}:\n" for i in range(depth - 1)) + "  " * (depth - 1) + 'w: [\n "a", "b"]\n'
        fast, full = readings(text)
        assert fast == full
    assert full[1] and full[1][0].code == "E102"


def test_a_long_search_that_fails_stays_linear():
    text = "w: [\n" + '  "a",\n' * 50000 + "  # not a plain list\n]\n"
    fast, full = readings(text, min_items=1)
    assert fast == full and len(data(full)["w"]) == 50000
    assert flow.find_runs(text, 1) == []


ITEM = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6) | st.sampled_from(
    ["", "a b", " lead", "trail ", "[x]", "{y}", "a, b", "#c", "k: v", "'q'", "x\\y", 'q"q', "\t", "\x85",
     "\u2028", "\ufeff", "\ue000", "\U0001f600"])
SEP = st.sampled_from([", ", ",", " , ", ",\n  ", ",\n", "\n, ", ",\n\n    ", ",  \n"])
MUTATION = st.sampled_from(["#", '"', "\t", "\r", ":", "-", "[", "]", "{", "}", "\x85", "\n", " ", "\\", ",",
                            "&a ", "*a", "!!str ", "---\n", "\x00", "'"])


@st.composite
def sequences(draw):
    items = draw(st.lists(ITEM, max_size=8))
    quoted = [f'"{i}"' for i in items]
    body = ""
    for j, q in enumerate(quoted):
        body += q + (draw(SEP) if j < len(quoted) - 1 else "")
    if quoted and draw(st.booleans()):
        body += ","
    lead = draw(st.sampled_from(["", " ", "\n  ", "\n"]))
    tail = draw(st.sampled_from(["", " ", "\n", "\n  "]))
    return f"[{lead}{body}{tail}]"


@st.composite
def documents(draw):
    lines = []
    for k in range(draw(st.integers(1, 4))):
        indent = draw(st.sampled_from(["", "  "])) if lines else ""
        kind = draw(st.sampled_from(["flow", "flow", "nested", "block", "plain", "comment"]))
        if kind == "flow":
            lines.append(f"{indent}k{k}: {draw(sequences())}")
        elif kind == "nested":
            lines.append(f"{indent}k{k}:\n{indent}  inner: {draw(sequences())}")
        elif kind == "block":
            lines.append(f"{indent}k{k}: |\n{indent}  w: {draw(sequences())}")
        elif kind == "plain":
            lines.append(f"{indent}k{k}: {draw(st.sampled_from(['1', 'x', '[]', '~', 'a: b']))}")
        else:
            lines.append(f"{indent}# w: {draw(sequences())}")
    text = "\n".join(lines) + draw(st.sampled_from(["", "\n"]))
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(text)))
        if draw(st.booleans()):
            text = text[:at] + draw(MUTATION) + text[at:]
        else:
            text = text[:at] + text[at + 1:]
    return text


@settings(max_examples=1500, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_any_document_reads_the_same_with_and_without_flow(text):
    fast, full = readings(text)
    assert fast == full


def test_the_loader_reads_once_when_no_sequence_is_long_enough(monkeypatch):
    calls = []
    real = load._parse

    def spy(text, path, display, restore, runs=None):
        calls.append(runs)
        return real(text, path, display, restore, runs)

    monkeypatch.setattr(load, "_parse", spy)
    parse_yaml('k: ["a", "b"]\n', Path("f.yaml"), "f.yaml", min_flow_items=3)
    assert calls == [None]  # one reading, by the loader alone
    parse_yaml('k: ["a", "b", "c"]\n', Path("f.yaml"), "f.yaml", min_flow_items=3)
    assert len(calls) == 2 and calls[1] is not None  # one reading, the sequence read by flow.py
