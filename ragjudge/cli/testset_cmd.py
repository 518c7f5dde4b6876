"""``ragjudge testset``: generate a test set from a corpus, or describe a test set folder."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from ragjudge.testset.describe import Description
    from ragjudge.testset.models import TestsetBuild


def _print_build(build: TestsetBuild, out: Console) -> None:
    """The filter table: per type, the candidates requested, generated and not made, then
    where each generated one went, so that generated = each filter's removed + surplus (passed
    every filter once the type's quota was full) + kept."""
    from rich.table import Table

    from ragjudge.testset.mix import QUESTION_TYPES
    from ragjudge.testset.models import FILTERS

    r = build.manifest.report
    table = Table(
        title="candidates per question type (filters run left to right)",
        caption="generated = removed by the filters + surplus (passed them all once the "
        "type's quota was full) + kept",
    )
    for col in ("type", "requested", "generated", "no candidate", *FILTERS, "surplus", "kept"):
        table.add_column(col, justify="left" if col == "type" else "right")
    for t in (*QUESTION_TYPES, "total"):

        def cell(counts: dict[str, int], t: str = t) -> str:
            return str(sum(counts.values()) if t == "total" else counts.get(t, 0))

        removed = [cell(r.removed.get(f, {})) for f in FILTERS]
        table.add_row(
            t,
            cell(r.requested),
            cell(r.generated),
            cell(r.failed),
            *removed,
            cell(r.unused),
            cell(r.kept),
        )
    out.print(table)


def _print_description(desc: Description, out: Console) -> None:
    from rich.table import Table

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.1%}"

    def spread(v: tuple[int, float, int]) -> str:
        return f"{v[0]} / {v[1]:g} / {v[2]}"

    m = desc.manifest
    out.print(
        f"{desc.name}: {desc.n_questions} questions over {desc.n_passages} passages"
        + (f"; backend {m.backend}, generator {m.generator}" if m else "")
    )
    for note in m.notes if m else []:
        out.print(f"note: {note}")
    table = Table(title="question types (words: min / median / max)")
    for col in ("type", "count", "share", "answerable", "question words", "reference words"):
        table.add_column(col, justify="left" if col == "type" else "right")
    table.add_column("BM25 hit@1", justify="right")
    table.add_column("BM25 NDCG@10", justify="right")
    for t, s in desc.types.items():
        table.add_row(
            t,
            str(s.count),
            pct(s.count / desc.n_questions if desc.n_questions else None),
            str(s.answerable),
            spread(s.question_words),
            spread(s.reference_words),
            pct(s.bm25_hit_at_1),
            "n/a" if s.bm25_ndcg_at_10 is None else f"{s.bm25_ndcg_at_10:.3f}",
        )
    out.print(table)
    out.print(
        f"BM25 answers {pct(desc.overall_bm25_hit_at_1)} of the answerable questions at rank 1 "
        "(its first passage is judged relevant)"
    )
    for t, s in desc.types.items():
        out.print(f"[bold]{t}[/]")
        for ex in s.examples:
            grades = ", ".join(f"{d}:{g}" for d, g in ex["relevant"].items()) or "none"
            out.print(f"  {ex['id']}: {ex['question']}", markup=False)
            out.print(f"    reference: {ex['reference']}  (relevant: {grades})", markup=False)


def testset(
    corpus: Path | None = typer.Option(
        None,
        "--corpus",
        help="A JSONL/JSON/CSV/TSV or text file, a folder of .txt/.md files, "
        "or a BEIR folder (corpus.jsonl ...).",
    ),
    n: int = typer.Option(200, "--n", help="How many questions to keep."),
    out: Path | None = typer.Option(None, "--out", help="Folder to write the test set to."),
    backend: str | None = typer.Option(
        None,
        "--backend",
        help="llm or offline (template questions). Default: llm when an endpoint is configured "
        "(OPENAI_BASE_URL / OPENAI_API_KEY), else offline.",
    ),
    mix: Path | None = typer.Option(
        None, "--mix", help="YAML mapping of question type to weight (default: all six types)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the passage order and templates."),
    max_calls: int | None = typer.Option(
        None, "--max-calls", min=0, help="Stop (exit 3) before sending more LLM calls than this."
    ),
    max_cost: float | None = typer.Option(
        None,
        "--max-cost",
        min=0.0,
        help="Stop (exit 3) before spending more than this many USD (refused for a model "
        "without a known price).",
    ),
    describe: Path | None = typer.Option(
        None, "--describe", help="Describe this test set folder instead of generating one."
    ),
) -> None:
    """Generate a test set from a corpus, or describe one (--describe DIR).

    Writes questions of six types (factoid, why_how, list, multi_passage, comparison,
    unanswerable), reference answers, graded qrels and per-item provenance, after filtering,
    to a folder that `ragjudge sweep` reads (dataset: {path: DIR}).

    Exit code 3 when the budget stopped generation (what was kept is written).
    """
    from rich.console import Console

    from ragjudge.errors import ConfigError
    from ragjudge.io import DataWarning

    err = Console(stderr=True, highlight=False)
    con = Console(highlight=False, width=None if err.is_terminal else 140)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DataWarning)
        if describe is not None:
            from ragjudge.testset.describe import describe_folder

            desc = describe_folder(describe)
        else:
            if corpus is None or out is None:
                raise ConfigError("give --corpus F|DIR and --out DIR (or --describe DIR)")
            if backend is not None and backend not in ("llm", "offline"):
                raise ConfigError(f"--backend must be llm or offline, got {backend!r}")
            from ragjudge.testset import build_testset

            build = build_testset(
                corpus,
                n,
                out=out,
                backend=backend,  # type: ignore[arg-type]
                mix=mix,
                seed=seed,
                max_calls=max_calls,
                max_cost_usd=max_cost,
                progress=lambda msg: err.print(msg, markup=False),
            )
    for w in caught:
        if issubclass(w.category, DataWarning):
            err.print(f"[yellow]warning:[/] {w.message}")
    if describe is not None:
        _print_description(desc, con)
        return
    _print_build(build, con)
    m = build.manifest
    for note in m.notes:
        con.print(f"note: {note}", markup=False)
    u = m.usage
    calls = f"; LLM calls sent {u.calls}, cache hits {u.cached_calls}" if m.backend == "llm" else ""
    con.print(
        f"wrote {len(build.items)} questions ({m.backend} backend, generator {m.generator}) "
        f"to {build.path}/{calls}",
        markup=False,
    )
    if m.status == "stopped_budget":
        raise typer.Exit(3)


def register(app: typer.Typer) -> None:
    """Add ``ragjudge testset``."""
    app.command("testset")(testset)
