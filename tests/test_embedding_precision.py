"""The offline judges' encoder precision: the shipped int8 ONNX model's and bfloat16 vectors agree
with fp32 ones, the choice is
read from RAGJUDGE_JUDGE_PRECISION (a bad value is one error line, exit 2), and vectors of
different precisions never share a cache file."""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from ragjudge.embedding import (
    INT8_ONNX_FILE,
    PRECISION_ENV,
    Bf16Encoder,
    OnnxEncoder,
    file_digest,
    int8_encoder_name,
    judge_encoder_name,
    judge_precision,
    load_encoder,
    load_onnx_encoder,
    precision_choice,
)
from ragjudge.errors import ConfigError
from ragjudge.judges.offline import OfflineFaithfulnessJudge
from ragjudge.judges.offline.embed import EmbeddingCache
from tests.test_exit_codes import run_cli

TEXTS = [
    "The lighthouse at Greyhaven was first lit in 1811.",
    "Its keeper, Ada Lorne, kept a log of every ship that passed.",
    "Bees dance to tell the hive where the flowers are.",
    "Rollo",
]


def test_bf16_vectors_agree_with_fp32() -> None:
    fp32 = load_encoder()
    bf16 = Bf16Encoder(fp32)
    a, b = fp32.encode(TEXTS), bf16.encode(TEXTS)
    assert b.dtype == np.float32 and b.shape == a.shape
    assert np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-3)
    assert float(np.min(np.sum(a * b, axis=1))) > 0.999
    # the same ranking of neighbours: the light-keeper sentence is nearest the lighthouse one
    assert int(np.argmax(b[1:] @ b[0])) == int(np.argmax(a[1:] @ a[0])) == 0
    assert bf16.name == fp32.name + "+bf16"


def test_int8_onnx_vectors_agree_with_fp32() -> None:
    """The shipped ONNX encoder (int8 weights) gives vectors near the fp32 ones and the same
    nearest neighbour, for a one-word text and one past the 256 word pieces the model reads
    alike; its name carries the file's digest."""
    long = "The keeper climbed the tower stairs every night. "
    texts = [*TEXTS, long * 40, long * 60, ""]
    a = load_encoder().encode(texts)
    onnx = load_onnx_encoder()
    b = onnx.encode(texts)
    assert b.dtype == np.float32 and b.shape == a.shape
    cosine = np.sum(a * b, axis=1)
    assert float(cosine.min()) > 0.97 and float(cosine.mean()) > 0.985
    assert np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    assert int(np.argmax(b[1:4] @ b[0])) == int(np.argmax(a[1:4] @ a[0])) == 0
    assert np.array_equal(b[4], b[5])  # both cut at 256 word pieces
    assert onnx.encode([]).shape == (0, 384)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the torch encoder's empty call asks no renamed method
        assert load_encoder().encode([]).shape == (0, 384)
    # int8 activations are quantised per run: a vector must not depend on what shares its batch
    alone = np.stack([onnx.encode([t])[0] for t in texts])
    assert np.array_equal(alone, b)
    # ... nor on how many threads share a call's texts (the shipped encoder uses two workers)
    one = OnnxEncoder(INT8_ONNX_FILE, "one-worker", batch_size=1)
    three = OnnxEncoder(INT8_ONNX_FILE, "three-workers", batch_size=1, workers=3)
    assert onnx.workers == 2 or os.cpu_count() == 1
    assert np.array_equal(one.encode(texts), b) and np.array_equal(three.encode(texts), b)
    tokens = three.encode_tokens(texts)
    assert all(np.array_equal(x, y) for x, y in zip(tokens, one.encode_tokens(texts), strict=True))
    assert [len(t) for t in tokens[:4]] == [len(one.encode_tokens([t])[0]) for t in texts[:4]]
    digest = hashlib.sha256(INT8_ONNX_FILE.read_bytes()).hexdigest()[:8]
    assert onnx.name == int8_encoder_name() == f"all-MiniLM-L6-v2+int8.{digest}"
    assert file_digest(INT8_ONNX_FILE) == digest
    assert INT8_ONNX_FILE.stat().st_size < 25e6


def test_precision_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PRECISION_ENV, raising=False)
    assert precision_choice() == "auto"
    assert judge_precision() == "onnx" and judge_encoder_name() == int8_encoder_name()
    monkeypatch.setenv(PRECISION_ENV, " FP32 ")
    assert judge_precision() == "fp32" and judge_encoder_name() == "all-MiniLM-L6-v2"
    monkeypatch.setenv(PRECISION_ENV, "bf16")
    assert judge_precision() == "bf16" and judge_encoder_name() == "all-MiniLM-L6-v2+bf16"
    monkeypatch.setenv(PRECISION_ENV, "fp16")
    with pytest.raises(ConfigError, match=r"RAGJUDGE_JUDGE_PRECISION='fp16'"):
        judge_precision()
    with pytest.raises(ConfigError, match="expected auto, onnx, bf16, fp32"):
        OfflineFaithfulnessJudge()  # when the judges are made, not at their first item


def test_a_bad_precision_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"question": "q?", "answer": "a b c.", "contexts": ["a b c."]}))
    monkeypatch.setenv(PRECISION_ENV, "half")
    code, text = run_cli(["judge", "--input", str(rows), "--backend", "offline"], capsys)
    assert code == 2 and "Traceback" not in text
    assert text.strip().splitlines()[-1].startswith("error:") and PRECISION_ENV in text


class NamedEncoder:
    """Unit vectors that depend on the encoder's name: two precisions of one model."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: list[str] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.seen += list(texts)
        seed = [*self.name.encode()]
        v = np.random.default_rng(seed).standard_normal((len(texts), 8)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_precisions_keep_separate_vector_files(_isolated_home: Path) -> None:
    plain, bf16 = NamedEncoder("m"), NamedEncoder("m+bf16")
    a = EmbeddingCache(plain, persist=True).vectors(TEXTS)
    b = EmbeddingCache(bf16, persist=True).vectors(TEXTS)
    assert bf16.seen == TEXTS  # nothing read from the other precision's file
    assert not np.allclose(a, b)
    again = NamedEncoder("m+bf16")
    assert np.array_equal(EmbeddingCache(again, persist=True).vectors(TEXTS), b)
    assert again.seen == []
    names = sorted(p.name for p in (_isolated_home / "embeddings").iterdir())
    assert {"m.sentences.sqlite", "m_bf16.sentences.sqlite"} <= set(names)  # "+" made safe


def test_the_judges_version_names_the_encoder_precision(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Results of the two precisions differ by about 1e-3, so they never share a cache key."""
    plain = OfflineFaithfulnessJudge(cache=EmbeddingCache(NamedEncoder("m")))
    bf16 = OfflineFaithfulnessJudge(cache=EmbeddingCache(NamedEncoder("m+bf16")))
    assert ".bf16+" in bf16.version and ".bf16" not in plain.version
    assert bf16.version.replace(".bf16+", "+") == plain.version
    monkeypatch.setenv(PRECISION_ENV, "bf16")  # the shared cache asks the environment
    assert ".bf16+" in OfflineFaithfulnessJudge(cache=EmbeddingCache()).version
    monkeypatch.setenv(PRECISION_ENV, "auto")  # the shipped file's digest is in the version
    digest = file_digest(INT8_ONNX_FILE)
    assert f".int8.{digest}+" in OfflineFaithfulnessJudge(cache=EmbeddingCache()).version
    monkeypatch.setenv(PRECISION_ENV, "fp32")
    assert ".bf16" not in OfflineFaithfulnessJudge(cache=EmbeddingCache()).version
