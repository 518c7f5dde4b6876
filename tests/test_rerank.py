"""Rerankers: late interaction (MaxSim), cross-encoder loading rules, LLM listwise over HTTP
against the local test server, and the reranker score cache."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from ragjudge.errors import ConfigError, DataError
from ragjudge.retrieval import Pipeline, build_reranker, build_retriever
from ragjudge.retrieval.base import make_ranking
from ragjudge.retrieval.rerank.late_interaction import maxsim
from ragjudge.retrieval.rerank.llm import parse_permutation, window_starts
from ragjudge.schema import Document, Ranking
from ragjudge.testing.faults import FaultPlan
from ragjudge.testing.server import FakeLLMServer

DOCS = [
    Document(id="mat", text="The cat sat on the mat."),
    Document(id="bark", text="Dogs bark loudly at the mail carrier."),
    Document(id="rug", text="A small kitten slept on the woven carpet."),
    Document(id="stocks", text="Stock markets fell sharply on Monday."),
]


def first_stage(ids: list[str]) -> Ranking:
    return make_ranking("q", [(d, float(len(ids) - i)) for i, d in enumerate(ids)], len(ids))


def test_maxsim_formula() -> None:
    q = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    d = np.array([[1.0, 0.0], [0.6, 0.8]], dtype=np.float32)
    assert maxsim(q, d) == pytest.approx((1.0 + 0.8) / 2)
    assert maxsim(q, np.zeros((0, 2), dtype=np.float32)) == 0.0


def test_late_interaction_reorders_and_caches() -> None:
    li = build_reranker("late-interaction")
    li.index(DOCS)  # type: ignore[attr-defined]
    ranking = first_stage(["stocks", "bark", "rug", "mat"])
    out = li.rerank("a kitten sleeping on a carpet", ranking, 2)
    assert out.doc_ids[0] == "rug"
    assert len(out.docs) == 2 and set(out.doc_ids) <= set(ranking.doc_ids)
    encoded = li.tokens.encoded  # type: ignore[attr-defined]
    assert encoded == 4
    again = build_reranker("late-interaction")
    again.index(DOCS)  # type: ignore[attr-defined]
    same = again.rerank("a kitten sleeping on a carpet", ranking, 2)
    assert same == out
    assert again.cache.hits == 4 and again.cache.misses == 0  # type: ignore[attr-defined]
    assert again.tokens.encoded == 0  # type: ignore[attr-defined]
    with pytest.raises(DataError, match="not in the indexed corpus"):
        li.rerank("x", first_stage(["nowhere"]), 1)


def test_late_interaction_in_a_three_stage_pipeline() -> None:
    li = build_reranker("late-interaction", blend=0.5)
    p = Pipeline(build_retriever("bm25"), stages=[(None, 3), (li, 2)])
    p.index(DOCS)
    out = p.retrieve({"q": "the cat on the mat"}, 3)["q"]
    assert out.doc_ids[0] == "mat" and len(out.docs) == 3
    assert "late-interaction" in p.name and "prune@3" in p.name


def test_cross_encoder_missing_path_is_config_error_without_download(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(ConfigError, match="does not exist"):
        build_reranker(f"cross-encoder:{missing}")
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    with pytest.raises(ConfigError, match="cannot load cross-encoder"):
        build_reranker("cross-encoder:nobody/not-a-cached-model")
    with pytest.raises(ConfigError, match="needs a model"):
        build_reranker("cross-encoder")


def test_cross_encoder_from_local_folder_scores_and_caches() -> None:
    from ragjudge.embedding import bundled_model_path

    ce = build_reranker(f"cross-encoder:{bundled_model_path()}")
    ce.index(DOCS)  # type: ignore[attr-defined]
    ranking = first_stage([d.id for d in DOCS])
    out = ce.rerank("cat", ranking, 4)
    assert sorted(out.doc_ids) == sorted(ranking.doc_ids)
    again = ce.rerank("cat", ranking, 4)
    assert again == out and ce.cache.hits == 4  # type: ignore[attr-defined]


def test_parse_permutation_and_windows() -> None:
    assert parse_permutation("[3] > [1] > [9] > [3]", 4) == [2, 0, 1, 3]
    assert parse_permutation("no ids at all", 3) == [0, 1, 2]
    assert window_starts(10, 4, 2) == [(6, 10), (4, 8), (2, 6), (0, 4)]
    assert window_starts(3, 4, 2) == [(0, 3)]
    with pytest.raises(ConfigError, match="window"):
        build_reranker("llm", window=4, step=4)


LLM_DOCS = [
    Document(id=f"n{i}", text=f"Filler passage number {i} about nothing in particular.")
    for i in range(6)
] + [Document(id="hit", text="Vitamin D deficiency raises fracture risk in older adults.")]


def test_llm_listwise_over_http_moves_relevant_to_top(llm_env: FakeLLMServer) -> None:
    rr = build_reranker("llm", window=3, step=2)
    p = Pipeline(build_retriever("bm25"), stages=[(rr, 7)])
    p.index(LLM_DOCS)
    query = {"q": "does vitamin D deficiency raise fracture risk"}
    # put the relevant passage last so it has to climb through every window
    order = [d.id for d in LLM_DOCS if d.id != "hit"] + ["hit"]
    out = rr.rerank(query["q"], first_stage(order), 3)
    assert out.doc_ids[0] == "hit"
    calls = len(llm_env.chat_requests())
    assert calls == len(window_starts(7, 3, 2)) == 3
    assert all(r["template"] == "rerank/listwise@v1" for r in llm_env.chat_requests())
    again = rr.rerank(query["q"], first_stage(order), 3)
    assert again == out and len(llm_env.chat_requests()) == calls  # cached: no new call
    assert p.retrieve(query, 2)["q"].doc_ids[0] == "hit"


def test_llm_listwise_failed_call_keeps_window_and_counts(llm_env: FakeLLMServer) -> None:
    llm_env.set_faults(FaultPlan(rates={"500": 1.0}))
    rr = build_reranker("llm", window=4, step=2)
    rr.index(LLM_DOCS)  # type: ignore[attr-defined]
    order = [d.id for d in LLM_DOCS]
    out = rr.rerank("vitamin D fracture", first_stage(order), 7)
    assert out.doc_ids == order
    assert rr.failed_calls == len(window_starts(7, 4, 2))  # type: ignore[attr-defined]


def test_llm_listwise_repairs_bad_ids(llm_env: FakeLLMServer) -> None:
    docs = [
        Document(id="a", text="BAD-IDS alpha"),
        Document(id="b", text="vitamin fracture risk"),
        Document(id="c", text="gamma"),
    ]
    rr = build_reranker("llm", window=3, step=1)
    rr.index(docs)  # type: ignore[attr-defined]
    out = rr.rerank("vitamin fracture", first_stage(["a", "c", "b"]), 3)
    assert out.doc_ids[0] == "b" and sorted(out.doc_ids) == ["a", "b", "c"]
