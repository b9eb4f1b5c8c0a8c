"""``cleo-rules memory``: ingest into, search and maintain a memory store.

A thin layer over a :class:`~cleo_rules.retrieval.memory.Memory`; every
command takes the store as ``--db DIR`` (the embedded store) or ``--db
postgresql://...`` (PostgreSQL, see :mod:`cleo_rules.retrieval.postgres`),
or ``$CLEO_MEMORY_DB``, as every command that takes a store does
(:mod:`.store`).
"""

from __future__ import annotations

import json
import sys

import click

from ..errors import UsageError
from ..kinds import Source
from .common import SuggestingGroup
from .db_option import db_option, open_store


def _model_option(f):
    return click.option(
        "--model",
        "model_path",
        type=click.Path(exists=True, file_okay=False),
        default=None,
        help="Embedding model directory: an ONNX export (model.onnx and tokenizer.json, as scripts/export_onnx.py "
             "writes) or a sentence-transformers model (torch backend, [reference] extra). Default: the bundled "
             "all-MiniLM-L6-v2 (ONNX int8). CLEO_EMBED_BACKEND=onnx|torch and CLEO_EMBED_THREADS=N (default 1) "
             "choose the backend and its threads.",
    )(f)


@click.group(cls=SuggestingGroup, context_settings={"help_option_names": ["-h", "--help"]})
def memory():
    """Ingest into, search and maintain a memory store.

    A store is one directory: a SQLite database (the source of truth) and
    hnswlib indexes rebuilt from it whenever they are missing or damaged.
    Or it is one tenant of a PostgreSQL database with pgvector (--db
    postgresql://..., with the [postgres] extra), which many servers share.

    \b
    Example:
      cleo-rules memory ingest --db mem/ --sample
      cleo-rules memory sample > sample_memory.jsonl
      cleo-rules memory search --db mem/ "van insurance excess" --k 3
      cleo-rules memory stats --db 'postgresql://cleo@db.internal/cleo?tenant=acme'
    """


