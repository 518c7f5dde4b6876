"""The ONNX Runtime encoder matches the plain sentence-transformers model."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ragjudge.embedding import load_encoder
from ragjudge.retrieval.onnx_encoder import EXPORT_VERSION, OnnxEncoder
from ragjudge.retrieval.tokens import encode_tokens

TEXTS = [
    "Vitamin D deficiency raises fracture risk.",
    "A much longer sentence about the effect of regular exercise on blood pressure in adults.",
    "Qubits.",
]


def test_onnx_encoder_matches_plain_and_keeps_input_order(_isolated_home: Path) -> None:
    onnx = OnnxEncoder()
    assert (_isolated_home / "models" / f"all-MiniLM-L6-v2.{EXPORT_VERSION}.onnx").exists()
    plain = load_encoder().encode(TEXTS)
    fast = onnx.encode(TEXTS)
    assert fast.shape == plain.shape
    assert np.allclose(fast, plain, atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(fast, axis=1), 1.0, rtol=1e-5)
    toks_fast = onnx.encode_tokens(TEXTS)
    toks_plain = encode_tokens(load_encoder(), TEXTS)
    word_pieces = [len(onnx.tokenizer.tokenize(t)) for t in TEXTS]
    assert [len(t) for t in toks_fast] == [len(t) for t in toks_plain] == word_pieces
    assert all(np.allclose(a, b, atol=1e-3) for a, b in zip(toks_fast, toks_plain, strict=True))
    assert OnnxEncoder(quantize=False).name == "all-MiniLM-L6-v2-onnx"
