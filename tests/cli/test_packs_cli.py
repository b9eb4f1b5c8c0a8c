"""``cleo-rules packs`` and loading packs by name from the CLI: exact output, exit codes."""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from cleo_rules import load_pack
from cleo_rules.cli import cli, main
from cleo_rules.pack.discovery import GROUP
from cleo_rules.resources import rules_dir

from helpers import PACKS

BUNDLED = str(rules_dir())
DIST = f"cleo-rules {importlib.metadata.version('cleo-rules')}"
SOURCE = f"entry point cleo-en ({DIST})"


def run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def run_main(capsys, *args):
    """Run the command as the console script does: errors become ``Error: ...`` and their exit code."""
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return info.value.code, out, err


def table(*rows):
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(widths[i]) if i < len(r) - 1 else c for i, c in enumerate(r)).rstrip()
                     for r in rows) + "\n"


HEAD = ("NAME", "VERSION", "LOCALE", "SOURCE", "PATH")
CLEO_EN = ("cleo-en", "1.0.0", "en", SOURCE, BUNDLED)


def test_lists_the_bundled_pack_through_its_entry_point():
    result = run("packs")
    assert result.exit_code == 0
    assert result.output == table(HEAD, CLEO_EN)


def test_lists_directories_given():
    result = run("packs", str(PACKS / "mini-1.0"), str(PACKS / "mini-2.0"))
    assert result.output == table(HEAD, CLEO_EN, ("mini", "1.0.0", "en", "directory", str(PACKS / "mini-1.0")),
                                  ("mini", "2.0.0", "en", "directory", str(PACKS / "mini-2.0")))


def test_require_filters_by_version():
    result = run("packs", "--require", ">=2", str(PACKS / "mini-1.0"), str(PACKS / "mini-2.0"))
    assert result.output == table(HEAD, ("mini", "2.0.0", "en", "directory", str(PACKS / "mini-2.0")))


def test_check_compiles_and_reports_each(tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(PACKS / "mini-1.0", broken)
    text = (broken / "follow_ups.yaml").read_text().replace("max_content_words: 3", "max_content_words: lots")
    (broken / "follow_ups.yaml").write_text(text)
    result = run("packs", "--check", str(PACKS / "mini-1.1"), str(broken))
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0].split() == ["NAME", "VERSION", "LOCALE", "SOURCE", "PATH", "STATUS"]
    assert lines[1].endswith("ok (" + json.loads(run("check", BUNDLED, "--json").output)["pack"]["hash"] + ")")
    assert lines[2].endswith("ok (7fc1de1a2535eacb)")
    assert "error: " in lines[3]
    assert f"{broken}/follow_ups.yaml:6:24: error[" in lines[3]
    assert "max_content_words" in lines[3]


def test_check_fails_a_pack_whose_corpus_fails(tmp_path):
    """`packs --check` judges a pack as `check` and the serving gate do: its corpus beside it counts."""
    pack = tmp_path / "mini"
    shutil.copytree(PACKS / "mini-1.0", pack)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "regressions.yaml").write_text(
        "kind: corpus\ncases:\n  - id: regression/wrong\n    message: \"Go with the other one.\"\n"
        "    expect: substantive\n", encoding="utf-8")
    result = run("packs", "--check", str(pack))
    assert result.exit_code == 1, result.output
    (row,) = [line for line in result.output.splitlines() if str(pack) in line and "mini" in line.split()[0]]
    assert "error: " in row and "corpus case regression/wrong" in row
    assert f"{corpus / 'regressions.yaml'}:3:1: error[E230]" in row
    assert run("check", str(pack)).exit_code == 1  # the same verdict
    (corpus / "regressions.yaml").unlink()
    corpus.rmdir()
    ok = run("packs", "--check", str(pack))
    assert ok.exit_code == 0, ok.output
    (row,) = [line for line in ok.output.splitlines() if line.startswith("mini ")]
    assert row.endswith(f"ok ({load_pack(pack).content_hash})")


def test_json():
    result = run("packs", "--json")
    data = json.loads(result.output)
    assert data == {"packs": [{
        "name": "cleo-en", "version": "1.0.0", "locale": "en", "path": BUNDLED, "origin": "entry point",
        "entry_point": "cleo-en", "distribution": DIST, "description": data["packs"][0]["description"],
        "error": None, "ok": True, "status": None}]}
    assert data["packs"][0]["description"].startswith("Default English pack")


def test_no_pack_in_range_is_an_error(capsys):
    code, out, err = run_main(capsys, "packs", "--require", "^2")
    assert (code, out) == (2, "")
    assert err == "Error: no rule pack satisfies ^2 (available: cleo-en 1.0.0)\n"


def test_bad_range_is_an_error_with_help(capsys):
    code, out, err = run_main(capsys, "packs", "--require", ">=1..0")
    assert code == 2
    assert err == ("Error: invalid version range '>=1..0': '1..0' is not a version; write comparators such as "
                   ">=1.0,<2 or ^1.2 or ~1.2.3, alternatives joined by ||\n")


def test_missing_directory_is_an_error(capsys):
    code, _, err = run_main(capsys, "packs", "./no-such-pack")
    assert (code, err) == (2, "Error: no rule pack at no-such-pack: no such directory\n")


def test_broken_entry_point_is_listed_not_fatal(monkeypatch):
    real = importlib.metadata.entry_points

    def entry_points(**kw):
        found = list(real(**kw))
        if kw.get("group") == GROUP:
            found.append(importlib.metadata.EntryPoint("acme-en", "acme_missing_module:pack_path", GROUP))
        return found

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    result = run("packs")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].split()[-1] == "STATUS"
    assert lines[1].startswith("cleo-en") and lines[1].endswith("  ok")
    assert lines[2].startswith("acme-en  -") and lines[2].endswith(
        "error: entry point acme-en = acme_missing_module:pack_path cannot be loaded: "
        "ModuleNotFoundError: No module named 'acme_missing_module'")


def test_classify_loads_a_pack_by_name():
    result = run("classify", "We tried that one already.", "--pack", "cleo-en", "--json")
    assert json.loads(result.output)["pack"] == "cleo-en"


def test_unknown_pack_name_is_an_error(capsys):
    code, _, err = run_main(capsys, "classify", "We tried that one already.", "--pack", "acme-xx")
    assert code == 2
    assert err == ("Error: no rule pack named 'acme-xx' and no directory 'acme-xx'; installed packs: "
                   "cleo-en 1.0.0 (see `cleo-rules packs`)\n")


def test_packs_imports_no_model_code():
    code = ("import sys\nfrom cleo_rules.cli import main\n"
            "try:\n    main(['packs', '--check'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('torch', 'sentence_transformers', 'onnxruntime', 'tokenizers', 'hnswlib') "
            "if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.splitlines()[-1] == "[]"
