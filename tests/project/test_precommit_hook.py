"""The pre-commit hook as a team uses it: `pre-commit try-repo` of this repository in a team repository.

pre-commit installs the hook from this repository's committed HEAD (plus changes to tracked files)
into a fresh environment: `pip install .` with the core dependencies only, from the package registry.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cleo_rules.starter import init_pack

from helpers import ROOT

PRE_COMMIT = [sys.executable, "-m", "pre_commit"]

pytestmark = [
    pytest.mark.network,
    pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git"),
]


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


@pytest.fixture
def team(tmp_path):
    repo = tmp_path / "team"
    init_pack(repo, standalone=True)
    git("init", "-q", "-b", "main", cwd=repo)
    git("-c", "user.name=Designer", "-c", "user.email=designer@example.invalid", "add", "-A", cwd=repo)
    git("-c", "user.name=Designer", "-c", "user.email=designer@example.invalid", "commit", "-q", "-m", "pack",
        cwd=repo)
    return repo


def commit(repo, message):
    git("-c", "user.name=Designer", "-c", "user.email=designer@example.invalid", "commit", "-q", "-am", message,
        cwd=repo)


def env_for(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRE_COMMIT", "CLEO_RULES", "VIRTUAL_ENV"))}
    env["PRE_COMMIT_HOME"] = str(home)
    env["CLEO_RULES_CACHE"] = str(home / "pack-cache")  # never the user's own compiled-pack cache
    return env


def try_repo(repo, home):
    return subprocess.run([*PRE_COMMIT, "try-repo", str(ROOT), "cleo-rules-check", "--all-files"], cwd=repo,
                          env=env_for(home), capture_output=True, text=True, timeout=900)


def test_try_repo_fails_on_a_broken_pack_and_passes_once_fixed(team, tmp_path):
    path = team / "rules" / "follow_ups.yaml"
    good = path.read_text(encoding="utf-8")
    path.write_text(good.replace("max_content_words: 3", "max_content_words: lots"), encoding="utf-8")
    commit(team, "break a rule")
    broken = try_repo(team, tmp_path / "home")
    out = broken.stdout + broken.stderr
    assert broken.returncode == 1, out
    assert "cleo-rules check (rule pack and its corpus)" in out and "Failed" in out
    assert "rules/follow_ups.yaml:" in out and "error[E123]" in out

    path.write_text(good, encoding="utf-8")
    commit(team, "fix the rule")
    fixed = try_repo(team, tmp_path / "home")
    out = fixed.stdout + fixed.stderr
    assert fixed.returncode == 0, out
    assert "cleo-rules check (rule pack and its corpus)" in out and "Passed" in out


def test_the_hook_installs_the_core_only(team, tmp_path):
    """A pinned config, as a team writes it; the hook's environment is kept in PRE_COMMIT_HOME to look at."""
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.strip()
    (team / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {ROOT}\n    rev: {rev}\n    hooks:\n      - id: cleo-rules-check\n", encoding="utf-8")
    home = tmp_path / "home"
    result = subprocess.run([*PRE_COMMIT, "run", "--all-files"], cwd=team, env=env_for(home),
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    (python,) = home.glob("repo*/py_env-*/bin/python")
    probe = ("import importlib.util, json; "
             "print(json.dumps({m: importlib.util.find_spec(m) is not None for m in "
             "('cleo_rules', 'yaml', 'jsonschema', 'regex', 'click', 'torch', 'numpy', 'hnswlib', 'sqlite_utils', "
             "'sentence_transformers')}))")
    found = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, check=True).stdout
    import json

    assert json.loads(found) == {"cleo_rules": True, "yaml": True, "jsonschema": True, "regex": True, "click": True,
                                 "torch": False, "numpy": False, "hnswlib": False, "sqlite_utils": False,
                                 "sentence_transformers": False}
