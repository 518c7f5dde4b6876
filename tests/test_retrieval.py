"""Retrievers, fusion, the LangChain adapter and the funnel pipeline (tiny corpora)."""

from __future__ import annotations

import itertools
import threading
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from ragjudge.errors import ConfigError, DataError
from ragjudge.io import DataWarning
from ragjudge.retrieval import Pipeline, build_reranker, build_retriever
from ragjudge.retrieval.base import make_ranking
from ragjudge.retrieval.fusion import minmax, rrf
from ragjudge.retrieval.hybrid import HybridRetriever
from ragjudge.schema import Document, Ranking, ScoredDoc

DOCS = [
    Document(id="cat", text="The cat sat on the mat and purred."),
    Document(id="dog", text="Dogs bark loudly at the mail carrier."),
    Document(id="rug", text="A feline rested on a woven rug."),
    Document(id="stocks", text="Stock markets fell sharply on Monday."),
    Document(id="qubit", text="Quantum computers store information in qubits."),
]


def assert_valid(r: Ranking, k: int) -> None:
    ids = r.doc_ids
    assert len(ids) == len(set(ids)) <= k
    scores = [d.score for d in r.docs]
    assert all(a > b for a, b in itertools.pairwise(scores))


def test_make_ranking_dedupes_and_orders_strictly() -> None:
    r = make_ranking("q", [("a", 1.0), ("b", 2.0), ("a", 3.0), ("c", 2.0), ("d", float("nan"))], 3)
    assert r.doc_ids == ["a", "b", "c"]
    assert_valid(r, 3)
    assert r.docs[0].score == 3.0 and r.docs[1].score == 2.0 and r.docs[2].score < 2.0


def test_bm25_ranks_lexical_match_and_handles_unknown_terms() -> None:
    r = build_retriever("bm25")
    r.index(DOCS)
    out = r.retrieve({"q1": "stock markets", "q2": "zebra xylophone"}, 3)
    assert out["q1"].doc_ids[0] == "stocks"
    assert_valid(out["q1"], 3)
    assert len(out["q2"].docs) == 3 and out["q2"].docs[0].score == 0.0


def test_k_larger_than_corpus_returns_all_with_counted_warning() -> None:
    r = build_retriever("bm25")
    r.index(DOCS)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = r.retrieve({"q": "cat"}, 50)
    assert sorted(out["q"].doc_ids) == sorted(d.id for d in DOCS)
    msgs = [str(w.message) for w in caught if issubclass(w.category, DataWarning)]
    assert len(msgs) == 1 and "k=50" in msgs[0] and "only 5" in msgs[0]


@pytest.mark.parametrize("kind", ["bm25", "dense", "hybrid"])
def test_empty_corpus_and_queries_are_errors(kind: str) -> None:
    r = build_retriever(kind)
    with pytest.raises(DataError, match="corpus is empty"):
        r.index([])
    r.index(DOCS[:2])
    with pytest.raises(DataError, match="no queries"):
        r.retrieve({}, 3)
    with pytest.raises(DataError, match="empty text"):
        r.retrieve({"q": "  "}, 3)
    with pytest.raises(ConfigError, match="positive integer"):
        r.retrieve({"q": "cat"}, 0)


def test_unknown_names_list_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="bm25, dense, hybrid"):
        build_retriever("splade")
    with pytest.raises(ConfigError, match=r"late-interaction.*cross-encoder.*llm"):
        build_reranker("colbert-v9")
    with pytest.raises(ConfigError, match="unknown fusion"):
        build_retriever("hybrid", fusion="max")


class CountingEncoder:
    """The bundled encoder, counting the texts it is asked to encode."""

    def __init__(self) -> None:
        from ragjudge.embedding import load_encoder

        self.inner = load_encoder()
        self.name = self.inner.name
        self.count = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.count += len(texts)
        return self.inner.encode(texts)


