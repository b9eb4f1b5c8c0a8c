"""``cleo-rules serve`` as a user runs it: limits in --help, what it refuses, keys, what it imports."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from cleo_rules.serve.keys import KeyRing
from cleo_rules.serve.settings import DEFAULTS

from helpers.service import ROOT


def cli(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "cleo_rules", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


def test_help_shows_every_limit_with_its_default():
    out = " ".join(cli("serve", "--help").stdout.split())
    for name in ("max_body_bytes", "max_ingest_bytes", "max_message_chars", "max_history", "max_batch", "max_k",
                 "request_timeout", "ingest_timeout", "queue", "open_stores", "watch_interval", "drain_timeout"):
        option = "--" + name.replace("_", "-")
        assert option in out
        after = out[out.index(option):]
        assert f"[default: {DEFAULTS[name]}" in after[:400], name
    assert "serve" in cli("--help").stdout


def test_without_keys_only_loopback_is_bound():
    done = cli("serve", "--host", "0.0.0.0", "--port", "0")
    assert done.returncode == 2
    assert done.stderr.startswith("Error: without --keys the service only binds loopback")
    assert "Traceback" not in done.stderr


def test_new_key_appends_a_hash_and_prints_the_key_once(tmp_path):
    keys = tmp_path / "keys.txt"
    done = cli("serve", "--keys", keys, "--new-key", "acme,globex")
    assert done.returncode == 0
    key = done.stdout.strip()
    assert key.startswith("cleo_") and key not in keys.read_text()
    assert KeyRing.load(keys).lookup(key).tenants == {"acme", "globex"}
    assert cli("serve", "--new-key", "acme").stderr.startswith("Error: --new-key needs --keys FILE")


def test_a_broken_key_file_or_a_missing_pack_is_an_error_not_a_traceback(tmp_path):
    keys = tmp_path / "keys.txt"
    keys.write_text("not-a-hash acme\n")
    done = cli("serve", "--keys", keys, "--port", "0")
    assert done.returncode == 2 and f"{keys}:1:" in done.stderr and "Traceback" not in done.stderr
    done = cli("serve", "--pack", tmp_path / "no-such-pack", "--port", "0")
    assert done.returncode == 2 and done.stderr.startswith("Error:") and "Traceback" not in done.stderr


def test_the_app_without_memory_imports_no_torch():
    code = ("import sys\n"
            "import cleo_rules.cli.serve_cmds\n"
            "assert 'starlette' not in sys.modules  # --help stays cheap\n"
            "from cleo_rules.serve import ServeSettings, create_app\n"
            "from starlette.testclient import TestClient\n"
            "app = create_app(ServeSettings(watch_interval=0))\n"
            "with TestClient(app, base_url='http://127.0.0.1') as client:\n"
            "    import time\n"
            "    while client.get('/readyz').status_code != 200: time.sleep(0.05)\n"
            "    r = client.post('/v1/classify', json={'message': 'Yes, go with the second one.', 'history': ['x y z']})\n"
            "    assert r.status_code == 200, r.text\n"
            "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers', 'onnxruntime', 'tokenizers')"
            " if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_missing_serve_extra_is_named(monkeypatch):
    from click.testing import CliRunner

    from cleo_rules.cli import cli as group
    from cleo_rules.cli import serve_cmds

    real = importlib.util.find_spec
    monkeypatch.setattr(serve_cmds.importlib.util, "find_spec",
                        lambda name, *a: None if name == "uvicorn" else real(name, *a))
    result = CliRunner().invoke(group, ["serve", "--port", "0"])
    assert result.exit_code != 0
    assert "pip install 'cleo-rules[serve]'" in str(result.exception) and "uvicorn" in str(result.exception)


@pytest.mark.parametrize("module", ["hnswlib", "onnxruntime"])
def test_serve_memory_without_the_memory_extra_names_the_pip_command(module, monkeypatch, tmp_path, capsys):
    """With only [serve] installed, `serve --memory` says what the core install says of a memory command: the
    extra and the pip command that installs it (exit 2), before anything starts."""
    from cleo_rules.cli import main, serve_cmds

    real = importlib.util.find_spec
    monkeypatch.setattr(serve_cmds.importlib.util, "find_spec",
                        lambda name, *a: None if name == module else real(name, *a))
    with pytest.raises(SystemExit) as stop:
        main(["serve", "--memory", str(tmp_path / "memory"), "--port", "0"])
    assert stop.value.code == 2
    assert capsys.readouterr().err == ("Error: the memory store needs the [memory] extra: "
                                       "pip install 'cleo-rules[memory]'\n")
    assert not (tmp_path / "memory").exists()


@pytest.mark.parametrize("args, says", [(["--queue", "0"], "--queue"), (["--max-k", "0"], "--max-k"),
                                        (["--request-timeout", "0"], "--request-timeout")])
def test_impossible_limits_are_refused(args, says):
    done = cli("serve", *args, "--port", "0")
    assert done.returncode == 2 and says in done.stderr
