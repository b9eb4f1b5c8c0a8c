"""The memory store of the commands that take one: the one ``--db`` option and the one way to open it.

Every command that works on a store (``memory ...``, ``turn``, ``relevance
...``) takes it as ``--db DIR|URL`` or ``$CLEO_MEMORY_DB`` (:func:`db_option`)
and opens it with :func:`open_store`, over the library's
:func:`cleo_rules.retrieval.locate.open_memory`. ``demo`` is the exception:
its ``--db`` is where to build the sample memory, and it never reads
``$CLEO_MEMORY_DB``, so a demo never writes its sample into a real store.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager

import click

from ..errors import UsageError

#: the environment variable every ``--db`` reads when the option is not given
DB_ENV = "CLEO_MEMORY_DB"
DB_HELP = ("Memory store: a directory, or a postgresql:// URL (?tenant=NAME picks the tenant); "
           f"or set {DB_ENV}. Only memory ingest creates one.")


def db_option(f=None, *, help: str = DB_HELP, metavar: str = "DIR|URL"):
    """``--db``, required unless ``$CLEO_MEMORY_DB`` is set: the store a command works on.

    ``help`` and ``metavar`` may say more about what this command does with
    it (``memory ingest`` creates the store; ``memory tenants`` takes the
    database); the option is otherwise the same everywhere.
    """
    option = click.option("--db", "db", required=True, envvar=DB_ENV, metavar=metavar, help=help)
    return option if f is None else option(f)


@contextmanager
def open_store(db, *, create: bool = False, read_only: bool = False, **options):
    """Open the store at ``db`` for the length of a ``with`` block, then close it.

    Only ``memory ingest`` and ``demo`` create a store; the other commands
    need one (``no memory store in DIR``), and those that only read open it
    read-only. ``options`` go to
    :func:`~cleo_rules.retrieval.locate.open_memory` (``model_path``, the
    chunk settings, ...). Settings it refuses (impossible chunk settings, a
    malformed tenant name) are usage errors; the store's repair warnings, and
    its notice that another embedding backend built it, are shown as
    ``Warning: ...`` lines on stderr once it is closed.
    """
    from ..memory_backends import store_imports

    with store_imports(db):
        from ..retrieval import EmbeddingNotice, StoreWarning
        from ..retrieval.locate import open_memory

    shown = (StoreWarning, EmbeddingNotice)
    with warnings.catch_warnings(record=True) as caught:
        for category in shown:
            warnings.simplefilter("always", category)
        try:
            store = open_memory(db, create=create, read_only=read_only, **options)
        except (TypeError, ValueError) as exc:
            raise UsageError(str(exc)) from None
        try:
            yield store
        finally:
            store.close()
            for w in caught:
                if issubclass(w.category, shown):
                    click.echo(f"Warning: {w.message}", err=True)
                else:
                    warnings.showwarning(w.message, w.category, w.filename, w.lineno)