def test_dense_cache_encodes_only_new_or_edited_documents() -> None:
    enc = CountingEncoder()
    first = build_retriever("dense", encoder=enc)
    first.index(DOCS)
    assert enc.count == len(DOCS)
    got = first.retrieve({"q": "a kitten on a carpet"}, 2)["q"]
    assert got.doc_ids[0] in {"cat", "rug"}
    enc.count = 0
    second = build_retriever("dense", encoder=enc)
    second.index(DOCS)
    assert enc.count == 0
    assert second.retrieve({"q": "a kitten on a carpet"}, 2)["q"].doc_ids == got.doc_ids
    edited = [*DOCS[:4], DOCS[4].model_copy(update={"text": "Qubits are fragile."})]
    edited.append(Document(id="new", text="Bread rises with yeast."))
    enc.count = 0
    third = build_retriever("dense", encoder=enc)
    third.index(edited)
    assert enc.count == 2  # the edited and the new document, nothing else


class Fixed:
    """A retriever with a fixed answer, recording the thread it ran on."""

    def __init__(self, name: str, scored: list[tuple[str, float]]) -> None:
        self.name, self.scored = name, scored
        self.thread: str | None = None

    def index(self, documents: Sequence[Document]) -> None:
        del documents

    def retrieve(self, queries: Mapping[str, str], k: int) -> dict[str, Ranking]:
        self.thread = threading.current_thread().name
        return {q: make_ranking(q, self.scored, k) for q in queries}


