"""``cleo-rules serve``: the HTTP service (a thin click layer over :mod:`cleo_rules.serve`)."""

from __future__ import annotations

from typing import Any

import importlib.util
import logging
import sys

import click

from ..errors import MissingExtra, UsageError
from ..extras import MEMORY_MODULES
from ..memory_backends import backend_for
from ..serve.settings import DEFAULTS, ServeSettings

SERVE_MODULES = ("starlette", "uvicorn", "prometheus_client", "swagger_ui", "pydantic")


def _missing(modules) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


#: names a request's Host may give besides this machine's own, for both commands; also $CLEO_RULES_ALLOWED_HOSTS
ALLOWED_HOSTS_ENV = "CLEO_RULES_ALLOWED_HOSTS"
allowed_hosts_option = click.option(
    "--allowed-hosts", "allowed_hosts", multiple=True, metavar="NAMES", envvar=ALLOWED_HOSTS_ENV,
    show_envvar=True,
    help="Host names a request's Host header may give besides localhost, 127.0.0.1 and [::1] (a reverse proxy "
         "on this machine): 'cleo.example.com', '.example.com' for it and its subdomains, an IP address; "
         "comma-separated or repeated. Without --keys any other Host is refused (403), against DNS rebinding; "
         "with --keys the Host is checked only when this is given.")

#: the key file, for both commands: the same format, read again alike
keys_option = click.option(
    "--keys", type=click.Path(dir_okay=False), default=None, metavar="FILE",
    help="Key file (sha256 of each key and the tenants it may use); every /v1 request then needs "
         "'Authorization: Bearer KEY'. Read again when it changes and on SIGHUP (a file that does not "
         "load then keeps the keys read before).")
new_key_option = click.option(
    "--new-key", default=None, metavar="TENANTS",
    help="Make a key for TENANTS ('a,b' or '*'), append its hash to --keys FILE, print the key, exit.")


def append_key(keys, tenants: str) -> None:
    """``--new-key TENANTS``: a new key for ``tenants``, its hash appended to the ``--keys`` file, the key printed."""
    from ..serve.keys import KeyRing

    if keys is None:
        raise UsageError("--new-key needs --keys FILE to append the key's hash to")
    key = KeyRing.append(keys, tenants)
    click.echo(key)
    click.echo(f"appended its hash to {keys}; the key itself is not stored, keep it now", err=True)


DRAIN_HELP = ("Seconds from SIGTERM to exit: requests in flight finish meanwhile; an ingest still running at half "
              "of it stops after its batch and answers 503 with the lines stored.")
READ_HELP = "Seconds a client has to send a request's headers, then its body (then 408, connection closed)."
IN_FLIGHT_HELP = ("Bytes of request bodies held while being read, all requests together; a body over it gets 503 "
                  "with Retry-After (at least the largest body allowed).")


def _limit(name: str, help: str, kind: Any = int, **kwargs):
    return click.option(f"--{name.replace('_', '-')}", name, type=kind, default=DEFAULTS[name], show_default=True,
                        help=help, **kwargs)


@click.command()
@click.option("--pack", default=None, metavar="DIR|NAME",
              help="Rule pack directory or installed pack's name (default: the bundled cleo-en); watched for changes.")
@click.option("--require", default=None, metavar="RANGE", help="Version range every pack must satisfy, e.g. '>=1.0,<2'.")
@click.option("--memory", default=None, metavar="ROOT|URL",
              help="Memory root: ROOT/<tenant>/ is one store per tenant; or a postgresql:// URL, where each tenant "
                   "is one schema (default: no memory, classify only).")
@click.option("--model", type=click.Path(exists=True, file_okay=False), default=None,
              help="Embedding model directory: an ONNX export or a sentence-transformers model (torch backend, "
                   "[reference] extra). Default: the bundled all-MiniLM-L6-v2 (ONNX int8); CLEO_EMBED_BACKEND and "
                   "CLEO_EMBED_THREADS (default 1) choose the backend and its threads.")
@click.option("--host", default=DEFAULTS["host"], show_default=True,
              help="Address to bind; anything but loopback needs --keys.")
