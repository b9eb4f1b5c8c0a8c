"""The compiled pack (cleo_rules.pack.model) keeps what it was built from: its manifest, its rule
files as loaded, and each rule's file, line and pointer, so no later stage reads a file again."""

from __future__ import annotations

import builtins
import io
from pathlib import Path

import pytest

from cleo_rules import load_pack
from cleo_rules.corpus import generate
from cleo_rules.reading.load import display
from cleo_rules.resources import rules_dir
from cleo_rules.pack_check import check_compiled

PACK = load_pack(check_examples=False)


def at(data, pointer: str):
    """The value at a JSON pointer."""
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        data = data[int(token)] if isinstance(data, list) else data[token]
    return data


def test_the_pack_keeps_its_manifest_and_its_files_in_the_manifests_order():
    assert PACK.manifest is not None and PACK.manifest.data["pack"] == PACK.name
    assert list(PACK.sources) == PACK.manifest.data["files"]
    assert all(src.path == rules_dir() / name for name, src in PACK.sources.items())


@pytest.mark.parametrize("rule", PACK.rules + PACK.referent_rules, ids=lambda r: r.id)
def test_each_rule_points_at_itself_in_the_file_it_came_from(rule):
    src = PACK.source(rule)
    assert src.display == rule.file and at(src.data, rule.pointer)["id"] == rule.id
    assert src.where(rule.pointer)[0] == rule.line
    assert PACK.rule(rule.id) is rule


def test_unknown_rules_are_a_key_error():
    with pytest.raises(KeyError):
        PACK.rule("vocab.nowhere")


def test_a_compiled_pack_is_immutable():
    with pytest.raises(AttributeError):
        PACK.name = "other"  # type: ignore[misc]


def test_judging_and_generating_read_no_rule_file_again(monkeypatch):
    pack = load_pack(check_examples=False)
    rule_files = {(rules_dir() / name).resolve() for name in ["pack.yaml", *pack.sources]}
    read: list[Path] = []
    real_open, real_io_open = builtins.open, io.open

    def spy(opener):
        def opened(file, *args, **kwargs):
            if isinstance(file, (str, Path)):
                read.append(Path(file).resolve())
            return opener(file, *args, **kwargs)
        return opened

    monkeypatch.setattr(builtins, "open", spy(real_open))
    monkeypatch.setattr(io, "open", spy(real_io_open))
    generate(pack)
    check_compiled(pack)
    assert [display(p) for p in read if p in rule_files] == []
    assert any(p.parent.name == "generated" for p in read)  # the spy sees files being read
