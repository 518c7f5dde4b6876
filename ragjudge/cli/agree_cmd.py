"""``ragjudge agree`` (human-vs-judge agreement, calibration, PPI, bias probes) and
``ragjudge spot-check`` (which items to label next)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ragjudge.cli.store_cmd import STORE
from ragjudge.errors import ConfigError, DataError

if TYPE_CHECKING:
    from ragjudge.calibrate.analyze import AgreementReport
    from ragjudge.calibrate.labels import LabelSet
    from ragjudge.calibrate.source import RunData


def _load_run(run: str | None, results: Path | None, store: str | None) -> RunData:
    from ragjudge.calibrate.source import from_results_file, from_store

    if (run is None) == (results is None):
        raise ConfigError("give exactly one of --run RUN or --results results.jsonl")
    if results is not None:
        return from_results_file(results)
    assert run is not None
    return from_store(run, store)


def _agree_source(
    run: str | None,
    results: Path | None,
    store: str | None,
    rejudge: str | None,
    labels: Path | None,
) -> RunData:
    if rejudge is None:
        return _load_run(run, results, store)
    if run is not None or results is not None or labels is None:
        raise ConfigError(
            "--rejudge judges the label sheet itself: give --labels, drop --run / --results"
        )
    import asyncio

    from ragjudge.calibrate.labels import load_labels
    from ragjudge.calibrate.spotcheck import judge_sheet

    return asyncio.run(judge_sheet(labels, load_labels(labels).dimensions(), rejudge))


def _stored_labels(run: str | None, store_path: str | None) -> LabelSet:
    """The labels stored for ``run`` (``agree`` without ``--labels``)."""
    from ragjudge.calibrate.labels import stored_label_set
    from ragjudge.store import open_store

    if run is None:
        raise ConfigError("give --labels FILE, or --run RUN to use the labels stored for it")
    with open_store(store_path, must_exist=True) as store:
        run_id = store.resolve(run)
        stored = store.labels(run_id)
        where = store.location
    if not stored:
        raise ConfigError(
            f"run {run_id} in {where} has no stored labels: label it in `ragjudge ui` "
            "(or give --labels FILE)"
        )
    return stored_label_set(stored, f"run store {where}, run {run_id}")


def _print_report(report: AgreementReport) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(
        f"[bold]Agreement[/] run {report.source}, labels {report.labels_path}, threshold "
        f"{report.threshold:g}, {report.n_resamples} bootstrap resamples (95% CI)",
        highlight=False,
    )
    for note in report.notes:
        console.print(f"  {note}", style="dim", highlight=False)
    for d in report.dimensions:
        a = d.agreement
        table = Table(
            title=f"{a.dimension} ({a.scale}): {a.n_scored}/{a.n_labelled} labelled items scored, "
            f"{a.n_annotators} annotator(s)",
            title_justify="left",
        )
        table.add_column("statistic")
        table.add_column("value [95% CI]", justify="right")
        table.add_column("note", style="dim")
        for e in a.estimates:
            table.add_row(e.name, e.fmt(), e.note or "")
        if a.inter_annotator_alpha is not None:
            e = a.inter_annotator_alpha
            table.add_row("inter-annotator alpha", e.fmt(), e.note or "")
        for c in d.calibration:
            table.add_row(
                f"{c.method}: Brier / ECE",
                f"{c.brier_before.fmt()} -> {c.brier_after.fmt()} / "
                f"{c.ece_before.fmt()} -> {c.ece_after.fmt()}",
                "threshold P(yes)=0.5: " + ("n/a" if c.threshold is None else f"{c.threshold:.3f}"),
            )
        unscored = {s: n for s, n in a.status_counts.items() if s != "ok" and n}
        if unscored:
            counts = ", ".join(f"{s} {n}" for s, n in sorted(unscored.items()))
            table.add_row("not scored", str(sum(unscored.values())), counts)
        for note in a.notes:
            table.add_row("note", "", note)
        if d.calibration_note:
            table.add_row("calibration", "n/a", d.calibration_note)
        for m in d.estimation.estimates:
            table.add_row(
                f"mean: {m.method}",
                f"{m.value:.3f} [{m.ci_low:.3f}, {m.ci_high:.3f}]",
                f"width {m.width:.3f}" + (f", lambda {m.lam:.2f}" if m.lam is not None else ""),
            )
        if not d.estimation.applicable:
            table.add_row("mean: ppi", "n/a", d.estimation.note or "")
        elif d.estimation.note:
            table.add_row("mean: note", "", d.estimation.note)
        for b in d.bias:
            if not b.applicable:
                table.add_row(f"bias: {b.probe}", "n/a", b.note or "")
            for e in b.estimates:
                table.add_row(f"bias: {e.name}", e.fmt(), e.note or "")
        console.print(table)
        if a.confusion is not None:
            (tn, fp), (fn, tp) = a.confusion
            console.print(
                f"  confusion at {a.threshold:g} (human x judge): no/no {tn}, no/yes {fp}, "
                f"yes/no {fn}, yes/yes {tp}",
                highlight=False,
            )


def agree(
    labels: Path | None = typer.Option(
        None,
        "--labels",
        help="Human labels (CSV or JSONL); without it, the labels stored for --run (made in "
        "`ragjudge ui` or imported there).",
    ),
    run: str | None = typer.Option(
        None, "--run", help="Run id (or a unique prefix, or 'latest') in the run store."
    ),
    results: Path | None = typer.Option(
        None, "--results", help="Judge results JSONL (output of `ragjudge judge`) instead."
    ),
    store: str | None = STORE,
    rejudge: str | None = typer.Option(
        None,
        "--rejudge",
        help="Instead of a run: judge the items of a filled spot-check sheet (its question, "
        "answer, contexts, reference) again with this backend (offline, llm, ...).",
    ),
    threshold: float = typer.Option(0.5, help="Judge decision threshold on the [0, 1] score."),
    resamples: int = typer.Option(
        2000,
        help="Bootstrap resamples for the agreement and calibration intervals (the PPI mean's "
        "interval is a normal-approximation one).",
    ),
    seed: int = typer.Option(0, help="Seed of the bootstrap and the cross-validation folds."),
    json_out: Path | None = typer.Option(None, "--json", help="Write the full report as JSON."),
    html_out: Path | None = typer.Option(None, "--html", help="Write a self-contained HTML page."),
) -> None:
    """Agreement of the judges with human labels: kappa, alpha, correlations, pairwise accuracy
    (each with a 95% bootstrap CI), calibration, prediction-powered means and bias probes."""
    from ragjudge.calibrate.analyze import analyze
    from ragjudge.calibrate.labels import load_labels

    if not 0.0 <= threshold <= 1.0:
        raise ConfigError(f"--threshold must be in [0, 1], got {threshold}")
    if resamples < 10:
        raise ConfigError("--resamples must be at least 10")
    for flag, out in (("--json", json_out), ("--html", html_out)):
        if out is not None and not out.parent.is_dir():  # found now, not after the analysis
            raise ConfigError(f"{flag} {out}: no folder {out.parent}")
    if labels is not None:
        label_set = load_labels(labels)
        if not label_set.labels:
            raise DataError(
                f"no labels: the file has no rows, or every 'label' cell is empty "
                f"({label_set.skipped_blank} rows); fill in the sheet first",
                path=labels,
            )
    else:
        label_set = _stored_labels(run, store)
    data = _agree_source(run, results, store, rejudge, labels)
    report = analyze(label_set, data, threshold=threshold, n_resamples=resamples, seed=seed)
    _print_report(report)
    if json_out is not None:
        json_out.write_text(report.model_dump_json(indent=2), encoding="utf-8")
        typer.echo(f"wrote {json_out}")
    if html_out is not None:
        from ragjudge.calibrate.render import render_html

        html_out.write_text(render_html(report), encoding="utf-8")
        typer.echo(f"wrote {html_out}")


def spot_check(
    run: str | None = typer.Option(None, "--run", help="Run id, unique prefix or 'latest'."),
    results: Path | None = typer.Option(None, "--results", help="Judge results JSONL instead."),
    store: str | None = STORE,
    n: int = typer.Option(50, "--n", help="How many items to pick."),
    out: Path = typer.Option(Path("to_label.csv"), "--out", help="CSV sheet to write."),
    data: Path | None = typer.Option(
        None,
        "--data",
        help="Test set folder giving the questions and references (a run stores its own; "
        "needed for --results files and runs stored before test cases were).",
    ),
    dimension: list[str] | None = typer.Option(
        None, "--dimension", help="Only these judges (repeatable; default: every judge)."
    ),
    exclude: Path | None = typer.Option(
        None,
        "--exclude",
        help="A label file or sheet whose items are labelled or handed out already (skipped, "
        "filled in or not).",
    ),
    seed: int = typer.Option(0, help="Seed of the draw inside each score stratum."),
) -> None:
    """Pick the items to label next (stratified over the judge score range, plus the items
    where judges disagree most) and write a CSV ready to fill in."""
    from ragjudge.calibrate.labels import listed_items
    from ragjudge.calibrate.source import attach_testset
    from ragjudge.calibrate.spotcheck import select_items, write_sheet

    if n < 1:
        raise ConfigError("--n must be at least 1")
    run_data = _load_run(run, results, store)
    if data is not None:
        run_data = attach_testset(run_data, data)
    done = listed_items(exclude) if exclude else None
    dims = list(dimension) if dimension else None
    judged = sorted({r.judge for r in run_data.results})
    unknown = sorted(set(dims or []) - set(judged))
    if unknown:
        raise ConfigError(
            f"--dimension {', '.join(unknown)}: no such judge in {run_data.source}; "
            f"its judges: {', '.join(judged) or 'none'}"
        )
    picks = select_items(run_data, n, dimensions=dims, exclude=done, seed=seed)
    if not picks:
        raise ConfigError("no scored item left to pick")
    rows = write_sheet(run_data, picks, out, dimensions=dims)
    reasons: dict[str, int] = {}
    for p in picks:
        key = p.reason.split(" ")[0]
        reasons[key] = reasons.get(key, 0) + 1
    summary = ", ".join(f"{v} {k}" for k, v in sorted(reasons.items()))
    typer.echo(f"picked {len(picks)} items ({summary}); wrote {rows} rows to {out}")


def register(app: typer.Typer) -> None:
    """Add this area's commands to the app."""
    app.command("agree")(agree)
    app.command("spot-check")(spot_check)