@click.option("--port", default=DEFAULTS["port"], show_default=True, type=click.IntRange(0, 65535))
@keys_option
@new_key_option
@_limit("max_body_bytes", "Largest JSON body.", click.IntRange(1))
@_limit("max_ingest_bytes", "Largest JSON Lines ingest body.", click.IntRange(1))
@_limit("max_message_chars", "Longest message, history string, and text of a history item's content.",
        click.IntRange(1))
@_limit("max_history", "Most history items.", click.IntRange(0))
@_limit("max_batch", "Most items in one classify batch.", click.IntRange(1))
@_limit("max_k", "Most results a turn may ask for.", click.IntRange(1))
@_limit("request_timeout", "Seconds a classify, batch, turn or recall request may take (then 503).",
        click.FloatRange(min=0, min_open=True))
@_limit("ingest_timeout", "Seconds an ingest may take (then 503; committed batches are kept).",
        click.FloatRange(min=0, min_open=True))
@_limit("queue", "Turns and ingests one tenant may have running or waiting; more get 503 with Retry-After.",
        click.IntRange(1))
@_limit("open_stores", "Idle tenant stores kept open (least recently used closed first).", click.IntRange(1))
@_limit("watch_interval", "Seconds between polls of the pack directory and the key file (0: do not watch; "
                          "SIGHUP still reads the key file).", click.FloatRange(min=0))
@_limit("drain_timeout", DRAIN_HELP, click.FloatRange(min=0, min_open=True))
@_limit("read_timeout", READ_HELP, click.FloatRange(min=0, min_open=True))
@_limit("max_body_bytes_in_flight", IN_FLIGHT_HELP, click.IntRange(1))
@click.option("--access-log/--no-access-log", default=False, show_default=True, help="Log every request.")
@click.option("--writable-corpus", is_flag=True,
              help="Let the playground (at /) append saved regressions to corpus/regressions.yaml beside the pack "
                   "(never into an installed cleo-rules).")
@allowed_hosts_option
def serve(pack, require, memory, model, host, port, keys, new_key, access_log, writable_corpus, allowed_hosts,
          **limits):
    """Serve classify, turns, memory, pack status, health and metrics over HTTP.

    One process (run more behind a load balancer to scale out). With
    --memory, ROOT/<tenant>/ is each tenant's store, opened on first use;
    only an ingest creates one. With --memory postgresql://..., every
    tenant is a schema of that database, which all the processes share.
    Errors are application/problem+json; the OpenAPI document is at
    /openapi.json; the playground for conversation designers is at /.
    SIGTERM drains requests in flight and closes the stores; SIGHUP reads
    the key file again.

    \b
    Examples:
      cleo-rules serve
      cleo-rules serve --memory /srv/cleo-memory --keys keys.txt --host 0.0.0.0
      cleo-rules serve --memory postgresql://cleo@db.internal/cleo --keys keys.txt --host 0.0.0.0
      cleo-rules serve --keys keys.txt --new-key acme,globex
    """
    if new_key is not None:
        append_key(keys, new_key)
        return
    missing = _missing(SERVE_MODULES)
    if missing:
        raise UsageError(f"the service needs the serve extra ({', '.join(missing)} missing): "
                         f"pip install 'cleo-rules[serve]'")
    if memory is not None:
        backend = backend_for(memory)
        missing = _missing(sorted(MEMORY_MODULES))
        if backend.modules and (missing or _missing(sorted(backend.modules))):
            raise backend.missing()
        if missing:  # what the core install says of any memory command: the pip command that brings them
            raise MissingExtra("memory", "memory store")
    try:
        settings = ServeSettings(pack=pack, require=require, memory=memory, model=model, host=host, port=port,
                                 keys=keys, access_log=access_log, writable_corpus=writable_corpus,
                                 allowed_hosts=tuple(allowed_hosts), **limits)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if pack is not None:
        from ..pack.discovery import resolve_pack

        resolve_pack(pack)  # a pack that is not there at all is an error now, not a service that never gets ready
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from ..serve import run

    run(settings)
