"""A pack's settings have one source of defaults: ``PackSettings`` and the JSON Schema editors read agree."""

from __future__ import annotations

import dataclasses
import json
import shutil

from cleo_rules.pack.compile import compile_pack
from cleo_rules.pack.model import PackSettings
from cleo_rules.reading.validate import validator_of
from cleo_rules.resources import schemas_dir

from helpers import MINI

SCHEMA = json.loads((schemas_dir() / "pack.schema.json").read_text(encoding="utf-8"))["properties"]["settings"]


def test_each_default_is_the_one_the_schema_states():
    fields = {f.name: f.default for f in dataclasses.fields(PackSettings)}
    assert sorted(fields) == sorted(SCHEMA["properties"])
    assert {name: prop["default"] for name, prop in SCHEMA["properties"].items()} == fields
    for name, prop in SCHEMA["properties"].items():  # and each default is a value its own schema allows
        assert list(validator_of(prop).iter_errors(fields[name])) == [], name
        assert type(fields[name]) in {"integer": (int,), "number": (int, float), "string": (str,),
                                      "boolean": (bool,)}[prop["type"]], name


def test_a_pack_that_sets_nothing_gets_the_defaults(tmp_path):
    pack_dir = tmp_path / "pack"
    shutil.copytree(MINI, pack_dir)
    manifest = pack_dir / "pack.yaml"
    text = manifest.read_text(encoding="utf-8")
    start = text.index("settings:")
    manifest.write_text(text[:start] + text[text.index("files:"):], encoding="utf-8")
    assert compile_pack(pack_dir).settings == PackSettings()
