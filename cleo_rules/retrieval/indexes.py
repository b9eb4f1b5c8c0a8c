"""Deprecated: this module is :mod:`cleo_rules.retrieval.index_set` (the store's hnswlib indexes, kept in line
with SQLite).

Every name it had is still here, with a :class:`DeprecationWarning`.
"""

from . import index_set
from ._moved import forward

__getattr__ = forward(__name__, index_set)
