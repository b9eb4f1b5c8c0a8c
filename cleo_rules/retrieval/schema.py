"""Deprecated: this module is split in two, :mod:`cleo_rules.retrieval.tables` (the sources and their tables,
for both backends) and :mod:`cleo_rules.retrieval.sqlite_schema` (the embedded store's SQLite database).

Every name it had is still here, with a :class:`DeprecationWarning`.
"""

from . import sqlite_schema, tables
from ._moved import forward

__getattr__ = forward(__name__, tables, sqlite_schema, renamed={"file_kind": "describe_mode"})
