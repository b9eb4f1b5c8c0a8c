"""The default embedding backend: an ONNX export of all-MiniLM-L6-v2 run by ONNX Runtime.

The model (``model.onnx``, int8, about 23 MB) and its tokenizer
(``tokenizer.json``) ship in a package of their own, ``cleo-rules-minilm``
(``cleo_rules_minilm/all-MiniLM-L6-v2``, built from ``models/cleo-rules-minilm/``
in the repository), which the ``[memory]`` extra depends on at its exact
version; the core wheel carries no model. :func:`bundled_model_dir` finds the
files through that package (without it: :class:`~cleo_rules.errors.MissingExtra`
naming the pip command); nothing is ever fetched. Both files are checked
against the sha256 digests below when the model loads: a damaged or replaced
file is a :class:`~cleo_rules.errors.StoreError`, never a silently different vector.
``scripts/export_onnx.py`` writes the same files from the reference model
(the ``[reference]`` extra), byte for byte, and records the versions it used.

Texts are tokenised by the ``tokenizers`` package (truncated to 256 tokens,
as sentence-transformers does for this model) and **encoded one at a time**:
int8 dynamic quantisation scales each activation tensor by its own range,
so a text's vector would otherwise depend on the texts padded beside it in a
batch (up to 0.04 in cosine). One at a time, a text always gets the same
vector, and it is faster on CPU too (no padding). The graph returns the
mean-pooled token vectors; they are normalised here.

Importing this module imports neither onnxruntime nor tokenizers: :func:`load`
does, once per model and thread count.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MissingExtra, StoreError

__all__ = ["MODEL_FILE", "MODEL_PACKAGE", "MODEL_PACKAGE_VERSION", "MODEL_SHA256", "TOKENIZER_FILE",
           "TOKENIZER_SHA256", "OnnxModel", "bundled_model_dir", "is_onnx_dir", "load", "runtime_version"]

BUNDLED_MODEL = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "cleo-rules-minilm"
"""The distribution that ships the model; the ``[memory]`` extra depends on it at :data:`MODEL_PACKAGE_VERSION`."""
MODEL_PACKAGE_VERSION = "0.1.0"
MODEL_MODULE = "cleo_rules_minilm"
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
MODEL_SHA256 = "bb8e7acf20d0bc2c45c5afa867b93b921748eb86cfa3500ee03d8e07c6d95260"
"""The shipped ``model.onnx`` (int8, per-channel dynamic quantisation; see ``export.json`` beside it)."""
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
"""The shipped ``tokenizer.json`` (the reference model's own)."""
MAX_TOKENS = 256
"""Texts are truncated to this many tokens, [CLS] and [SEP] included (sentence-transformers' max_seq_length)."""


REINSTALL = f"pip install --force-reinstall {MODEL_PACKAGE}=={MODEL_PACKAGE_VERSION}"


def bundled_model_dir() -> Path:
    """The directory of the shipped ONNX model and its tokenizer, in the ``cleo-rules-minilm`` package.

    Without that package, :class:`MissingExtra` with the pip command that
    installs it (and, in a source checkout, the editable install of the
    checkout's own ``models/cleo-rules-minilm``).
    """
    try:
        root = Path(str(resources.files(MODEL_MODULE)))
    except ModuleNotFoundError as exc:
        if exc.name != MODEL_MODULE:
            raise
        raise MissingExtra(message=_missing_message()) from None
    directory = root / BUNDLED_MODEL
    if not directory.is_dir():
        raise StoreError(f"the embedding model package {MODEL_PACKAGE} has no {BUNDLED_MODEL}/ ({directory}); "
                         f"reinstall it: {REINSTALL}")
    return directory


def _missing_message() -> str:
    from ..resources import checkout_root

    message = (f"the embedding model is not installed (the {MODEL_PACKAGE} package, which the [memory] extra "
               "brings): pip install 'cleo-rules[memory]'")
    root = checkout_root()
    if root is not None and (root / "models" / MODEL_PACKAGE / "pyproject.toml").is_file():
        message += f"; in this checkout: pip install -e {root / 'models' / MODEL_PACKAGE} (make setup does)"
    return message


def is_onnx_dir(path: Path) -> bool:
    """Whether ``path`` holds an ONNX export this backend reads (``model.onnx`` and ``tokenizer.json``)."""
    return (path / MODEL_FILE).is_file() and (path / TOKENIZER_FILE).is_file()


def runtime_version() -> str | None:
    """ONNX Runtime's version as installed (read from its metadata: nothing is imported), None when missing."""
    try:
        return metadata.version("onnxruntime")
    except metadata.PackageNotFoundError:
        return None


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise StoreError(f"cannot read embedding model file {path}: {exc.strerror or exc}") from None
    return digest.hexdigest()


@dataclass
class OnnxModel:
    """A loaded ONNX model: the session, its tokenizer, the vector length and the model file's sha256."""

    session: Any
    tokenizer: Any
    dim: int
    sha256: str
    threads: int

    def encode(self, texts: list[str]) -> np.ndarray:
        """``texts`` as unit-length float32 rows, each text encoded alone (see the module's note)."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            tokens = self.tokenizer.encode(text)
            feed = {"input_ids": np.asarray([tokens.ids], dtype=np.int64),
                    "attention_mask": np.asarray([tokens.attention_mask], dtype=np.int64)}
            vector = self.session.run(None, feed)[0][0]
            norm = float(np.linalg.norm(vector))
            out[row] = vector / (norm if norm > 1e-12 else 1.0)
        return out


def _checked(path: Path, expected: str | None, what: str) -> str:
    found = sha256_file(path)
    if expected is not None and found != expected:
        raise StoreError(f"the bundled embedding {what} {path} is damaged or was replaced: its sha256 is "
                         f"{found[:16]}..., not the {expected[:16]}... this cleo-rules was built with; "
                         f"reinstall the model: {REINSTALL}")
    return found


def load(directory: Path, *, threads: int, bundled: bool) -> OnnxModel:
    """Load the model in ``directory`` with ``threads`` intra-op (and inter-op) threads.

    The bundled model's files must match :data:`MODEL_SHA256` and
    :data:`TOKENIZER_SHA256`; another directory's model is hashed for the
    store's records only.
    """
    model_file, tokenizer_file = directory / MODEL_FILE, directory / TOKENIZER_FILE
    digest = _checked(model_file, MODEL_SHA256 if bundled else None, "model")
    _checked(tokenizer_file, TOKENIZER_SHA256 if bundled else None, "tokenizer")
    import onnxruntime as ort
    from tokenizers import Tokenizer

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = threads
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3  # errors only
    try:
        session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
    except Exception as exc:  # onnxruntime and tokenizers raise their own types
        raise StoreError(f"cannot load embedding model from {directory}: {exc}") from exc
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.no_padding()
    names = [i.name for i in session.get_inputs()]
    if names != ["input_ids", "attention_mask"]:
        raise StoreError(f"the embedding model {model_file} takes inputs {names}, not input_ids and attention_mask "
                         "(export it with scripts/export_onnx.py)")
    shape = session.get_outputs()[0].shape
    if len(shape) != 2 or not isinstance(shape[1], int):
        raise StoreError(f"the embedding model {model_file} returns shape {shape}, not (batch, dimensions)")
    return OnnxModel(session, tokenizer, int(shape[1]), digest, threads)
