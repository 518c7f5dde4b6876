"""``ragjudge metrics``: retrieval metrics of a TREC run against qrels, with 95% bootstrap CIs.

Input problems evaluation survives (run queries without judgments, judged queries without a
ranking) are printed as counted warnings; malformed files are ``DataError``s (exit code 2).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from ragjudge.errors import ConfigError


def parse_ks(text: str) -> list[int]:
    """``"1,3,5"`` -> ``[1, 3, 5]``; anything else (an empty item, a repeated k) is a
    ``ConfigError``, as a sweep config's ``ks`` is."""
    try:
        ks = [int(part) for part in text.split(",")]
    except ValueError:
        raise ConfigError(f"--k must be comma-separated positive integers, got {text!r}") from None
    if not ks or min(ks) < 1:
        raise ConfigError(f"--k must be comma-separated positive integers, got {text!r}")
    if len(set(ks)) != len(ks):
        raise ConfigError(f"--k repeats a cut-off: {text!r}")
    return ks


def metrics(
    qrels: Path = typer.Option(..., "--qrels", help="TREC qrels (qid iter docid rel) or BEIR TSV."),
    run: Path = typer.Option(..., "--run", help="TREC run (qid Q0 docid rank score tag)."),
    k: str = typer.Option("1,3,5,10,20,100", "--k", help="Comma-separated cut-offs."),
    threshold: int = typer.Option(
        1, "--threshold", help="Lowest grade that counts as relevant for the binary metrics."
    ),
    json_out: Path | None = typer.Option(
        None, "--json", help="Write metrics and per-query values here."
    ),
) -> None:
    """Precision, recall, F1, hit rate, MRR, MAP, R-precision and NDCG of a TREC run."""
    from ragjudge.io import DataWarning, read_trec_qrels, read_trec_run
    from ragjudge.metrics import evaluate_run

    ks = parse_ks(k)
    err = Console(stderr=True)
    with warnings.catch_warnings(record=True) as caught, err.status("reading the files") as status:
        warnings.simplefilter("always", DataWarning)
        qrels_data = read_trec_qrels(qrels)
        run_data = read_trec_run(run)
        status.update(f"evaluating {len(run_data)} queries")
        report = evaluate_run(qrels_data, run_data, ks=ks, relevance_threshold=threshold)
    for w in caught:
        if issubclass(w.category, DataWarning):
            err.print(f"[yellow]warning:[/] {w.message}", highlight=False)
    table = Table(title=f"{run.name} vs {qrels.name}: {report.n_queries} queries")
    table.add_column("metric")
    table.add_column("mean", justify="right")
    table.add_column("95% CI", justify="right")
    for key, mean in report.mean.items():
        lo, hi = report.ci[key]
        table.add_row(key, f"{mean:.4f}", f"[{lo:.4f}, {hi:.4f}]")
    Console().print(table)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(report.to_json_dict(), indent=1), encoding="utf-8")
        err.print(f"wrote {json_out}")


def register(app: typer.Typer) -> None:
    """Add ``ragjudge metrics``."""
    app.command("metrics")(metrics)
