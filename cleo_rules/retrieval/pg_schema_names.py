"""Tenant names and schema names: a mapping no two tenants can share, and its inverse.

A tenant's name is :data:`~cleo_rules.tenant_names.TENANT_SYNTAX`; PostgreSQL keeps at most
63 bytes of a schema's name. A tenant whose name fits beside the prefix (58
characters or fewer) lives in ``cleo_<tenant>``, as it always has. A longer
name does not fit, so its schema keeps the name's head and writes the rest
as a number::

    cleo_<head>~<tail in base 62>

The ``~`` is a character no tenant name holds, so no short name's schema
takes this form; the tail is the rest of the name as a bijective base-38
number written in base 62 (``0-9A-Za-z``), which the schema name gives back
exactly. :func:`tenant_of` reads a schema name back into its tenant, and
``schema_name(tenant_of(s)) == s`` for every schema this code names: the
mapping is injective by construction, not by a hash that two names might
share.

Before this mapping, a long name was cut to ``cleo_`` + 45 characters +
``_`` + 12 hex digits of its SHA-256 (:func:`legacy_schema_name`), which is
itself the schema of a valid 58-character name. A schema of that shape made
before owners were recorded (:func:`ambiguous`) cannot tell whose it is, and
an operator must say (see :mod:`~cleo_rules.retrieval.pg_owners`).
"""

from __future__ import annotations

import hashlib

from ..tenant_names import TENANT_PATTERN, TENANT_SYNTAX, not_a_tenant, valid_tenant

__all__ = ["MAX_IDENTIFIER", "SCHEMA_PREFIX", "TENANT_PATTERN", "TENANT_SYNTAX", "ambiguous", "legacy_schema_name",
           "schema_name", "tenant_of", "valid_tenant"]  # the tenant names' are cleo_rules.tenant_names', kept here too

SCHEMA_PREFIX = "cleo_"

MAX_IDENTIFIER = 63  # PostgreSQL's NAMEDATALEN - 1
ROOM = MAX_IDENTIFIER - len(SCHEMA_PREFIX)
"""The longest tenant name whose schema is ``cleo_<tenant>``: 58 characters."""

MARK = "~"
"""Between a long name's head and its tail: not a character of any tenant name."""

_NAME_CHARS = "-0123456789_abcdefghijklmnopqrstuvwxyz"
_NAME_VALUE = {c: n for n, c in enumerate(_NAME_CHARS)}
_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_DIGIT_VALUE = {c: n for n, c in enumerate(_DIGITS)}
_LEGACY_HEAD = MAX_IDENTIFIER - 13  # the old mapping's cut: prefix and 45 characters, then "_" and 12 hex digits
_HEX = frozenset("0123456789abcdef")


def _tail_number(tail: str) -> int:
    """``tail`` as a bijective base-38 number: every string, of any length, its own number."""
    value = 0
    for char in tail:
        value = value * len(_NAME_CHARS) + _NAME_VALUE[char] + 1
    return value


def _tail_of(value: int) -> str:
    chars = []
    while value:
        value, digit = divmod(value - 1, len(_NAME_CHARS))
        chars.append(_NAME_CHARS[digit])
    return "".join(reversed(chars))


def _base62(value: int) -> str:
    digits = []
    while value:
        value, digit = divmod(value, len(_DIGITS))
        digits.append(_DIGITS[digit])
    return "".join(reversed(digits)) or "0"


def _split(n: int) -> int:
    """How many characters of an ``n``-character name go into the number: the fewest whose longest number fits."""
    for tail in range(1, n + 1):
        longest = len(_base62(_tail_number(_NAME_CHARS[-1] * tail)))
        if n - tail + len(MARK) + longest <= ROOM:
            return tail
    raise AssertionError(f"no split fits a {n}-character name")  # 63 characters need 57: never reached


def schema_name(tenant: str) -> str:
    """The schema of ``tenant``: ``cleo_<tenant>``, or ``cleo_<head>~<tail in base 62>`` past 58 characters.

    Distinct tenants always get distinct schemas (see the module's notes);
    ``tenant`` must be a valid tenant name (``ValueError`` otherwise).
    """
    if not valid_tenant(tenant):
        raise ValueError(not_a_tenant(tenant))
    if len(tenant) <= ROOM:
        return SCHEMA_PREFIX + tenant
    tail = _split(len(tenant))
    return SCHEMA_PREFIX + tenant[:-tail] + MARK + _base62(_tail_number(tenant[-tail:]))


def tenant_of(schema: str) -> str | None:
    """The tenant whose schema is ``schema`` (the inverse of :func:`schema_name`), or None when no tenant's is."""
    if not isinstance(schema, str) or not schema.startswith(SCHEMA_PREFIX) or len(schema) > MAX_IDENTIFIER:
        return None
    body = schema[len(SCHEMA_PREFIX):]
    head, mark, code = body.partition(MARK)
    if mark:
        if not code or any(c not in _DIGIT_VALUE for c in code):
            return None
        value = 0
        for c in code:
            value = value * len(_DIGITS) + _DIGIT_VALUE[c]
        tenant = head + _tail_of(value)
    else:
        tenant = body
    if not valid_tenant(tenant) or schema_name(tenant) != schema:  # a leading 0, a head cut elsewhere
        return None
    return tenant


def legacy_schema_name(tenant: str) -> str:
    """The schema cleo-rules gave ``tenant`` before owners were recorded: a long name cut, with 12 hex digits."""
    name = SCHEMA_PREFIX + tenant
    if len(name) <= MAX_IDENTIFIER:
        return name
    digest = hashlib.sha256(tenant.encode()).hexdigest()[:12]
    return name[:_LEGACY_HEAD] + "_" + digest


def ambiguous(schema: str) -> bool:
    """Whether ``schema`` has the shape the earlier cleo-rules gave a long tenant name.

    Such a schema, if it records no owner, may be the schema of the short
    name it spells or of some longer name that was cut to it: its name alone
    cannot say which.
    """
    return (len(schema) == MAX_IDENTIFIER and schema.startswith(SCHEMA_PREFIX) and schema[_LEGACY_HEAD] == "_"
            and set(schema[_LEGACY_HEAD + 1:]) <= _HEX and valid_tenant(schema[len(SCHEMA_PREFIX):_LEGACY_HEAD]))
