"""The command line's conveniences: `--version`, a mistyped command answered with the nearest one, shell completion."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import click
import pytest
import yaml

from cleo_rules.cli import COMMANDS, cli, main

from helpers import ROOT

BIN = Path(sys.executable).parent


def run(capsys, *argv) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_:
        main(list(argv))
    out, err = capsys.readouterr()
    return exit_.value.code, out, err


# -- --version ------------------------------------------------------------------------------------------------------


def test_version_shows_the_package_and_the_bundled_pack(capsys):
    code, out, err = run(capsys, "--version")
    manifest = yaml.safe_load((ROOT / "rules" / "pack.yaml").read_text(encoding="utf-8"))
    pyproject = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M)
    assert code == 0 and err == ""
    assert out == f"cleo-rules {version('cleo-rules')}\nbundled pack: {manifest['pack']} {manifest['version']}\n"
    assert version("cleo-rules") == pyproject.group(1)


def test_version_imports_no_embedding_runtime():
    probe = ("import sys; from cleo_rules.cli import main\n"
             "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in ('torch', 'onnxruntime', 'numpy', 'jsonschema') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.splitlines()[-1] == "[]"


# -- a mistyped command ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("argv", "typo", "meant"), [
    (["clasify", "Yes please"], "clasify", "classify"),
    (["chekc"], "chekc", "check"),
    (["memory", "serch", "van insurance"], "serch", "search"),
    (["memory", "stat"], "stat", "stats"),
    (["corpus", "biuld"], "biuld", "build"),
    (["relevance", "sampel"], "sampel", "sample"),
])
def test_a_mistyped_command_suggests_the_nearest(capsys, argv, typo, meant):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.splitlines()[-1] == f"Error: No such command {typo!r}. Did you mean {meant!r}?"


def test_a_command_nothing_like_any_suggests_none(capsys):
    code, _, err = run(capsys, "zzzz")
    assert code == 2 and err.rstrip().endswith("Error: No such command 'zzzz'.")


def _groups() -> list[tuple[list[str], click.Group]]:
    ctx = click.Context(cli)
    out: list[tuple[list[str], click.Group]] = [([], cli)]
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        if isinstance(command, click.Group):
            out.append(([name], command))
    return out


def test_every_command_and_subcommand_typed_with_a_letter_missing_is_suggested(capsys):
    """Exhaustively: each name of every group, each letter dropped in turn, suggests that name."""
    tried = 0
    for prefix, group in _groups():
        names = group.list_commands(click.Context(group))
        for name in names:
            for i in range(len(name)):
                typo = name[:i] + name[i + 1:]
                if typo in names or len(typo) < 2:
                    continue
                code, _, err = run(capsys, *prefix, typo, "--help")
                assert code == 2, (prefix, typo)
                suggested = re.findall(r"'([^']+)'", err.split("Did you mean", 1)[-1])
                assert "Did you mean" in err and name in suggested, (prefix, typo, err)
                tried += 1
    assert tried > 100 and {"memory", "corpus", "relevance"} <= {p[0] for p, _ in _groups() if p}
    assert set(COMMANDS) == set(cli.list_commands(click.Context(cli)))


# -- shell completion --------------------------------------------------------------------------------------------


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("_CLEO_RULES", "COMP_"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.mark.parametrize(("shell", "marker"), [
    ("bash", "complete -o nosort -F _cleo_rules_completion cleo-rules"),
    ("zsh", "compdef _cleo_rules_completion cleo-rules"),
    ("fish", "complete --no-files --command cleo-rules"),
])
def test_the_command_prints_its_completion_script(shell, marker):
    done = subprocess.run(["cleo-rules"], env={**_env(), "_CLEO_RULES_COMPLETE": f"{shell}_source"},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == ""
    assert marker in done.stdout


def readme_completion_line() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    (line,) = re.findall(r'^eval "\$\(_CLEO_RULES_COMPLETE=bash_source cleo-rules\)".*$', text, re.M)
    assert '_CLEO_RULES_COMPLETE=zsh_source cleo-rules' in text and "_CLEO_RULES_COMPLETE=fish_source cleo-rules" in text
    return line.split("#")[0].strip()


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is the shell completed here")
@pytest.mark.parametrize(("words", "expected"), [
    (["cleo-rules", "cla"], ["classify"]),
    (["cleo-rules", "memory", "se"], ["search"]),
    (["cleo-rules", "corpus", ""], ["build", "check", "diff"]),
    (["cleo-rules", "check", "--sarif-o"], ["--sarif-output"]),
])
def test_the_readme_bash_line_completes_commands_and_options(words, expected):
    """The README's line, in bash, then what bash offers for the words typed so far."""
    script = (f"{readme_completion_line()}\n"
              f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
              "_cleo_rules_completion cleo-rules\n"
              'printf "%s\\n" "${COMPREPLY[@]}"\n')
    done = subprocess.run(["bash", "-c", script], env=_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == expected


# -- an installed pack's path in text output ---------------------------------------------------------------------


@pytest.fixture
def installed_team(tmp_path, monkeypatch):
    """A team pack installed with pip (in a site-packages directory), one of its rules broken."""
    from cleo_rules.starter import init_pack

    init_pack(tmp_path / "work" / "team", standalone=True)
    home = tmp_path / "lib" / "python3.11" / "site-packages" / "team_pack"
    home.mkdir(parents=True)
    shutil.move(tmp_path / "work" / "team" / "rules", home / "rules")
    shutil.move(tmp_path / "work" / "team" / "corpus", home / "corpus")
    path = home / "rules" / "follow_ups.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("max_content_words: 3", "max_content_words: lots"),
                    encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return home / "rules"


def test_text_output_names_an_installed_pack_and_other_formats_keep_its_path(installed_team, capsys):
    code, out, err = run(capsys, "check", str(installed_team))
    assert code == 1
    assert out == "pack: team 0.1.0 at <installed pack team> (given)\n"
    assert err.startswith("<installed pack team>/follow_ups.yaml:") and "error[E123]" in err
    assert "site-packages" not in out + err
    shown = os.path.relpath(installed_team / "follow_ups.yaml")
    code, out, _ = run(capsys, "check", str(installed_team), "--format", "github")
    assert code == 1 and out.startswith(f"::error file={shown},line=")
    code, out, _ = run(capsys, "corpus", "check", str(installed_team), "--format", "junit")
    assert code == 1 and f'file="{shown}"' in out
    code, out, err = run(capsys, "corpus", "check", str(installed_team))
    assert code == 1 and out == "pack: team 0.1.0 at <installed pack team> (given)\n"
    assert err.startswith("Error: <installed pack team>/follow_ups.yaml:")


def test_a_pack_outside_any_install_is_shown_by_its_path(tmp_path, capsys, monkeypatch):
    from cleo_rules.cli.common import is_installed_path, shown

    from cleo_rules.starter import init_pack

    init_pack(tmp_path / "team", standalone=True)
    monkeypatch.chdir(tmp_path / "team")
    code, out, _ = run(capsys, "classify", "Tell me more about that one")
    assert code == 0 and out.splitlines()[-1].endswith(" at rules (./rules)")
    assert not is_installed_path(tmp_path / "team" / "rules") and shown(tmp_path / "team" / "rules", "team") == "rules"
    assert is_installed_path(tmp_path / "dist-packages" / "x") and shown(tmp_path / "site-packages" / "x", "x") == \
        "<installed pack x>"
