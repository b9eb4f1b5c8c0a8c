"""Deprecated: this module is :mod:`cleo_rules.retrieval.hnsw_file` (one hnswlib index file and its sidecar).

Every name it had is still here, with a :class:`DeprecationWarning`.
"""

from . import hnsw_file
from ._moved import forward

__getattr__ = forward(__name__, hnsw_file)
