"""What made a store's vectors, recorded in the store, and the check that a new embedder agrees.

Both stores keep, beside ``model`` and ``dim``, four ``meta`` rows written
with the first vectors (and again by a re-embed):

==================== =====================================================
``embed_backend``    ``onnx``, ``torch`` (the reference), or ``custom``
``embed_model_sha256`` the sha256 of the model file the vectors came from
``embed_runtime``    ``onnxruntime 1.32.0``, ``torch 2.13.0+cpu``, ...
``embed_probe``      the vector of :data:`PROBE_TEXT` (float32, base64)
==================== =====================================================

A store opened with an embedder of another backend says so at once
(:class:`EmbeddingNotice`, a warning; nothing is loaded). Before its first
search or write, the embedder encodes the probe text: when its vector and
the recorded one agree to a cosine of :data:`PROBE_MIN_COSINE`, the store is
used as it is; otherwise it is refused (:class:`~cleo_rules.errors.StoreError`
E309) with how to re-embed it. The same check runs, silently, when only the
model file or the runtime's version differ. A store written before these rows
existed, whose model is the bundled one, was made by the torch backend: its
first stored piece stands in for the probe.
"""

from __future__ import annotations

import base64
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import StoreError

__all__ = ["META_KEYS", "PROBE_MIN_COSINE", "PROBE_TEXT", "EmbeddingCheck", "EmbeddingNotice", "Recorded",
           "embedder_provenance", "meta_rows"]

PROBE_TEXT = "Which van insurer did we choose last spring, and what excess did the policy carry?"
"""The fixed text whose vector a store records, to compare a later embedder's with."""

PROBE_MIN_COSINE = 0.999
"""How closely a new embedder's probe vector must agree with the recorded one for the store to be used as it is."""

META_KEYS = ("embed_backend", "embed_model_sha256", "embed_runtime", "embed_probe")

LEGACY_MODEL = "all-MiniLM-L6-v2"  # the only model a store recorded before backends were: torch's


class EmbeddingNotice(UserWarning):
    """A store was built by another embedding backend than the one now embedding (its vectors are checked)."""


def embedder_provenance(embedder) -> dict:
    """``{"backend", "model_sha256", "runtime"}`` of ``embedder`` (an embedder that does not say is ``custom``)."""
    get = getattr(embedder, "provenance", None)
    found = get() if callable(get) else None
    if isinstance(found, dict):
        return {"backend": found.get("backend") or "custom", "model_sha256": found.get("model_sha256"),
                "runtime": found.get("runtime")}
    return {"backend": "custom", "model_sha256": None, "runtime": None}


def embedder_backend(embedder) -> str:
    """The backend ``embedder`` names without loading anything (``custom`` when it names none)."""
    return getattr(embedder, "backend", None) or "custom"


def encode_probe(vector: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(vector, dtype="<f4").tobytes()).decode("ascii")


def decode_probe(text: str | None) -> np.ndarray | None:
    if not text:
        return None
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        return None
    if not raw or len(raw) % 4:
        return None
    vector = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    return vector if np.all(np.isfinite(vector)) else None


def meta_rows(provenance: dict, probe: np.ndarray) -> list[tuple[str, str | None]]:
    """The ``meta`` rows that record ``provenance`` and the probe's vector."""
    return [("embed_backend", provenance["backend"]), ("embed_model_sha256", provenance.get("model_sha256")),
            ("embed_runtime", provenance.get("runtime")), ("embed_probe", encode_probe(probe))]


def probe_vector(embedder) -> np.ndarray:
    """The probe text's vector under ``embedder``."""
    vectors = np.asarray(embedder.encode([PROBE_TEXT]), dtype=np.float32)
    return vectors[0]


def _short(sha: str | None) -> str:
    return f"sha256 {sha[:12]}" if sha else "sha256 unknown"


