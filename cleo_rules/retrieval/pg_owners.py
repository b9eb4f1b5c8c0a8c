"""Whose each schema is: the owner it records, the check every store makes, and what an operator sees and does.

Every tenant's schema records its tenant in its ``meta`` table (the row
``tenant``), written in the transaction that creates it. A store opened for
tenant ``T`` reads that row before anything else and refuses the schema
(:class:`~cleo_rules.errors.StoreError` E308, nothing read or written) when
it names another tenant, or when no tenant is recorded and the schema's
name cannot say whose it is (:func:`owner_status`).

Schemas made before owners were recorded are judged by their names
(:mod:`~cleo_rules.retrieval.pg_schema_names`): ``cleo_acme`` can only be tenant
``acme``'s, and is adopted (its owner recorded) when ``acme``'s store is next
opened for writing. A schema of the shape the earlier code gave a long
tenant name (``cleo_`` + 45 characters + ``_`` + 12 hex digits) is also the
schema of the valid short name it spells, so it is refused until an
operator says whose it is: ``cleo-rules memory tenants --db URL`` lists
every schema, its recorded owner and its status (:func:`list_schemas`), and
``--adopt SCHEMA --tenant NAME`` records the owner, moving the schema to
the name this code gives that tenant (:func:`adopt`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import LiteralString, cast

import psycopg

from ..errors import StoreError, UsageError
from ..tenant_names import not_a_tenant, valid_tenant
from .pg_schema_names import ambiguous, legacy_schema_name, schema_name, tenant_of
from .pg_schema import quote

__all__ = ["OWNER_KEY", "SchemaEntry", "adopt", "owner_status", "legacy_claim", "list_schemas", "refusal"]

OWNER_KEY = "tenant"
"""The ``meta`` row that names the schema's tenant."""

FINE = ("ok", "unrecorded")
"""The statuses of a schema its tenant's store opens; every other one needs an operator."""

TOOL = "cleo-rules memory tenants --db URL"


def _in(schema: str, statement: str) -> LiteralString:
    """``statement`` (a constant of this module) with ``{s}`` the quoted ``schema``: as safe as a literal."""
    return cast(LiteralString, statement.format(s=quote(schema)))


def lock_key(schema: str) -> str:
    """The advisory lock of a schema's creation, migration and adoption (one key per schema name)."""
    return f"cleo-rules:{schema}"


def owner_status(schema: str, recorded) -> tuple[str, str]:
    """``(status, what it means)`` of ``schema`` recording ``recorded`` as its tenant (None: no record).

    * ``ok``: it records its tenant, and its name is that tenant's schema;
    * ``unrecorded``: no record, and its name is one tenant's only (made
      before owners were recorded); that tenant's store records it when next
      opened for writing;
    * ``ambiguous``: no record, and its name is both a short tenant's schema
      and what the earlier code cut some longer name to;
    * ``conflict``: it records a tenant whose schema is another name (or a
      value that is no tenant name);
    * ``orphan``: no record, and no tenant's schema has its name.
    """
    named = tenant_of(schema)
    if recorded is not None:
        if valid_tenant(recorded) and schema_name(recorded) == schema:
            return "ok", f"records tenant {recorded}, whose schema it is"
        if not valid_tenant(recorded):
            return "conflict", f"records {str(recorded)[:80]!r} as its tenant, which is no tenant name"
        return "conflict", f"records tenant {recorded}, whose schema is {schema_name(recorded)}"
    if ambiguous(schema):
        return "ambiguous", (f"records no tenant, and its name could be tenant {named}'s or a longer tenant name "
                             "that an earlier cleo-rules cut short")
    if named is not None:
        return "unrecorded", (f"records no tenant; its name is tenant {named}'s only (made before owners were "
                              "recorded), and its store records it when next opened for writing")
    return "orphan", "records no tenant, and no tenant's schema has this name"


def refusal(where, schema: str, tenant: str, recorded) -> StoreError | None:
    """The error refusing ``tenant`` its schema ``schema``, which records ``recorded``; None when it may use it."""
    status, detail = owner_status(schema, recorded)
    if status in FINE and (recorded is None or recorded == tenant):
        return None
    return StoreError(f"memory store {where}: schema {schema} {detail}; nothing was read or written. An operator "
                      f"resolves it: `{TOOL}` lists every schema and its tenant, and `{TOOL} --adopt {schema} "
                      "--tenant NAME` gives this one to its tenant", code="E308")


_HOLDS_A_STORE = ("SELECT n.nspname FROM pg_namespace AS n JOIN pg_class AS c ON c.relnamespace = n.oid "
                  "WHERE c.relname = 'meta' AND c.relkind = 'r' AND starts_with(n.nspname, 'cleo_')")
"""The schemas holding a store, from the catalogue (which every role may read, whatever its rights on them)."""


def _recorded(conn, schema: str) -> tuple[bool, str | None]:
    """``(whether schema holds a store, the tenant it records)``."""
    if conn.execute(_HOLDS_A_STORE + " AND n.nspname = %s", [schema]).fetchone() is None:
        return False, None
    row = conn.execute(_in(schema, "SELECT value FROM {s}.meta WHERE key = %s"), [OWNER_KEY]).fetchone()
    return True, (row[0] if row is not None else None)


