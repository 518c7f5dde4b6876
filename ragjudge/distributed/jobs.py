"""Jobs on Ray beside the sweep: ranking queries (``ragjudge retrieval``, and the sweep's
retrieval stage) and judging items (``ragjudge judge``). Each returns what the in-process path
returns, in the same order; the caller writes the output.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from ragjudge.distributed import require_ray
from ragjudge.distributed.cluster import WorkerPool, batches_of, connect
from ragjudge.distributed.encode import encode_corpus
from ragjudge.distributed.workers import dense_parts, judge_parts, retriever_parts
from ragjudge.judges.registry import takes_client
from ragjudge.schema import Document, JudgeInput, JudgeResult, Ranking

ray = require_ray()


def encode_stages(
    retriever: Any, documents: Sequence[Document], num_workers: int, progress: Callable[[str], None]
) -> dict[str, dict[str, Any]]:
    """Encode ``documents`` for each dense stage of ``retriever`` on Ray encoder actors (before
    the workers start: encoding needs the CPUs); ``{encoder name: {content hash: vector}}``."""
    vectors = {}
    for dense in dense_parts(retriever):
        progress(f"encoding {len(documents)} documents on Ray ({dense.name})")
        name = dense.encoder.name
        vectors[name] = encode_corpus(documents, dense.encoder_spec, name, num_workers)
    return vectors


def rank_on_ray(
    pool: WorkerPool, vectors: dict[str, dict[str, Any]], queries: Mapping[str, str], k: int
) -> tuple[dict[str, Ranking], str | None]:
    """Rank ``queries`` at ``k`` in batches on ``pool`` (each worker indexes its documents
    once, from ``vectors``); also the first reranking failure a worker reported."""
    shared = ray.put(vectors)
    ids = list(queries)
    batches = [({q: queries[q] for q in b}, k, shared) for b in batches_of(ids, pool.num_workers)]
    got: dict[str, Ranking] = {}
    failure = None
    for _, (ranked, failed) in pool.run("retrieve", batches):
        got.update(ranked)
        failure = failure or failed
    return got, failure


def retrieve_on_ray(
    build: Callable[[], Any],
    retriever: Any,
    documents: Sequence[Document],
    queries: Mapping[str, str],
    k: int,
    *,
    address: str | None,
    num_workers: int,
    progress: Callable[[str], None],
) -> dict[str, Ranking]:
    """``retriever.retrieve(queries, k)`` over ``documents`` on Ray: workers build their
    retriever with ``build()`` (picklable); the driver's ``retriever`` names the encoders."""
    connect(address, num_workers)
    vectors = encode_stages(retriever, documents, num_workers, progress)
    pool = WorkerPool(
        partial(retriever_parts, build),
        num_workers,
        uses_llm=False,
        concurrency=num_workers,
        documents=documents,
    )
    try:
        return rank_on_ray(pool, vectors, queries, k)[0]
    finally:
        pool.close()


def judge_on_ray(
    names: Sequence[str],
    backend: str,
    plugins: Sequence[str],
    items: Sequence[JudgeInput],
    *,
    address: str | None,
    num_workers: int,
    concurrency: int,
    options: Mapping[str, Any] | None = None,
) -> dict[str, list[JudgeResult]]:
    """Judge name -> one result per item (in order), the items judged in batches on Ray
    workers; ``concurrency`` calls in flight across the cluster (and, with ``RAGJUDGE_RPM`` /
    ``RAGJUDGE_TPM`` set, one pace for all workers); ``options`` for every judge's factory
    (the cascade's band)."""
    connect(address, num_workers)
    pool = WorkerPool(
        partial(judge_parts, list(names), backend, list(plugins), dict(options or {})),
        num_workers,
        uses_llm=any(takes_client(n, backend) for n in names),
        concurrency=concurrency,
    )
    try:
        batches = batches_of(list(range(len(items))), num_workers)
        jobs = [(name, batch) for name in names for batch in batches]
        out: dict[str, list[JudgeResult | None]] = {n: [None] * len(items) for n in names}
        args = [(name, [items[i] for i in batch]) for name, batch in jobs]
        for j, (results, _) in pool.run("judge", args):
            name, batch = jobs[j]
            for i, res in zip(batch, results, strict=True):
                out[name][i] = res
        return {n: [r for r in rs if r is not None] for n, rs in out.items()}
    finally:
        pool.close()