@dataclass(frozen=True)
class Recorded:
    """What a store records of the embedder that made its vectors."""

    backend: str | None
    model_sha256: str | None
    runtime: str | None
    probe: np.ndarray | None
    legacy: bool = False  # written before backends were recorded (assumed torch)
    model: str | None = None

    @classmethod
    def from_meta(cls, meta: dict) -> "Recorded":
        backend, model = meta.get("embed_backend") or None, meta.get("model") or None
        if backend is None and model == LEGACY_MODEL:
            return cls("torch", None, None, None, legacy=True, model=model)
        return cls(backend, meta.get("embed_model_sha256") or None, meta.get("embed_runtime") or None,
                   decode_probe(meta.get("embed_probe")), model=model)

    def describe(self) -> dict | None:
        if self.backend is None:
            return None
        return {"backend": self.backend, "model_sha256": self.model_sha256, "runtime": self.runtime,
                "recorded": not self.legacy}

    def words(self) -> str:
        if self.legacy:
            return "the torch backend (recorded before backends were: sentence-transformers)"
        return f"the {self.backend} backend ({_short(self.model_sha256)}, {self.runtime or 'runtime unknown'})"

    def same_as(self, provenance: dict) -> bool:
        return (not self.legacy and self.backend == provenance["backend"]
                and self.model_sha256 == provenance.get("model_sha256") and self.runtime == provenance.get("runtime"))


_REOPEN = {
    "torch": "pip install 'cleo-rules[reference]' and set CLEO_EMBED_BACKEND=torch (Embedder(backend='torch'))",
    "onnx": "set CLEO_EMBED_BACKEND=onnx (Embedder(backend='onnx'))",
}


class EmbeddingCheck:
    """One open store's view of what made its vectors, and the check of its embedder against it."""

    def __init__(self, where, recorded: Recorded, db: str | None = None):
        self.where = where
        self.recorded = recorded
        self.db = db if db is not None else str(where)  # the store as `--db` names it (no password)
        self._agreed: object | None = None  # the embedder that passed the check

    def at_open(self, embedder) -> None:
        """Say (an :class:`EmbeddingNotice`) when another backend built the store; loads nothing.

        Nothing is said of a store of another model: the embedder is refused
        for that before any encode (``check_model``).
        """
        backend = embedder_backend(embedder)
        name = getattr(embedder, "model_name", None)
        if (self.recorded.backend is not None and self.recorded.backend != backend
                and (self.recorded.model is None or name is None or name == self.recorded.model)):
            warnings.warn(
                f"memory store {self.where} was built by {self.recorded.words()}; this process embeds with the "
                f"{backend} backend. Before the first search or write both embed a probe text: the store is used "
                f"as it is when they agree (cosine >= {PROBE_MIN_COSINE}), and refused otherwise",
                EmbeddingNotice, stacklevel=3)

    def before_encode(self, embedder, sample: Callable[[], tuple[str, np.ndarray] | None]) -> None:
        """Refuse ``embedder`` (E309) when its vectors disagree with the store's; pass once it agreed.

        ``sample`` gives a stored piece's text and vector, for a store that
        recorded no probe (None when it holds none).
        """
        if self._agreed is embedder or self.recorded.backend is None:
            return
        provenance = embedder_provenance(embedder)
        if self.recorded.same_as(provenance):
            self._agreed = embedder
            return
        pair = (None, self.recorded.probe) if self.recorded.probe is not None else sample()
        if pair is None or pair[1] is None:
            self._agreed = embedder
            return
        text, reference = pair
        mine = np.asarray(embedder.encode([text if text is not None else PROBE_TEXT]), dtype=np.float32)[0]
        if mine.shape != reference.shape:
            cosine = float("nan")
        else:
            norms = float(np.linalg.norm(mine) * np.linalg.norm(reference))
            cosine = float(mine @ reference) / norms if norms else 0.0
        if cosine >= PROBE_MIN_COSINE:
            self._agreed = embedder
            return
        how = _REOPEN.get(self.recorded.backend or "", "open it with the embedder that built it")
        raise StoreError(
            f"memory store {self.where} holds vectors made by {self.recorded.words()}; the {provenance['backend']} "
            f"backend ({_short(provenance.get('model_sha256'))}, {provenance.get('runtime') or 'runtime unknown'}) "
            f"embeds the {'probe text' if text is None else 'first stored piece'} to cosine {cosine:.4f}, below "
            f"{PROBE_MIN_COSINE}, so its queries would not match the stored vectors. Re-embed the store with this "
            f"backend: `cleo-rules memory rebuild --reembed --db {self.db}` (rebuild(reembed=True)); or, to keep "
            f"its vectors, {how}", code="E309")
