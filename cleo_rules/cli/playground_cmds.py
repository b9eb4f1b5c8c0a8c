"""``cleo-rules playground``: the designers' page on its own, without memory (a thin layer over :mod:`cleo_rules.serve`)."""

from __future__ import annotations

import logging
import sys

import click

from ..errors import UsageError
from .common import EXIT_CODES_HELP, PACK_HELP
from .serve_cmds import SERVE_MODULES, _missing, allowed_hosts_option, append_key, keys_option, new_key_option


@click.command(epilog=EXIT_CODES_HELP)
@click.option("--pack", default=None, metavar="DIR|NAME", help=PACK_HELP + " Watched for changes.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535),
              help="Port on 127.0.0.1 (0: any free port).")
@click.option("--writable-corpus", is_flag=True,
              help="Append turns saved as regressions to corpus/regressions.yaml beside the pack (never into an "
                   "installed cleo-rules).")
@click.option("--writable-pack", is_flag=True,
              help="Edit the pack's own files in the page (its manifest, the files it lists, the hand-written files "
                   "of its corpus): each edit is judged with the whole pack by the serving gate and written only "
                   "if the pack passes. Never a bundled or installed pack.")
@click.option("--watch-interval", default=0.5, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Seconds between polls of the pack directory.")
@keys_option
@new_key_option
@allowed_hosts_option
def playground(pack, port, writable_corpus, writable_pack, watch_interval, keys, new_key, allowed_hosts):
    """Serve the playground for conversation designers on 127.0.0.1 and print its URL.

    The page classifies a conversation turn by turn (kind, rule with its
    file:line, the matched span, the query and where each part came from),
    runs it again when the pack's files change, marking every turn whose
    kind, rule or query changed, and shows a refused pack's errors while the
    old pack keeps answering. It turns a turn into a regressions case
    (open, when the pack gets the turn wrong). With --writable-pack it
    edits the pack's own files: after a pause in typing the whole pack is
    judged with the edit; it is written and the turns run again only if
    the pack passes, else the located errors are shown beside the file.
    Nothing is opened: go to the URL printed. No memory: for recalled items
    run `cleo-rules serve --memory ROOT`, which serves the same page at /.

    It listens on 127.0.0.1 only, where every user of this machine can reach
    it: on a shared machine start it with --keys FILE (as `serve` takes it;
    make a key with --new-key '*'). The page then asks for the key once and
    keeps it for the tab; saving regressions and editing need a key for
    every tenant ('*').

    \b
    Examples:
      cleo-rules playground
      cleo-rules playground --pack rules/ --port 8765 --writable-corpus
      cleo-rules playground --pack rules/ --writable-pack --writable-corpus
      cleo-rules playground --keys keys.txt --new-key '*'
      cleo-rules playground --pack rules/ --writable-pack --keys keys.txt
    """
    from ..pack.discovery import find_pack
    from ..serve.settings import ServeSettings

    if new_key is not None:
        append_key(keys, new_key)
        return
    missing = _missing(SERVE_MODULES)
    if missing:
        raise UsageError(f"the playground needs the serve extra ({', '.join(missing)} missing): "
                         f"pip install 'cleo-rules[serve]'")
    found = find_pack(pack)  # as every other command finds its pack; a pack that is not there is an error now
    try:
        settings = ServeSettings(pack=str(found.path), host="127.0.0.1", port=port, watch_interval=watch_interval,
                                 writable_corpus=writable_corpus, writable_pack=writable_pack, keys=keys,
                                 allowed_hosts=tuple(allowed_hosts))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from ..serve import run

    def listening(host, bound):
        edits = "; its files are edited in the page" if writable_pack else ""
        keyed = "; a key is needed" if keys is not None else ""
        click.echo(f"playground: http://{host}:{bound}/  (pack {found.to_dict()['path']}, {found.describe()}{edits}"
                   f"{keyed}; Ctrl-C stops it)")
        sys.stdout.flush()

    run(settings, on_listening=listening)
