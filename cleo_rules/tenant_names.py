"""A tenant's name: the one pattern the service, its keys file and both memory backends check.

A tenant's name is :data:`TENANT_SYNTAX`: lower-case letters, digits, ``_``
and ``-``, 1 to 63 characters, starting with a letter or digit. It names the
tenant's directory under the service's memory root (so no name can leave
it) and, in PostgreSQL, its schema
(:func:`~cleo_rules.retrieval.pg_schema_names.schema_name`). Everything that checks
or describes a tenant name uses this module; nothing else spells the
pattern out. It imports nothing of the project, so the service's settings
can use it without loading the memory store.
"""

from __future__ import annotations

import re

__all__ = ["TENANT_PATTERN", "TENANT_SYNTAX", "not_a_tenant", "valid_tenant"]

TENANT_SYNTAX = "[a-z0-9][a-z0-9_-]{0,62}"
"""A tenant's name as a regular expression (matched whole), and as messages and the OpenAPI document show it."""

TENANT_PATTERN = re.compile(TENANT_SYNTAX)
""":data:`TENANT_SYNTAX`, compiled: ``TENANT_PATTERN.fullmatch(name)``."""


def valid_tenant(name) -> bool:
    """Whether ``name`` is a well-formed tenant name (a string matching :data:`TENANT_SYNTAX` whole)."""
    return isinstance(name, str) and TENANT_PATTERN.fullmatch(name) is not None


def not_a_tenant(name) -> str:
    """The message for a malformed tenant name: the name (cut to 80 characters) and the syntax."""
    return f"{str(name)[:80]!r} is not a tenant name: {TENANT_SYNTAX}"
