"""What one service process is configured with: its pack, its memory, its keys and its limits.

:class:`ServeSettings` is a frozen value built by ``cleo-rules serve`` from its
options (every limit's default is shown in ``--help``) or directly::

    ServeSettings(pack="rules/", memory="/srv/cleo-memory", keys="/etc/cleo/keys")

(A rule pack's own settings are :class:`cleo_rules.pack.model.PackSettings`.)

Nothing here imports Starlette, uvicorn or the memory store.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, fields
from pathlib import Path

from ..memory_backends import backend_for
from ..reading.load import MAX_FILE_BYTES
from ..tenant_names import TENANT_PATTERN, valid_tenant
from .hosts import parse_allowed_hosts

__all__ = ["DEFAULTS", "ServeSettings", "TENANT_PATTERN", "is_loopback", "valid_tenant"]

def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the service on this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServeSettings:
    """One service process's configuration.

    ``pack`` is a pack directory, an installed pack's name or None for the
    bundled pack; ``require`` a version range every pack must satisfy.
    ``memory`` is the root directory of the tenants' stores
    (``ROOT/<tenant>/``), or a ``postgresql://`` URL of the database that
    holds them (one schema per tenant), None for a service without memory; ``model`` an
    embedding model directory, an ONNX export or a sentence-transformers model (default:
    the bundled all-MiniLM-L6-v2, ONNX int8; see :mod:`cleo_rules.retrieval.embed`). ``keys`` is the key file (see
    :mod:`cleo_rules.serve.keys`); without one, every request is let in,
    which is why the service then binds loopback only.

    Limits: ``max_body_bytes`` for JSON bodies, ``max_ingest_bytes`` for a
    JSON Lines ingest body, ``max_message_chars`` for the message, each
    history string and the text of each history item's ``content``,
    ``max_history`` items, ``max_batch`` items in one classify batch,
    ``max_k`` results per turn (``default_k`` when the request gives none).
    ``request_timeout`` seconds for a classify, a batch, a turn or a recall,
    ``ingest_timeout`` for an ingest. ``queue`` turns and ingests may be
    waiting or running for one tenant; more are answered 503 with
    ``Retry-After``. ``open_stores`` idle stores stay open (least recently
    used first out). ``watch_interval`` seconds between polls of the pack
    directory (0: no watching). ``drain_timeout`` seconds to finish requests
    in flight on SIGTERM: an ingest still running at half of it stops after
    the batch it is writing (the client is told which lines are stored), and
    whatever still runs at its end is given up, so the process exits within it.

    ``read_timeout`` seconds a client has to send a request's headers, and
    then again its whole body; past it the request is answered 408 (or, with
    its headers unfinished, the connection closed). At most
    ``max_body_bytes_in_flight`` bytes of request bodies are held while being
    read, all requests together: a body that would go over it is answered 503
    with ``Retry-After`` (before a byte of it is read when its
    ``Content-Length`` says so). It must hold one body of the largest size
    (``max_body_bytes``, and ``max_ingest_bytes`` with memory).

    ``writable_corpus`` lets the playground append a turn saved as a
    regression to ``corpus/regressions.yaml`` beside the pack (never into an
    installed cleo-rules package); without it the playground only shows
    the case's YAML.

    ``writable_pack`` lets the playground edit the pack's own files (its
    manifest, the files it lists, the hand-written files of its corpus: see
    :mod:`cleo_rules.editing`), each edit written only when the whole pack
    passes the acceptance gate; never a bundled or installed pack
    (:func:`~cleo_rules.serve.run` refuses to start). A file's text is held
    to :data:`~cleo_rules.reading.load.MAX_FILE_BYTES` (1 MiB), the limit of
    every pack file.

    ``allowed_hosts`` are the host names, besides this machine's own
    (``localhost``, loopback addresses), that a request's ``Host`` may name:
    ``cleo.example.com``, ``.example.com`` (it and its subdomains), an IP
    address; each item may list several, comma-separated. Without keys the
    ``Host`` is always checked; with keys only when names are given (see
    :mod:`cleo_rules.serve.hosts`).
    """

    pack: str | None = None
    require: str | None = None
    memory: Path | str | None = None
    model: str | None = None
    keys: Path | None = None
    host: str = "127.0.0.1"
    port: int = 8080
    max_body_bytes: int = 1 << 20
    max_ingest_bytes: int = 32 << 20
    max_message_chars: int = 10_000
    max_history: int = 100
    max_batch: int = 256
    max_k: int = 100
    default_k: int = 5
    request_timeout: float = 10.0
    ingest_timeout: float = 600.0
    queue: int = 16
    open_stores: int = 32
    watch_interval: float = 1.0
    drain_timeout: float = 30.0
    read_timeout: float = 30.0
    max_body_bytes_in_flight: int = 128 << 20
    access_log: bool = False
    writable_corpus: bool = False
    writable_pack: bool = False
    allowed_hosts: tuple[str, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "allowed_hosts", parse_allowed_hosts(self.allowed_hosts))
        if self.memory is not None and not isinstance(self.memory, Path) and backend_for(self.memory).scheme is None:
            object.__setattr__(self, "memory", Path(self.memory))
        if self.keys is not None and not isinstance(self.keys, Path):
            object.__setattr__(self, "keys", Path(self.keys))
        for name in ("max_body_bytes", "max_ingest_bytes", "max_message_chars", "max_batch", "max_k", "default_k",
                     "queue", "open_stores", "max_body_bytes_in_flight"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        if not isinstance(self.max_history, int) or self.max_history < 0:
            raise ValueError(f"max_history must be a non-negative integer, not {self.max_history!r}")
        if self.default_k > self.max_k:
            raise ValueError(f"default_k ({self.default_k}) must not exceed max_k ({self.max_k})")
        largest = max(self.max_body_bytes, self.max_ingest_bytes if self.memory is not None else 0,
                      MAX_FILE_BYTES if self.writable_pack else 0)
        if self.max_body_bytes_in_flight < largest:
            raise ValueError(f"max_body_bytes_in_flight ({self.max_body_bytes_in_flight}) must hold one body of the "
                             f"largest size allowed ({largest} bytes: max_body_bytes, max_ingest_bytes with "
                             f"memory, a pack file's {MAX_FILE_BYTES} with writable_pack)")
        for name in ("request_timeout", "ingest_timeout", "drain_timeout", "read_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be a positive number of seconds, not {getattr(self, name)!r}")
        if self.watch_interval < 0:
            raise ValueError(f"watch_interval must be 0 (off) or positive, not {self.watch_interval!r}")


#: Every setting's default, by name (what ``--help`` shows).
DEFAULTS = {f.name: f.default for f in fields(ServeSettings)}
