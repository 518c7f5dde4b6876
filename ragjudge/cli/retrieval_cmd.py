"""``ragjudge retrieval`` (retrieve, optionally re-rank, evaluate) and ``ragjudge rerank-study``
(bi-encoder top-N, re-rank, NDCG@5 before/after per query, fixed and broken queries, analysis).

Input: ``--corpus`` a BEIR folder (then ``--split`` picks ``qrels/<split>.tsv``) or a documents
file with ``--queries`` and ``--qrels`` files. Only judged queries are retrieved.
"""

from __future__ import annotations

import json
import warnings
from functools import partial
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from ragjudge.cli.executor_opts import ADDRESS, EXECUTOR, WORKERS, executor_config
from ragjudge.errors import ConfigError
from ragjudge.schema import Document, Qrels


def load_collection(
    corpus: Path, queries: Path | None, qrels: Path | None, split: str
) -> tuple[list[Document], dict[str, str], Qrels]:
    """Documents, judged queries and qrels from a BEIR folder or three files, read alike
    (``ragjudge.io.beir.attach_qrels``: judgments of unknown queries or documents dropped, and
    unjudged queries, each with a counted warning)."""
    from ragjudge.io import load_beir, load_cases, load_documents, read_trec_qrels
    from ragjudge.io.beir import attach_qrels

    if corpus.is_dir() and queries is None and qrels is None:
        ts = load_beir(corpus, split)
        return (
            ts.documents,
            {c.id: c.question for c in ts.cases},
            {c.id: dict(c.relevant) for c in ts.cases},
        )
    if queries is None or qrels is None:
        raise ConfigError("give --queries and --qrels with a corpus file (or a BEIR folder alone)")
    qrels_path = qrels / "qrels" / f"{split}.tsv" if qrels.is_dir() else qrels
    corpus_path = corpus / "corpus.jsonl" if corpus.is_dir() else corpus
    docs = load_documents(corpus_path, skip_empty=True)
    cases = attach_qrels(
        docs,
        load_cases(queries, relevant_field=None),
        read_trec_qrels(qrels_path),
        qrels_path=qrels_path,
        queries_path=queries,
        corpus_path=corpus_path,
        split=split,
        keep_unjudged=False,
    )
    if not cases:
        raise ConfigError(f"no query of {queries} has judgments in {qrels_path}")
    return docs, {c.id: c.question for c in cases}, {c.id: dict(c.relevant) for c in cases}


def _retriever(kind: str, encoder: str, fusion: str) -> Any:
    from ragjudge.retrieval import build_retriever

    if kind == "bm25":
        return build_retriever("bm25")
    if kind == "dense":
        return build_retriever("dense", encoder=encoder)
    if kind == "hybrid":
        return build_retriever("hybrid", encoder=encoder, fusion=fusion)
    raise ConfigError(f"unknown retriever {kind!r}; known: bm25, dense, hybrid")


def _pipeline(
    kind: str, encoder: str, fusion: str, rerank: str | None, depth: int, keep: float
) -> Any:
    """The first stage and the optional reranker, as one pipeline."""
    from ragjudge.retrieval import Pipeline, build_reranker

    stages = [(build_reranker(rerank), depth, keep)] if rerank else []
    return Pipeline(_retriever(kind, encoder, fusion), stages=stages)


def _print_warnings(caught: list[warnings.WarningMessage], err: Console) -> None:
    from ragjudge.io import DataWarning

    for w in caught:
        if issubclass(w.category, DataWarning):
            err.print(f"[yellow]warning:[/] {w.message}", highlight=False)


