"""The README's first console example: the command it shows and what it shows printed."""

from __future__ import annotations

import re
import shlex

from cleo_rules import load_pack

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
