"""Exceptions raised by cleo-rules.

Every error the library raises on purpose is a :class:`CleoError`; the CLI turns
one into ``Error: ...`` and the exit code of its category (see
:mod:`cleo_rules.codes`: 1 for findings in a pack or corpus, 2 for usage and
environment errors), never a traceback::

    CleoError                      base; ``code`` is a stable identifier (cleo_rules.codes)
    ├── PackError                  a rule pack cannot be loaded; ``problems`` lists all
    │   └── PackVersionError       the pack is outside a required version range
    ├── PackNotFound               no pack under that name or path
    ├── StoreError                 the memory store cannot be opened or written
    │   └── IngestError            ingest input is malformed (``problems`` by line)
    ├── MissingExtra               an optional extra (``[memory]``) is not installed
    └── UsageError                 an argument or input line is wrong
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import codes


class CleoError(Exception):
    """Base class of every deliberate cleo-rules error.

    ``code`` is registered in :mod:`cleo_rules.codes`; ``exit_code`` is the
    command line's exit code for it.
    """

    code = "E000"

    def __init__(self, message: str = "", *, code: str | None = None):
        super().__init__(message)
        if code is not None:
            self.code = code
        codes.seen(self.code)

    @property
    def message(self) -> str:
        return str(self)

    @property
    def exit_code(self) -> int:
        return codes.exit_code(self.code)


@dataclass(frozen=True)
class Problem:
    """One finding about a rule pack, with where it is and how to fix it.

    ``line`` and ``col`` are 1-based; ``pointer`` is a JSON pointer into the
    file's document (``/rules/3/pattern``); ``rule`` is the id of the rule the
    problem belongs to, when there is one; ``pack``, in a pack built on
    others (``extends:``), the name of the pack whose file it is in.
    """

    code: str
    message: str
    file: str
    line: int = 0
    col: int = 0
    pointer: str = ""
    rule: str | None = None
    help: str = ""
    severity: str = "error"  # "error", "warning" or "note" (an open corpus case: never a failure)
    rank: int = field(default=50, compare=False)  # lower sorts first: best match
    pack: str | None = None

    def __post_init__(self):
        codes.seen(self.code, self.message)

    @property
    def location(self) -> str:
        if self.line:
            return f"{self.file}:{self.line}:{self.col}"
        return self.file

    def format(self) -> str:
        head = f"{self.location}: {self.severity}[{self.code}]"
        if self.rule:
            head += f" {self.rule}"
        if self.pack:
            head += f" (pack {self.pack})"
        if self.pointer:
            head += f" at {self.pointer}"
        text = f"{head}: {self.message}"
        if self.help:
            text += f"\n  help: {self.help}"
        return text

    def to_dict(self) -> dict:
        return {
            "code": self.code,
            "severity": self.severity,
            "file": self.file,
            "line": self.line,
            "col": self.col,
            "pointer": self.pointer,
            "rule": self.rule,
            "message": self.message,
            "help": self.help,
            "pack": self.pack,
        }


class PackError(CleoError):
    """A rule pack failed to load, validate, lint or compile.

    ``problems`` holds every finding, the most useful first. ``read``, when
    the compiler got as far as the pack's manifest, is what it read of the
    pack itself: ``(manifest, files)``, the manifest as loaded (None when it
    could not be read) and each file it lists by its name there, as loaded
    (None for one that could not be read); so what reports on a pack that
    does not compile (:func:`cleo_rules.findings.outline`) reads nothing again.
    """

    code = "E100"

    def __init__(self, problems, *, pack: str = "", read: tuple | None = None):
        problems = sorted(problems, key=lambda p: (p.severity != "error", p.rank, p.file, p.line, p.col))
        self.problems = tuple(problems)
        self.pack = pack
        self.read = read
        errors = [p for p in self.problems if p.severity == "error"]
        count = len(errors)
        where = f" {pack}" if pack else ""
        lead = errors[0].format() if errors else "no details"
        summary = f"rule pack{where} is invalid ({count} error{'s' if count != 1 else ''})"
        super().__init__(f"{summary}\n{lead}")

    def report(self) -> str:
        """All problems, one block each, best first, and a count line."""
        errors = sum(1 for p in self.problems if p.severity == "error")
        warnings = len(self.problems) - errors
        lines = [p.format() for p in self.problems]
        lines.append(f"{errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''}")
        return "\n".join(lines)


class PackVersionError(PackError):
    """The pack loaded, but its version is outside the range the runtime requires."""

    code = "E190"

    def __init__(self, problems, *, pack: str = "", required: str = ""):
        super().__init__(problems, pack=pack)
        self.required = required
        where = f" {pack}" if pack else ""
        lead = self.problems[0].format() if self.problems else ""
        self.args = (f"rule pack{where} is outside the required version range {required}\n{lead}",)


class PackNotFound(CleoError):
    code = "E101"


class StoreError(CleoError):
    """A memory store cannot do what was asked.

    ``stored_lines`` is set on the error of an ingest that failed part way:
    lines 1 to ``stored_lines`` of its input are handled (their items
    committed, malformed ones skipped) and nothing from the next line on is
    stored. It is None otherwise.
    """

    code = "E300"

    def __init__(self, message: str = "", *, code: str | None = None, stored_lines: int | None = None):
        super().__init__(message, code=code)
        self.stored_lines = stored_lines


class IngestError(StoreError):
    code = "E310"

    def __init__(self, message: str, problems=()):
        super().__init__(message)
        self.problems = tuple(problems)


class UsageError(CleoError):
    code = "E001"


class MissingExtra(CleoError):
    """A command needs an optional extra that is not installed (``pip install 'cleo-rules[memory]'``)."""

    code = "E002"

    def __init__(self, extra: str = "memory", what: str = "memory store", *, message: str | None = None):
        super().__init__(message or f"the {what} needs the [{extra}] extra: pip install 'cleo-rules[{extra}]'")
        self.extra = extra