def legacy_claim(conn, where, tenant: str) -> StoreError | None:
    """For a tenant without a schema: the error saying an earlier cleo-rules's schema may hold its memory, if one may.

    Before this code a long tenant name was cut to :func:`legacy_schema_name`;
    a store of that name recording no owner (or this tenant) may hold this
    tenant's items, and creating an empty schema beside it would hide them.
    """
    old = legacy_schema_name(tenant)
    if old == schema_name(tenant):
        return None
    try:
        exists, recorded = _recorded(conn, old)
    except psycopg.errors.InsufficientPrivilege:  # granted to another role: not this tenant's as its roles go
        return None
    if not exists or (recorded is not None and recorded != tenant):
        return None
    return StoreError(
        f"memory store {where}: schema {old} records {'no tenant' if recorded is None else 'this tenant'}, and may "
        "hold this tenant's memory: an earlier cleo-rules cut this tenant's name to it; nothing was read or "
        "written. An operator resolves it: "
        f"`{TOOL} --adopt {old} --tenant {tenant}` if it is this tenant's (it moves to {schema_name(tenant)}), "
        f"`{TOOL} --adopt {old} --tenant {tenant_of(old) or 'NAME'}` if not", code="E308")


# -- what an operator sees and does ----------------------------------------------------------------


@dataclass(frozen=True)
class SchemaEntry:
    """One store's schema in a database: its recorded tenant, its status and what that means."""

    schema: str
    owner: str | None
    status: str
    detail: str
    documents: int | None = None
    conversations: int | None = None
    created_at: str | None = None

    @property
    def fine(self) -> bool:
        return self.status in FINE

    def to_dict(self) -> dict:
        return asdict(self)


def list_schemas(database) -> list[SchemaEntry]:
    """Every schema of the database that holds a store (``cleo_`` and a ``meta`` table), by name.

    A schema this role may not read is listed with status ``unreadable``.
    """
    with database.connection() as conn:
        names = [r[0] for r in conn.execute(_HOLDS_A_STORE + " ORDER BY n.nspname").fetchall()]
        entries = []
        for name in names:
            try:
                with conn.transaction():
                    _, recorded = _recorded(conn, name)
                    counts = conn.execute(_in(name, "SELECT (SELECT count(*) FROM {s}.documents), (SELECT count(*) "
                                                    "FROM {s}.conversations), (SELECT value FROM {s}.meta WHERE "
                                                    "key = 'created_at')")).fetchone() or (None, None, None)
            except psycopg.Error as exc:
                entries.append(SchemaEntry(name, None, "unreadable", (str(exc).strip().splitlines() or ["?"])[0]))
                continue
            status, detail = owner_status(name, recorded)
            entries.append(SchemaEntry(name, recorded, status, detail, *counts))
    return entries


def adopt(database, schema: str, tenant: str) -> dict:
    """Record ``tenant`` as the owner of ``schema``, moving it to ``schema_name(tenant)`` when that differs.

    ``schema`` must hold a store that may be ``tenant``'s: its name is the
    tenant's schema (now, or as the earlier code named it), or it records
    the tenant already. Returns ``{"schema", "tenant", "moved_to", "was"}``
    (``was``: the owner recorded before). Raises
    :class:`~cleo_rules.errors.UsageError` when it may not be the tenant's or
    the tenant has another schema already.
    """
    if not valid_tenant(tenant):
        raise UsageError(not_a_tenant(tenant))
    target = schema_name(tenant)
    with database.connection() as conn, conn.transaction():
        for key in sorted({lock_key(schema), lock_key(target)}):  # what creates or migrates them waits
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [key])
        exists, recorded = _recorded(conn, schema)
        if not exists:
            raise UsageError(f"schema {schema[:80]!r} holds no memory store; `{TOOL}` lists those that do")
        if schema not in (target, legacy_schema_name(tenant)) and recorded != tenant:
            raise UsageError(f"schema {schema} cannot be tenant {tenant}'s: that tenant's schema is {target}"
                             + (f" (an earlier cleo-rules named it {legacy_schema_name(tenant)})"
                                if legacy_schema_name(tenant) != target else ""))
        moved = None
        if schema != target:
            taken = conn.execute("SELECT to_regnamespace(%s)", [quote(target)]).fetchone()
            if taken is not None and taken[0] is not None:
                raise UsageError(f"tenant {tenant} has a schema already, {target}; adopt, move or drop that one "
                                 f"first (`{TOOL}` shows what it holds)")
            conn.execute(_in(schema, "ALTER SCHEMA {s} RENAME TO ") + _in(target, "{s}"))
            moved = target
        conn.execute(_in(target, "INSERT INTO {s}.meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE "
                                 "SET value = excluded.value"), [OWNER_KEY, tenant])
    return {"schema": schema, "tenant": tenant, "moved_to": moved, "was": recorded}
