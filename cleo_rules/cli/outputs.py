"""Where ``check`` and ``corpus check`` write their report, and in which formats (semgrep's scheme).

``--format F`` is the primary format, printed on stdout (for ``text``, the
findings go to stderr, the pack line and the summary to stdout); ``-o FILE``
(``--output``) writes that primary report into FILE instead, whole, and prints
nothing of it. ``--text-output FILE``, ``--json-output FILE``,
``--sarif-output FILE``, ``--junit-output FILE`` and ``--github-output FILE``
each write one more report, in that format, whatever the primary one is: one
run shows text in the CI log and leaves SARIF and JUnit files for the
uploaders::

    cleo-rules check --sarif-output cleo-rules.sarif --junit-output cleo-rules.xml

Files are written whole (a temporary file renamed into place), after the
check has run and whatever its verdict, so a failing pack still leaves its
report; a file that cannot be written is an error (exit 2).
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import click

from ..findings import FORMATS

__all__ = ["Outputs", "Piece", "format_option"]


FORMAT_HELP = ("Output: text (for people), json (one document), sarif (SARIF 2.1.0 for code scanning), "
               "junit (JUnit XML, one test case per rule file and per rule) or github (workflow commands that "
               "annotate the files).")

#: one part of a report: its text, and whether it goes to stderr when the report is printed
Piece = tuple[str, bool]


@dataclass(frozen=True)
class Outputs:
    """The formats asked for: the primary one (``fmt``, to ``output`` or stdout) and more, each into its file."""

    fmt: str = "text"
    output: str | None = None
    more: dict[str, str] = field(default_factory=dict)

    def emit(self, render: Callable[[str], list[Piece]]) -> None:
        """Write each report ``render(fmt)`` gives: the files first, then the primary report when it is printed."""
        for fmt, path in self.more.items():
            _write(path, render(fmt))
        if self.output is not None and self.output != "-":
            _write(self.output, render(self.fmt))
            return
        for text, err in render(self.fmt):
            click.echo(text, err=err, nl=False)


def _write(path: str, pieces: list[Piece]) -> None:
    from ..errors import UsageError

    text = "".join(text for text, _ in pieces)
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def format_option(f):
    """``--format``, ``--json``, ``-o/--output`` and ``--F-output`` for every format F: the command gets them as one
    :class:`Outputs` argument, ``outputs``."""

    @functools.wraps(f)
    def command(*args, **kwargs):
        fmt, as_json, output = kwargs.pop("fmt"), kwargs.pop("as_json"), kwargs.pop("output")
        more = {name: kwargs.pop(f"{name}_output") for name in FORMATS}
        outputs = Outputs("json" if as_json else fmt, output, {k: v for k, v in more.items() if v is not None})
        return f(*args, outputs=outputs, **kwargs)

    for name in reversed(FORMATS):
        command = click.option(f"--{name}-output", f"{name}_output", metavar="FILE", default=None,
                               type=click.Path(dir_okay=False),
                               help=f"Also write the report as {name} into FILE, whatever --format is.")(command)
    command = click.option("-o", "--output", "output", metavar="FILE", default=None,
                           type=click.Path(dir_okay=False, allow_dash=True),
                           help="Write the --format report into FILE (whole; for text, the findings too) instead of "
                                "printing it.")(command)
    command = click.option("--json", "as_json", is_flag=True, help="Same as --format json.")(command)
    return click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
                        help=FORMAT_HELP)(command)
