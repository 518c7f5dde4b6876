"""The ONNX Runtime encoders (``ragjudge.embedding.OnnxEncoder``) against the plain
sentence-transformers model: retrieval's ``onnx`` (float32, exported at first use) gives its
vectors and token vectors; ``onnx-int8`` is the shipped file the offline judges use, with no
export."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ragjudge.embedding import (
    ONNX_EXPORT_VERSION,
    _onnx_encoder,
    load_encoder,
    load_judge_encoder,
)
from ragjudge.retrieval.dense import resolve_encoder
from ragjudge.retrieval.tokens import encode_tokens

TEXTS = [
    "Vitamin D deficiency raises fracture risk.",
    "A much longer sentence about the effect of regular exercise on blood pressure in adults.",
    "Qubits.",
]


def test_onnx_fp32_matches_plain_and_keeps_input_order(_isolated_home: Path) -> None:
    _onnx_encoder.cache_clear()  # exported into this test's home
    onnx = resolve_encoder("onnx")
    assert (_isolated_home / "models" / f"all-MiniLM-L6-v2.{ONNX_EXPORT_VERSION}.onnx").exists()
    assert onnx.name == "all-MiniLM-L6-v2-onnx"
    plain = load_encoder().encode(TEXTS)
    fast = onnx.encode(TEXTS)
    assert fast.shape == plain.shape
    assert np.allclose(fast, plain, atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(fast, axis=1), 1.0, rtol=1e-5)
    toks_fast = onnx.encode_tokens(TEXTS)
    toks_plain = encode_tokens(load_encoder(), TEXTS)
    word_pieces = [len(load_encoder().model.tokenizer.tokenize(t)) for t in TEXTS]
    assert [len(t) for t in toks_fast] == [len(t) for t in toks_plain] == word_pieces
    assert all(np.allclose(a, b, atol=1e-3) for a, b in zip(toks_fast, toks_plain, strict=True))


def test_onnx_int8_is_the_judges_shipped_encoder(_isolated_home: Path) -> None:
    int8 = resolve_encoder("onnx-int8")
    assert int8 is load_judge_encoder()  # one session for retrieval and the judges
    assert not (_isolated_home / "models").exists()  # nothing exported
    plain = load_encoder().encode(TEXTS)
    vecs = int8.encode(TEXTS)
    assert float(np.min(np.sum(plain * vecs, axis=1))) > 0.97
    toks, toks_plain = int8.encode_tokens(TEXTS), encode_tokens(load_encoder(), TEXTS)
    assert [len(t) for t in toks] == [len(t) for t in toks_plain]
    assert all(
        float(np.sum(a * b, axis=1).mean()) > 0.95 for a, b in zip(toks, toks_plain, strict=True)
    )