def test_rrf_and_minmax_fusion_formulas() -> None:
    a = make_ranking("q", [("x", 3.0), ("y", 2.0), ("z", 1.0)], 3)
    b = make_ranking("q", [("y", 10.0), ("w", 5.0)], 2)
    fused = rrf([a, b], k=60)
    assert fused["y"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["w"] == pytest.approx(1 / 62)
    mm = minmax([a, b], weights=[1.0, 2.0])
    assert mm["x"] == pytest.approx(1.0) and mm["z"] == pytest.approx(0.0)
    assert mm["y"] == pytest.approx(0.5 + 2.0) and mm["w"] == pytest.approx(0.0)


def test_hybrid_runs_both_concurrently_and_dedupes() -> None:
    dense = Fixed("d", [("x", 0.9), ("y", 0.8), ("z", 0.1)])
    sparse = Fixed("s", [("y", 7.0), ("w", 3.0), ("x", 1.0)])
    h = HybridRetriever(dense, sparse, depth=3)
    h.index(DOCS)
    out = h.retrieve({"q": "anything"}, 4)["q"]
    assert out.doc_ids[:2] in (["x", "y"], ["y", "x"])
    assert sorted(out.doc_ids) == ["w", "x", "y", "z"]
    assert_valid(out, 4)
    assert dense.thread != threading.main_thread().name
    assert sparse.thread != threading.main_thread().name
    scored = HybridRetriever(dense, sparse, fusion="score", depth=3)
    scored.index(DOCS)
    assert scored.retrieve({"q": "x"}, 1)["q"].doc_ids == ["y"]


def test_langchain_adapter() -> None:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document as LCDocument
    from langchain_core.retrievers import BaseRetriever

    class KeywordRetriever(BaseRetriever):
        texts: dict[str, str]

        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[LCDocument]:
            words = set(query.lower().split())
            hits = [(len(words & set(t.lower().split())), i, t) for i, t in self.texts.items()]
            hits.sort(key=lambda h: -h[0])
            docs = [LCDocument(page_content=t, metadata={"id": i}) for n, i, t in hits if n]
            return docs + docs[:1]  # a duplicate, which the adapter drops

    lc = KeywordRetriever(texts={d.id: d.text for d in DOCS})
    r = build_retriever("langchain", retriever=lc)
    r.index(DOCS)
    out = r.retrieve({"q": "the cat sat on a rug"}, 3)["q"]
    assert out.doc_ids[0] == "cat" and "rug" in out.doc_ids
    assert_valid(out, 3)
    with pytest.raises(TypeError):
        build_retriever("langchain", retriever=object())


class Reverse:
    """A reranker that reverses the order it is given, recording what it saw."""

    name = "reverse"

    def __init__(self) -> None:
        self.seen: list[int] = []
        self.indexed = 0

    def index(self, documents: Sequence[Document]) -> None:
        self.indexed = len(documents)

    def rerank(self, query: str, ranking: Ranking, k: int) -> Ranking:
        self.seen.append(len(ranking.docs))
        ids = ranking.doc_ids[::-1][:k]
        return Ranking(
            query_id=ranking.query_id,
            docs=[ScoredDoc(doc_id=d, score=float(-i)) for i, d in enumerate(ids)],
        )


def test_pipeline_funnel_prunes_reranks_and_keeps_tail() -> None:
    first = Fixed("first", [(f"d{i}", 100.0 - i) for i in range(10)])
    rr = Reverse()
    p = Pipeline(first, stages=[(None, 6), (rr, 3)])
    p.index([Document(id=f"d{i}", text=f"text {i}") for i in range(10)])
    assert rr.indexed == 10
    assert p.name == "first -> prune@6 -> reverse@3"
    out = p.retrieve({"q": "x"}, 5)["q"]
    assert rr.seen == [3]
    assert out.doc_ids == ["d2", "d1", "d0", "d3", "d4"]
    assert_valid(out, 5)
    assert len(p.retrieve({"q": "x"}, 10)["q"].docs) == 6  # pruned at 6
    with pytest.raises(ConfigError, match="must not increase"):
        Pipeline(first, stages=[(None, 5), (rr, 10)])


def test_pipeline_keep_interpolates_with_the_first_stage() -> None:
    """first stage d0..d3 scored 3,2,1,0 (mm 1, 2/3, 1/3, 0); the reverse reranker scores d3..d0
    as 0,-1,-2,-3 (mm 1, 2/3, 1/3, 0). keep=0.25: d3 = .75, d2 = .5833, d1 = .4167, d0 = .25;
    keep=0.75: d0 = .75 ...; keep=0.5: all 0.5, so ties keep the first-stage order."""
    first = Fixed("first", [(f"d{i}", 3.0 - i) for i in range(4)])
    docs = [Document(id=f"d{i}", text=f"text {i}") for i in range(4)]
    got = {}
    for keep in (0.0, 0.25, 0.5, 0.75, 1.0):
        p = Pipeline(first, stages=[(Reverse(), 4, keep)])
        p.index(docs)
        got[keep] = p.retrieve({"q": "x"}, 4)["q"]
    assert got[0.0].doc_ids == got[0.25].doc_ids == ["d3", "d2", "d1", "d0"]
    assert [d.score for d in got[0.25].docs] == pytest.approx([0.75, 7 / 12, 5 / 12, 0.25])
    assert got[0.5].doc_ids == got[0.75].doc_ids == got[1.0].doc_ids == ["d0", "d1", "d2", "d3"]
    assert Pipeline(first, stages=[(Reverse(), 4, 0.5)]).name == "first -> reverse@4(keep=0.5)"
    with pytest.raises(ConfigError, match="keep must be in"):
        Pipeline(first, stages=[(Reverse(), 4, 1.5)])
    with pytest.raises(ConfigError, match="keep must be in"):
        Pipeline(first, stages=[(None, 4, 0.5)])


def test_loading_the_encoder_prints_no_progress_bar(capfd: pytest.CaptureFixture[str]) -> None:
    """A model load writes no "Loading weights" bar to stderr, and leaves transformers' own
    progress-bar setting as it found it."""
    from transformers.utils import logging as hf_logging

    from ragjudge.embedding import SentenceTransformerEncoder

    assert hf_logging.is_progress_bar_enabled()
    encoder = SentenceTransformerEncoder()
    assert encoder.encode(["a lighthouse"]).shape == (1, 384)
    assert "Loading weights" not in capfd.readouterr().err
    assert hf_logging.is_progress_bar_enabled()


def test_dense_encoder_judges_is_the_judges_own_instance():
    """``encoder: judges`` (the demo's) is the offline judges' encoder itself: one model in the
    process, its vectors cached under its own name."""
    from ragjudge.embedding import load_judge_encoder
    from ragjudge.retrieval.dense import DenseRetriever

    r = DenseRetriever(encoder="judges")
    assert r.encoder is load_judge_encoder()
    assert r.name == f"dense({load_judge_encoder().name})" and r.encoder_spec == "judges"
