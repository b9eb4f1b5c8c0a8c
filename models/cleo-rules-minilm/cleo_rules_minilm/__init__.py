"""all-MiniLM-L6-v2 exported to ONNX (int8) with its tokenizer: the embedding model of ``cleo-rules[memory]``.

The files are in ``all-MiniLM-L6-v2/`` beside this module (``model.onnx``,
``tokenizer.json`` and ``export.json``, the record of how they were made).
cleo-rules finds them through this package and checks their sha256 when the
model loads; this package itself imports nothing.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["MODEL_NAME", "model_dir"]

MODEL_NAME = "all-MiniLM-L6-v2"


def model_dir() -> Path:
    """The directory of the model's files."""
    return Path(__file__).resolve().parent / MODEL_NAME
