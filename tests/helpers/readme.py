"""The README's first console example: the command it shows and what it shows printed."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from cleo_rules import load_pack
from cleo_rules.resources import rules_dir

from helpers import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
INSTALLED = "<installed pack cleo-en>"


def first_example() -> tuple[list[str], list[str]]:
    """The first console example of the README: its command's arguments and the lines it shows printed."""
    block = re.search(r"```console\n(.*?)```", README, re.S).group(1)
    lines = block.splitlines()
    command = lines.pop(0)
    while command.endswith("\\"):
        command = command[:-1] + lines.pop(0)
    argv = shlex.split(command.removeprefix("$ "))
    assert argv[0] == "cleo-rules"
    return argv[1:], lines


def expected(lines: list[str], where: str) -> str:
    """The example's lines as the command prints them: `(…)` is the bundled pack's content hash, and the pack is
    at ``where`` (an installed cleo-rules names it `<installed pack cleo-en>`)."""
    text = "\n".join(lines) + "\n"
    return text.replace("(…)", f"({load_pack().content_hash})").replace(INSTALLED, where)


# -- every block of the README, and running them ------------------------------------------------------

#: the languages whose blocks are examples to run: the rest (yaml, toml, js, bare) are files or output shown
RUNNABLE = ("python", "console", "sh")
#: the comment a block that cannot run in a test is marked with, on the line before its fence
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.*?)\s*-->")


@dataclass(frozen=True)
class Block:
    """One fenced block of the README: its language, its text (the fence's indentation taken off), the line
    its fence opens on, and why it is not run when a `<!-- not run: ... -->` comment before it says so."""

    lang: str
    text: str
    line: int
    not_run: str | None

    @property
    def id(self) -> str:
        return f"{self.lang}@{self.line}"


def blocks(text: str | None = None) -> list[Block]:
    """Every fenced block of the README as it is now (read at each call, so later edits are checked too)."""
    lines = (text if text is not None else (ROOT / "README.md").read_text(encoding="utf-8")).splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        fence = re.fullmatch(r"( *)```(\S*)\s*", lines[i])
        if not fence:
            i += 1
            continue
        indent, lang = len(fence.group(1)), fence.group(2)
        before = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marked = NOT_RUN.fullmatch(before)
        end = next(j for j in range(i + 1, len(lines)) if re.fullmatch(r" *```\s*", lines[j]))
        body = "\n".join(line[indent:] if not line[:indent].strip() else line.lstrip() for line in lines[i + 1:end])
        out.append(Block(lang, body + "\n", i + 1, marked.group(1) if marked else None))
        i = end + 1
    return out


@dataclass
class Command:
    """One `$ ` line of a console block (its continuation lines joined) and the lines it shows printed."""

    command: str
    shown: list[str]


def commands(block: Block) -> list[Command]:
    out: list[Command] = []
    lines = block.text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            command = line[2:]
            while command.endswith("\\") and i + 1 < len(lines):
                i += 1
                command = command[:-1] + lines[i]
            out.append(Command(command, []))
        else:
            assert out, f"README.md:{block.line}: a console block starts with a `$ ` command"
            out[-1].shown.append(line)
        i += 1
    for c in out:
        while c.shown and not c.shown[-1].strip():
            c.shown.pop()
    return out


def shown_matches(shown: list[str], printed: list[str]) -> bool:
    """Whether what a command printed is what the README shows: line for line, each `…` standing for any run of
    characters (a hash, a time, a path's start)."""
    if len(shown) != len(printed):
        return False
    return all(re.fullmatch(".*?".join(map(re.escape, s.split("…"))), p) for s, p in zip(shown, printed))


def command_dir(tmp: Path) -> Path:
    """A directory holding a `cleo-rules` command that runs this checkout's code with this interpreter, as the
    installed command does; put it first on PATH."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "cleo-rules"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m cleo_rules "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    return bin_dir


def example_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The environment an example runs in: this checkout's code, its `cleo-rules` first on PATH, offline."""
    env = {k: v for k, v in os.environ.items() if k not in ("CLEO_RULES_PACK", "CLEO_MEMORY_DB", "CLEO_RULES_DEBUG")}
    env.update(PYTHONPATH=str(ROOT), PATH=f"{command_dir(tmp)}{os.pathsep}{env.get('PATH', '')}",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", CLEO_EMBED_THREADS="1", **extra)
    return env


def as_installed(printed: str) -> str:
    """A command's output as an installed cleo-rules prints it: this checkout's pack is named as the wheel's."""
    return printed.replace(str(rules_dir()), INSTALLED)


def run_console(block: Block, cwd: Path, env: dict[str, str], timeout: float = 120) -> list[tuple[Command, list[str],
                                                                                               int]]:
    """Every command of a console block, in order, in one bash (a `cd` or `export` holds for the next), each
    with what it printed (stdout and stderr) and its exit status."""
    cmds = commands(block)
    marker = f"@@readme-{os.getpid()}"
    script = "".join(f"{c.command}\necho \"{marker} $?\"\n" for c in cmds)
    done = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout)
    parts = re.split(rf"^{marker} (\d+)\n", as_installed(done.stdout), flags=re.M)
    results = []
    for n, c in enumerate(cmds):
        if 2 * n + 1 >= len(parts):
            results.append((c, parts[-1].splitlines(), -1))  # the shell stopped before it
            continue
        results.append((c, parts[2 * n].splitlines(), int(parts[2 * n + 1])))
    return results