def retrieval(
    corpus: Path = typer.Option(..., "--corpus", help="Documents file, or a BEIR folder."),
    queries: Path | None = typer.Option(None, "--queries", help="Queries file."),
    qrels: Path | None = typer.Option(None, "--qrels", help="Qrels (TREC or BEIR TSV)."),
    split: str = typer.Option("test", "--split", help="Qrels split of a BEIR folder."),
    retriever: str = typer.Option("hybrid", "--retriever", help="bm25 | dense | hybrid."),
    rerank: str | None = typer.Option(
        None, "--rerank", help="late-interaction | cross-encoder:MODEL | llm."
    ),
    depth: int = typer.Option(20, "--depth", min=1, help="Documents the reranker re-orders."),
    keep: float = typer.Option(
        0.0,
        "--keep",
        min=0.0,
        max=1.0,
        help="Weight of the first-stage score in the re-ordered head (0: reranker order).",
    ),
    k: str = typer.Option("1,3,5,10", "--k", help="Comma-separated cut-offs."),
    encoder: str = typer.Option("plain", "--encoder", help="plain | onnx | onnx-int8 | judges."),
    fusion: str = typer.Option("rrf", "--fusion", help="Hybrid fusion: rrf | score."),
    run_out: Path | None = typer.Option(None, "--run-out", help="Write the TREC run here."),
    json_out: Path | None = typer.Option(None, "--json", help="Metrics JSON (as `metrics`)."),
    executor: str | None = EXECUTOR,
    ray_address: str | None = ADDRESS,
    workers: int | None = WORKERS,
) -> None:
    """Retrieve (and re-rank) every judged query, evaluate, print a table. ``--executor ray``
    encodes the corpus on Ray encoder actors and ranks the queries in batches on Ray workers."""
    from ragjudge.cli.metrics_cmd import parse_ks
    from ragjudge.io import write_trec_run
    from ragjudge.metrics import evaluate_rankings

    ks = parse_ks(k)
    ex = executor_config(executor, ray_address, workers)
    err = Console(stderr=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        docs, qs, judged = load_collection(corpus, queries, qrels, split)
        build = partial(_pipeline, retriever, encoder, fusion, rerank, depth, keep)
        pipe = build()
        if ex.kind == "ray":
            from ragjudge.distributed.jobs import retrieve_on_ray

            rankings = retrieve_on_ray(
                build,
                pipe,
                docs,
                qs,
                max(ks),
                address=ex.address,
                num_workers=ex.num_workers,
                progress=err.print,
            )
        else:
            pipe.index(docs)
            rankings = pipe.retrieve(qs, max(ks))
        report = evaluate_rankings(judged, rankings, ks=ks)
    _print_warnings(caught, err)
    table = Table(title=f"{pipe.name}: {report.n_queries} queries, {len(docs)} documents")
    table.add_column("metric")
    table.add_column("mean", justify="right")
    table.add_column("95% CI", justify="right")
    for key, mean in report.mean.items():
        lo, hi = report.ci[key]
        table.add_row(key, f"{mean:.4f}", f"[{lo:.4f}, {hi:.4f}]")
    Console().print(table)
    if run_out is not None:
        write_trec_run(rankings, run_out, tag="ragjudge")
        err.print(f"wrote {run_out}")
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        payload = report.to_json_dict()
        json_out.write_text(json.dumps(payload, indent=1), encoding="utf-8")
        err.print(f"wrote {json_out}")


def rerank_study(
    corpus: Path = typer.Option(..., "--corpus", help="Documents file, or a BEIR folder."),
    queries: Path | None = typer.Option(None, "--queries", help="Queries file."),
    qrels: Path | None = typer.Option(None, "--qrels", help="Qrels (TREC or BEIR TSV)."),
    split: str = typer.Option("test", "--split"),
    rerank: str = typer.Option("late-interaction", "--rerank", help="The reranker to study."),
    depth: int = typer.Option(20, "--depth", min=1, help="Bi-encoder top-N that is re-ranked."),
    encoder: str = typer.Option("plain", "--encoder", help="plain | onnx | onnx-int8 | judges."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Study the first N queries."),
    show: int = typer.Option(10, "--show", min=0, help="Fixed/broken queries listed of each."),
    json_out: Path | None = typer.Option(None, "--json", help="Write the whole study here."),
) -> None:
    """Bi-encoder top-N, re-rank, NDCG@5 before/after: which queries the reranker fixes/breaks."""
    from ragjudge.retrieval import build_reranker, build_retriever
    from ragjudge.retrieval.study import rerank_study as run_study

    err = Console(stderr=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        docs, qs, judged = load_collection(corpus, queries, qrels, split)
        if limit is not None:
            qs = dict(list(qs.items())[:limit])
        first = build_retriever("dense", encoder=encoder)
        reranker = build_reranker(rerank)
        study = run_study(first, reranker, docs, qs, judged, depth=depth)
    _print_warnings(caught, err)
    out = Console()
    s = study.summary
    out.print(
        f"[bold]{study.reranker}[/] on the top {depth} of {study.retriever}: "
        f"{s['n_queries']} queries, NDCG@5 {s['ndcg5_before']:.4f} -> {s['ndcg5_after']:.4f} "
        f"(fixed {s['fixed']}, broken {s['broken']}, unchanged {s['unchanged']})"
    )
    for title, rows in (("fixed", study.fixed), ("broken", study.broken)):
        t = Table(title=f"queries the reranker {title} ({len(rows)})")
        for col in ("query", "NDCG@5 before", "after", "relevant ranks before", "after"):
            t.add_column(col)
        for r in rows[:show]:
            t.add_row(
                r.text[:70],
                f"{r.before:.3f}",
                f"{r.after:.3f}",
                _ranks(r.ranks_before),
                _ranks(r.ranks_after),
            )
        out.print(t)
    t = Table(title="who gains, who loses (mean NDCG@5 change per group)")
    for col in ("feature", "group", "queries", "mean change", "fixed", "broken"):
        t.add_column(col)
    for g in study.groups:
        t.add_row(g.feature, g.group, str(g.n), f"{g.mean_delta:+.4f}", str(g.fixed), str(g.broken))
    out.print(t)
    for line in study.analysis:
        out.print(f"- {line}")
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(study.model_dump_json(indent=1), encoding="utf-8")
        err.print(f"wrote {json_out}")


def _ranks(ranks: list[int | None]) -> str:
    return ", ".join(str(r) if r is not None else "-" for r in ranks)


def register(app: typer.Typer) -> None:
    """Add ``ragjudge retrieval`` and ``ragjudge rerank-study``."""
    app.command("retrieval")(retrieval)
    app.command("rerank-study")(rerank_study)
