"""``ragjudge report``: the nightly regression report between a run and its baseline.

Exit codes: 0 when nothing regressed, 1 when a comparison that gates the job regressed (a
primary metric, a floor, a coverage drop; any regression with ``fail_on: any``), 2 on error.
"""

from __future__ import annotations

from pathlib import Path

import typer

from ragjudge.cli.store_cmd import STORE


def register(app: typer.Typer) -> None:
    app.command("report")(report)


def report(
    run: str = typer.Option(
        ..., "--run", help="Run id (or a unique prefix, or 'latest': the newest finished run)."
    ),
    baseline: str | None = typer.Option(None, "--baseline", help="Baseline run id."),
    baseline_tag: str | None = typer.Option(
        None, "--baseline-tag", help="Use the newest other finished run carrying this tag."
    ),
    thresholds: Path | None = typer.Option(None, "--thresholds", help="Thresholds YAML."),
    formats: str = typer.Option("md,html,json", "--format", help="Comma list of md,html,json."),
    out: Path = typer.Option(Path("ragjudge-report"), "--out", help="Output folder."),
    history: int = typer.Option(10, "--history", min=0, help="Runs in the history plot."),
    headline_k: int | None = typer.Option(
        None,
        "--headline-k",
        help="k of the headline metrics and of the default primary family (default: 5 if the "
        "run has it, else its largest k).",
    ),
    allow_partial: bool = typer.Option(
        False, "--allow-partial", help="Compare only the shared part of non-comparable runs."
    ),
    allow_unfinished: bool = typer.Option(
        False,
        "--allow-unfinished",
        help="Also compare runs that did not finish ('latest' then means the newest run); "
        "the report says so at the top.",
    ),
    store_path: str | None = STORE,
) -> None:
    """Compare a run with a baseline: paired bootstrap CIs, permutation tests (Holm over the
    primary metrics, Benjamini-Hochberg over the rest), equivalence tests, verdicts, coverage
    changes, the queries that moved, history. Exit 1 when the job fails: a primary metric
    regressed (with `fail_on: any`, any metric), a mean fell below its floor, or coverage
    dropped significantly; exit 2 on bad input."""
    from rich.console import Console

    from ragjudge.errors import ConfigError
    from ragjudge.render import check_out_dir
    from ragjudge.report.build import ordered, write_report
    from ragjudge.report.from_store import newer_unfinished, resolve_runs, stored_report
    from ragjudge.report.thresholds import load_thresholds
    from ragjudge.store import open_store

    console = Console(stderr=True)
    fmts = [f.strip() for f in formats.split(",") if f.strip()]
    if not fmts:
        raise ConfigError("--format names no format; use md, html and/or json")
    rules = load_thresholds(thresholds)
    check_out_dir(out)
    with open_store(store_path, must_exist=True) as store:
        run_id, base_id, warnings = resolve_runs(
            store, run, baseline, baseline_tag, allow_unfinished=allow_unfinished
        )
        if run == "latest":
            which = "newest run" if allow_unfinished else "newest finished run"
            console.print(f"--run latest is run {run_id} (the {which})", highlight=False)
            for later in newer_unfinished(store, run_id):
                console.print(
                    f"  the newer run {later.run_id} did not finish (status {later.status}) and "
                    f"is not compared; --run {later.run_id} --allow-unfinished compares what it "
                    "scored",
                    highlight=False,
                )
        result = stored_report(
            store,
            run_id,
            base_id,
            thresholds=rules,
            history=history,
            headline_k=headline_k,
            allow_partial=allow_partial,
            warnings=warnings,
        )
    paths = write_report(result, out, fmts)
    for w in result.warnings:
        console.print(f"[bold red]warning[/]: {w}", highlight=False)
    counts = result.counts
    colour = "red" if result.verdict == "regressed" else "green"
    console.print(
        f"[{colour}]{'REGRESSED' if result.verdict == 'regressed' else 'no regression'}[/]: "
        f"{counts['regressed']} regressed, {counts['improved']} improved, "
        f"{counts['unchanged']} unchanged, {counts['inconclusive']} inconclusive, "
        f"{counts['identical']} identical, {counts['coverage_dropped']} coverage drops "
        f"({run_id} vs {base_id})",
        highlight=False,
    )
    console.print(f"  primary: {result.primary}", highlight=False)
    for m in ordered(result.metrics):
        if m.flagged or (m.role == "primary" and m.verdict in ("improved", "inconclusive")):
            colour = "red" if m.flagged else "green" if m.verdict == "improved" else "yellow"
            fails = ", fails the job" if m.gates else ""
            console.print(
                f"  [{colour}]{m.label}[/] ({m.role}, {m.verdict}{fails}): {m.reason}",
                highlight=False,
            )
    for fmt, path in paths.items():
        console.print(f"  {fmt}: {path}")
    raise typer.Exit(1 if result.verdict == "regressed" else 0)
