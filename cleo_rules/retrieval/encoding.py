"""Embedding for either store: the model check, the lazy model load, and a checked encode."""

from __future__ import annotations

import time

import numpy as np

from ..errors import StoreError

__all__ = ["check_model", "describe_embedder", "encode", "load_model"]


def check_model(embedder, stored: str | None, location) -> None:
    """Refuse ``embedder`` when the store at ``location`` holds vectors of another model (``stored``)."""
    name = getattr(embedder, "model_name", None)
    if stored is not None and name is not None and stored != name:
        raise StoreError(
            f"memory store {location} holds vectors from model {stored!r}, but the embedder is {name!r}; "
            "open it with the same model or run `cleo-rules memory rebuild --reembed`"
        )


def load_model(embedder) -> float:
    """Load the embedding model if it is not loaded yet; return the seconds spent."""
    if getattr(embedder, "loaded", True):
        return 0.0
    start = time.perf_counter()
    embedder.dim  # loads the weights
    return time.perf_counter() - start


def encode(embedder, texts: list[str]) -> np.ndarray:
    """``texts`` as a C-contiguous float32 matrix, one row per text, or a :class:`StoreError`."""
    vectors = np.ascontiguousarray(embedder.encode(texts), dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise StoreError(f"embedder returned an array of shape {vectors.shape} for {len(texts)} texts")
    return vectors


def describe_embedder(embedder) -> dict:
    """What ``embedder`` is (its ``describe()``, or its backend and model name), without loading it."""
    describe = getattr(embedder, "describe", None)
    found = describe() if callable(describe) else None
    if isinstance(found, dict):
        return found
    return {"backend": getattr(embedder, "backend", None) or "custom", "model": getattr(embedder, "model_name", None)}
