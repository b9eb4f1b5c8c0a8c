"""The ``cleo-rules`` command: a thin click layer over the library.

Subcommands live in their own modules and are imported only when called, so
``cleo-rules classify`` never pays for an embedding runtime (ONNX Runtime, torch).
Every :class:`~cleo_rules.errors.CleoError` becomes ``Error: ...`` on stderr
and the exit code of its category (:mod:`cleo_rules.codes`); a command that
needs the ``[memory]`` extra says so when it is missing (exit 2); anything
else is a bug, reported in one line with exit code 3 (``CLEO_RULES_DEBUG=1``
prints the traceback).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from typing import NoReturn

import click

from ..errors import CleoError
from ..extras import missing_extra
from .common import EXIT_CODES_HELP, SuggestingGroup

# command name -> (module under cleo_rules.cli, attribute, one-line help)
COMMANDS = {
    "check": ("rules_cmds", "check", "Validate, lint and compile a rule pack, then run its corpus."),
    "classify": ("rules_cmds", "classify", "Classify a message (or JSON Lines on stdin) and shape its query."),
    "explain": ("rules_cmds", "explain", "Show why a message got its decision, and the rules that nearly took it."),
    "rules": ("list_cmds", "rules", "List every rule id of a pack and its bases: kind, pack, description."),
    "corpus": ("corpus_cmds", "corpus", "Build, check and diff the generated rule corpus."),
    "init": ("init_cmds", "init", "Start a team rule pack: manifest, rules, corpus and schemas."),
    "schemas": ("init_cmds", "schemas", "Write the JSON Schemas of rule files into a directory."),
    "packs": ("packs_cmds", "packs", "List the rule packs that can be loaded."),
    "memory": ("memory_cmds", "memory", "Ingest into, search and maintain a memory store ([memory] extra)."),
    "turn": ("turn_cmds", "turn", "Run turns end to end: classify, search, build context ([memory] extra)."),
    "demo": ("turn_cmds", "demo", "Build the sample memory and replay a sample conversation ([memory] extra)."),
    "relevance": ("turn_cmds", "relevance", "Sample traced retrievals for judging and score the judgments."),
    "serve": ("serve_cmds", "serve", "Serve classify, turns and memory over HTTP (the serve extra)."),
    "playground": ("playground_cmds", "playground", "Try a pack on conversations in the browser (the serve extra)."),
}



class LazyGroup(SuggestingGroup):
    def list_commands(self, ctx):
        return sorted(name for name in COMMANDS if self._available(name))

    def _available(self, name):
        module = COMMANDS[name][0]
        return importlib.util.find_spec(f"{__name__}.{module}") is not None

    def get_command(self, ctx, cmd_name):
        if cmd_name not in COMMANDS or not self._available(cmd_name):
            return None
        module, attr, _ = COMMANDS[cmd_name]
        return getattr(importlib.import_module(f"{__name__}.{module}"), attr)

    def format_commands(self, ctx, formatter):
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def versions() -> list[str]:
    """What ``cleo-rules --version`` prints: the package's version, then the bundled pack's (from its manifest)."""
    from importlib.metadata import PackageNotFoundError, version

    from ..pack.discovery import pack_info
    from ..resources import rules_dir

    try:
        package = version("cleo-rules")
    except PackageNotFoundError:  # imported from a checkout that is not installed
        package = "(not installed)"
    info = pack_info(rules_dir(), origin="bundled")
    pack = f"{info.name} {info.version}" if not info.error else f"unreadable ({info.error})"
    return [f"cleo-rules {package}", f"bundled pack: {pack}"]


def _show_version(ctx, param, value):
    if not value or ctx.resilient_parsing:
        return
    for line in versions():
        click.echo(line)
    ctx.exit()


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_CODES_HELP)
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_show_version,
              help="Show the version of cleo-rules and of its bundled pack, and exit.")
def cli():
    """Decide what an assistant with memory should search for on each turn.

    Commands that take a rule pack use --pack (or their PACK argument), else
    $CLEO_RULES_PACK, else [tool.cleo-rules] pack in the nearest pyproject.toml,
    else ./rules when it holds a pack.yaml, else the bundled cleo-en; each
    names the pack it used.

    \b
    Example:
      cleo-rules classify "Yes, go with the second one." --history "Compare the two van insurance quotes"
    """


def _fail(exc: CleoError) -> NoReturn:
    report = getattr(exc, "report", None)
    text = report() if callable(report) else str(exc)
    click.echo(f"Error: {text}", err=True)
    sys.exit(exc.exit_code)


def main(argv=None):
    try:
        rv = cli.main(args=argv, prog_name="cleo-rules", standalone_mode=False)
    except CleoError as exc:
        _fail(exc)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        sys.exit(0)
    except KeyboardInterrupt:
        sys.exit(130)
    except ImportError as exc:
        extra = missing_extra(exc)
        if extra is None:
            _internal(exc)
        else:
            _fail(extra)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, exit 3, never a traceback
        _internal(exc)
    # click returns the code of ctx.exit(n) when not in standalone mode
    sys.exit(rv if isinstance(rv, int) else 0)


def _internal(exc: BaseException) -> NoReturn:
    if os.environ.get("CLEO_RULES_DEBUG"):
        traceback.print_exception(exc)
    error = CleoError(f"internal error: {type(exc).__name__}: {exc}")
    click.echo(f"Error: {error} (this is a bug in cleo-rules; CLEO_RULES_DEBUG=1 shows the traceback)", err=True)
    sys.exit(error.exit_code)