@memory.command()
@db_option
@click.argument("file", required=False, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--sample", is_flag=True, help="Ingest the bundled sample memory instead of FILE.")
@click.option("--strict", is_flag=True, help="Reject the whole file if any line is malformed (default: skip such lines).")
@click.option("--batch-size", default=32, show_default=True, type=click.IntRange(1, 10_000), help="Items embedded and committed together.")
@click.option("--chunk-size", default=None, type=click.IntRange(1), help="Words per snippet or passage (default 120).")
@click.option("--chunk-overlap", default=None, type=click.IntRange(0), help="Words a passage may repeat from the previous one (default 30).")
@click.option("--chunk-max-chars", default=None, type=click.IntRange(1),
              help="Characters a snippet or passage may hold at most, however few its words (default 2000).")
@click.option("--progress/--no-progress", default=None,
              help="Show a progress bar on stderr (default: whenever stderr is a terminal).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@_model_option
def ingest(db, file, sample, strict, batch_size, chunk_size, chunk_overlap, chunk_max_chars, progress, as_json,
           model_path):
    """Add conversations and documents from a JSON Lines FILE ('-' for stdin).

    Each line is {"type": "conversation", "id", "title", "date", "messages":
    [{"role", "text"}, ...]} or {"type": "document", "id", "title", "date",
    "text"}. Re-ingesting an id replaces it; the same content is left as is.
    Malformed lines are reported with their line numbers and skipped, or,
    with --strict, the whole file is rejected and nothing is written. A
    progress bar goes to stderr when it is a terminal; the last line is the
    summary (added, updated, unchanged, skipped, time taken).

    \b
    Example:
      cleo-rules memory ingest --db mem/ notes.jsonl --strict
    """
    from ..resources import data_dir
    from ..retrieval.chunk import DEFAULT_CHUNK_MAX_CHARS, DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE

    if sample == bool(file):
        raise UsageError("give either a FILE to ingest or --sample")
    path = str(data_dir() / "sample_memory.jsonl") if sample else file
    if path == "-":
        source = sys.stdin.buffer.readlines()
        total = len(source)
    else:
        source = path
        try:
            with open(path, "rb") as fh:
                total = sum(1 for _ in fh)
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    show = progress if progress is not None else sys.stderr.isatty()  # in a terminal, however short the input
    options = {
        "chunk_size": chunk_size if chunk_size is not None else DEFAULT_CHUNK_SIZE,
        "chunk_overlap": chunk_overlap if chunk_overlap is not None else DEFAULT_CHUNK_OVERLAP,
        "chunk_max_chars": chunk_max_chars if chunk_max_chars is not None else DEFAULT_CHUNK_MAX_CHARS,
        "model_path": model_path,
    }
    with open_store(db, create=True, **options) as store:
        if show:
            with click.progressbar(length=total, label="Ingesting", file=sys.stderr) as bar:
                report = store.ingest_jsonl(source, strict=strict, progress=bar.update, batch_size=batch_size)
        else:
            report = store.ingest_jsonl(source, strict=strict, batch_size=batch_size)
        if path == "-":
            report.source = "<stdin>"
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
        return
    for problem in report.problems:
        click.echo(problem.format(), err=True)
    embed = report.timings.get("embed", 0.0)
    rate = report.items / report.seconds if report.seconds else 0.0
    click.echo(f"{report.summary()}; {report.seconds:.2f} s ({embed:.2f} s embedding), {rate:.0f} items/s")


@memory.command()
def sample():
    """Print the bundled sample memory (JSON Lines, the ingest format) on stdout.

    The file `memory ingest --sample` reads, for a client of the service
    to send to POST /v1/tenants/{tenant}/memory, or to edit into a memory
    of its own. Needs no extra: nothing is embedded or opened.

    \b
    Example:
      cleo-rules memory sample > sample_memory.jsonl
    """
    from ..resources import data_dir

    click.echo((data_dir() / "sample_memory.jsonl").read_bytes(), nl=False)  # bytes: written as they are


@memory.command()
@db_option
@click.argument("query")
@click.option("--k", "k", default=5, show_default=True, type=click.IntRange(1, 1000), help="How many results.")
@click.option(
    "--source", "sources", multiple=True, type=click.Choice([s.value for s in Source]),
    help="Search only conversation snippets or document passages (repeatable; default both).",
)
@click.option("--floor", type=float, default=None, help="Drop results scoring below this cosine similarity (default 0).")
@click.option("--json", "as_json", is_flag=True, help="Print the response as JSON.")
@_model_option
def search(db, query, k, sources, floor, as_json, model_path):
    """Find the snippets and passages closest in meaning to QUERY.

    \b
    Example:
      cleo-rules memory search --db mem/ "which van insurance did we pick?" --k 3 --json
    """
    with open_store(db, read_only=True, model_path=model_path) as store:
        try:
            response = store.search(query, k=k, sources=sources or tuple(Source), floor=floor)
        except (TypeError, ValueError) as exc:  # an empty query
            raise UsageError(str(exc)) from None
    if as_json:
        click.echo(json.dumps(response.to_dict(), indent=2, ensure_ascii=False))
        return
    if not response.results:
        click.echo("No results.")
    for rank, r in enumerate(response.results, start=1):
        click.echo(f"{rank:>2}. {r.score:.3f}  {r.source:<12} {r.title} ({r.date})  [{r.item}]")
        text = r.text if len(r.text) <= 400 else r.text[:399].rstrip() + "…"
        for line in text.splitlines():
            click.echo(f"    {line}")
    t = response.timings
    click.echo(
        f"{len(response.results)} result{'s' if len(response.results) != 1 else ''} in {t['total'] * 1000:.1f} ms "
        f"(embed {t['embed'] * 1000:.1f}, search {t['search'] * 1000:.1f}, metadata {t['metadata'] * 1000:.1f})",
        err=True,
    )


@memory.command()
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
def stats(db, as_json):
    """Show what a memory store holds and the state of its indexes.

    \b
    Example:
      cleo-rules memory stats --db mem/
    """
    with open_store(db, read_only=True) as store:
        data = store.stats()
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(f"store:         {data['path']}")
    click.echo(f"conversations: {data['conversations']} ({data['messages']} messages, {data['snippets']} snippets)")
    click.echo(f"documents:     {data['documents']} ({data['passages']} passages)")
    click.echo(f"model:         {data['model'] or '-'} ({data['dim'] or '-'} dimensions)")
    stored, embedder = data["embedding"]["stored"], data["embedding"]["embedder"]
    if stored is not None:
        made = (f"{stored['backend']} (model sha256 {(stored['model_sha256'] or '-')[:12]}, {stored['runtime'] or '-'})"
                if stored["recorded"] else f"{stored['backend']} (assumed: written before backends were recorded)")
        click.echo(f"vectors from:  {made}")
    threads = embedder.get("threads")
    click.echo(f"embedder:      {embedder['backend']}{' ' + embedder['quantization'] if embedder.get('quantization') else ''}"
               f" ({embedder.get('runtime') or '-'}), {threads} thread{'' if threads == 1 else 's'}"
               f" ({embedder.get('threads_from', '-')})")
    click.echo(f"database:      {data['db_bytes']:,} bytes")
    for name, ix in data["indexes"].items():
        if ix.get("kind") == "hnsw":  # pgvector's index, inside the database
            click.echo(f"index {name + ':':<9} {ix['elements']} elements, hnsw m={ix['m'] or '-'} "
                       f"ef_construction={ix['ef_construction'] or '-'}, {ix['bytes']:,} bytes")
            continue
        click.echo(
            f"index {name + ':':<9} {ix['elements']} elements, capacity {ix['capacity']}, "
            f"{ix['deleted_slots']} deleted slots, {ix['bytes']:,} bytes, generation {ix['generation']}"
        )


@memory.command()
@db_option
@click.option("--reembed", is_flag=True, help="Encode every snippet and passage again first (after changing --model).")
@_model_option
def rebuild(db, reembed, model_path):
    """Rebuild the vector indexes from the vectors kept in the database.

    Opening a store already repairs a damaged index; use this to force a
    fresh build, or with --reembed to switch the store to another model.
    In PostgreSQL this reindexes the tenant's HNSW indexes (and upgrades an
    older schema, as every open for writing does).

    \b
    Example:
      cleo-rules memory rebuild --db mem/
    """
    with open_store(db, model_path=model_path) as store:
        counts = store.rebuild(reembed=reembed)
    click.echo(
        f"rebuilt: {counts['conversation']} snippets, {counts['document']} passages in {counts['seconds']:.2f} s"
    )


@memory.command()
@db_option
@click.option("--conversation", "conversations", multiple=True, metavar="ID", help="A conversation to delete (repeatable).")
@click.option("--document", "documents", multiple=True, metavar="ID", help="A document to delete (repeatable).")
def delete(db, conversations, documents):
    """Delete conversations or documents; they leave search results at once.

    \b
    Example:
      cleo-rules memory delete --db mem/ --conversation conv-2023-03-boiler-care-club
    """
    if not conversations and not documents:
        raise UsageError("name at least one --conversation or --document to delete")
    missing = []
    with open_store(db) as store:
        for cid in conversations:
            if not store.delete_conversation(cid):
                missing.append(f"conversation {cid}")
        for did in documents:
            if not store.delete_document(did):
                missing.append(f"document {did}")
    deleted = len(conversations) + len(documents) - len(missing)
    click.echo(f"deleted {deleted} item{'s' if deleted != 1 else ''}")
    if missing:
        raise UsageError("not found: " + ", ".join(missing))


@memory.command()
@db_option(metavar="URL", help="The PostgreSQL database: a postgresql:// URL (a ?tenant= in it is ignored); "
                               "or set CLEO_MEMORY_DB.")
@click.option("--adopt", "schema", default=None, metavar="SCHEMA",
              help="Give SCHEMA to --tenant: record the tenant as its owner, and move it to that tenant's "
                   "schema name if it has another.")
@click.option("--tenant", default=None, metavar="NAME", help="The tenant --adopt gives SCHEMA to.")
@click.option("--json", "as_json", is_flag=True, help="Print the schemas (or what --adopt did) as JSON.")
def tenants(db, schema, tenant, as_json):
    """List the tenants' schemas in a PostgreSQL database, the tenant each records, and its status.

    Each tenant's schema records its tenant (OWNER), and a store refuses a
    schema that records another, or that cannot tell whose it is (E308). The
    statuses: ok (it records its tenant); unrecorded (made before owners
    were recorded, its name is one tenant's only: recorded when that
    tenant's store is next opened for writing); ambiguous (made before
    owners were recorded, and its name is both a short tenant's and one an
    earlier cleo-rules cut a long tenant name to); conflict (it records a
    tenant whose schema is another name); orphan (no record, no tenant's
    name); unreadable (this role may not read it). Resolve an ambiguous or
    conflicting schema with --adopt SCHEMA --tenant NAME.

    Exits 1 when a schema needs an operator (any status but ok and
    unrecorded), 0 when none does, 2 on a usage or database error.

    \b
    Example:
      cleo-rules memory tenants --db postgresql://cleo@db.internal/cleo
      cleo-rules memory tenants --db postgresql://cleo@db.internal/cleo --adopt SCHEMA --tenant acme
    """
    from ..memory_backends import backend_for

    backend = backend_for(db)
    if backend.extra != "postgres":
        raise UsageError(f"memory tenants lists the tenants of a PostgreSQL database (--db postgresql://...); "
                         f"{db!s:.80} is a directory, which holds one store")
    if (schema is None) != (tenant is None):
        raise UsageError("--adopt SCHEMA and --tenant NAME go together")
    with backend.imports():
        from ..retrieval.pg_owners import TOOL, adopt, list_schemas
        from ..retrieval.pg_schema import parse_location
        from ..retrieval.postgres import Database

    with Database(parse_location(db).url, pool_size=1, read_only=schema is None) as database:
        if schema is not None:
            done = adopt(database, schema, tenant)
            if as_json:
                click.echo(json.dumps(done, indent=2))
                return
            was = f" (it recorded tenant {done['was']})" if done["was"] not in (None, tenant) else ""
            moved = f", moved to {done['moved_to']}" if done["moved_to"] else ""
            click.echo(f"schema {schema} is tenant {tenant}'s{moved}{was}")
            return
        entries = list_schemas(database)
        where = database.where
    attention = [e for e in entries if not e.fine]
    if as_json:
        click.echo(json.dumps({"database": where, "schemas": [e.to_dict() for e in entries]}, indent=2))
    else:
        rows = [("SCHEMA", "STATUS", "OWNER", "DOCUMENTS", "CONVERSATIONS")] + [
            (e.schema, e.status, e.owner or "-", "-" if e.documents is None else str(e.documents),
             "-" if e.conversations is None else str(e.conversations)) for e in entries]
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        for r in rows:
            click.echo("  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4])
        counts: dict[str, int] = {}
        for e in entries:
            counts[e.status] = counts.get(e.status, 0) + 1
        click.echo(f"{len(entries)} schema{'s' if len(entries) != 1 else ''} in {where}"
                   + (": " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) if counts else ""))
        for e in attention:
            click.echo(f"{e.schema}: {e.status}: {e.detail}", err=True)
        if any(e.status != "unreadable" for e in attention):
            click.echo(f"Give each to its tenant with `{TOOL} --adopt SCHEMA --tenant NAME`.", err=True)
        if any(e.status == "unreadable" for e in attention):
            click.echo("Run this as a role that may read every tenant's schema (the database owner) to judge "
                       "the unreadable ones.", err=True)
    if attention:
        sys.exit(1)
