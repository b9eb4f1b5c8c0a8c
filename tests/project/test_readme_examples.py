"""Every example of the README runs as it is written, on the README as it is when the test runs: each Python
block in a fresh interpreter, each console block's commands in a fresh directory with what they print compared
with what the README shows (`…` stands for a hash, a time or a path's start), and each sh block against a service
this module starts. A block that cannot run in a test says why in a `<!-- not run: ... -->` comment before it;
any other block of a runnable language that does not run, or prints something else, fails."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cleo_rules.serve.keys import KeyRing

from helpers.readme import RUNNABLE, Block, blocks, commands, example_env, run_console, shown_matches
from helpers.service import Service

BLOCKS = [b for b in blocks() if b.lang in RUNNABLE]
RUN = [b for b in BLOCKS if b.not_run is None]


def test_the_readme_has_examples_of_each_runnable_language_and_marks_the_rest_with_a_reason():
    assert {b.lang for b in RUN} == set(RUNNABLE)
    assert len(RUN) >= 12
    assert all(b.not_run for b in BLOCKS if b.not_run is not None)  # a reason, not an empty marker


def test_blocks_are_read_with_their_markers_and_indentation():
    text = ("intro\n\n<!-- not run: installs packages -->\n```sh\npip install x\n```\n\n"
            "* item\n\n  ```console\n  $ cleo-rules a \\\n      --b\n  out\n  ```\n")
    sh, console = blocks(text)
    assert (sh.lang, sh.not_run, sh.line, sh.text) == ("sh", "installs packages", 4, "pip install x\n")
    assert console.not_run is None and console.text == "$ cleo-rules a \\\n    --b\nout\n"
    (command,) = commands(console)
    assert command.command == "cleo-rules a     --b" and command.shown == ["out"]


def test_a_shown_line_matches_with_placeholders_and_nothing_else():
    assert shown_matches(["pack:    cleo-en 1.0.0 (…) at x"], ["pack:    cleo-en 1.0.0 (7e1d9b6f) at x"])
    assert shown_matches(["a; … s"], ["a; 2.03 s"])
    assert not shown_matches(["ok: 11 corrections, 24 follow-up patterns"], ["ok: 11 corrections, 31 follow-up patterns"])
    assert not shown_matches(["a"], ["a", "b"])


@pytest.mark.parametrize("block", [b for b in RUN if b.lang == "python"], ids=lambda b: b.id)
def test_each_python_block_runs_in_a_fresh_interpreter(block: Block, tmp_path):
    script = tmp_path / "example.py"
    script.write_text(block.text, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=example_env(tmp_path), capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 0, f"README.md:{block.line}: the example fails:\n{done.stderr}"


@pytest.mark.parametrize("block", [b for b in RUN if b.lang == "console"], ids=lambda b: b.id)
def test_each_console_block_prints_what_it_shows(block: Block, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    for command, printed, status in run_console(block, work, example_env(tmp_path)):
        where = f"README.md:{block.line}: $ {command.command}"
        assert status == 0, f"{where}: exit {status}:\n" + "\n".join(printed)
        assert shown_matches(command.shown, printed), (
            f"{where}\nshown:\n" + "\n".join(command.shown) + "\nprinted:\n" + "\n".join(printed))


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    base = tmp_path_factory.mktemp("readme-service")
    keys = base / "keys.txt"
    key = KeyRing.append(keys, "acme")
    with Service("--memory", base / "memory", "--keys", keys, log_path=base / "service.log") as svc:
        yield svc, key


@pytest.mark.parametrize("block", [b for b in RUN if b.lang == "sh"], ids=lambda b: b.id)
def test_each_sh_block_runs_against_the_service(block: Block, service, tmp_path):
    svc, key = service
    env = example_env(tmp_path, CLEO_URL=svc.url, CLEO_KEY=key)
    # curl as the block calls it, but an HTTP error status fails the command (the examples never expect one)
    script = 'set -e\ncurl() { command curl --fail-with-body "$@"; echo; }\n' + block.text
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, f"README.md:{block.line}: exit {done.returncode}:\n{done.stdout}\n{done.stderr}"
