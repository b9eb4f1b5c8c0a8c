"""A stand-in for the embedding model, for the tests that need some vectors but not the model's."""

from __future__ import annotations


class ToyEmbedder:
    """A stand-in for the model: a text's vector is its bag of words, hashed into 64 dimensions.

    Deterministic and instant, so store tests that only need *some* vectors
    (sharing words makes texts similar) run without loading the model.
    """

    model_name = "toy-bag-of-words-64"
    loaded = True
    dim = 64

    def encode(self, texts):
        import hashlib
        import re

        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, hashlib.blake2b(word.encode(), digest_size=2).digest()[0] % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)
