"""Commands of the k-sweep area: ``sweep``, ``runs list|show|export|tag`` and ``demo``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ragjudge.cli.executor_opts import (
    ADDRESS,
    EXECUTOR,
    VERBOSE,
    WORKERS,
    executor_config,
    set_verbose,
)
from ragjudge.cli.store_cmd import STORE

if TYPE_CHECKING:
    from rich.console import Console

    from ragjudge.schema import JudgeResult
    from ragjudge.sweep.analysis import SweepSummary

runs_app = typer.Typer(help="Inspect and export the runs in the run store.", no_args_is_help=True)


def _console() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def _print_summary(summary: SweepSummary, folder: Path | None) -> None:
    """The per-k means and the choice of k; ``folder`` holds the written tables (None: none
    were written, and the title says how to get them)."""
    from rich.table import Table

    from ragjudge.sweep.render import choice_sentence

    where = f"in {folder}/metrics.csv" if folder is not None else "with --out DIR"
    table = Table(title=f"run {summary.run_id}: mean per k (CI and coverage {where})")
    table.add_column("metric")
    for k in summary.ks:
        style = "bold green" if k == summary.choice.best_k else None
        table.add_column(f"k={k}", justify="right", style=style)
    tables = summary.table()
    for name in [*summary.judges, *summary.retrieval_metrics, "objective"]:
        cells = []
        for k in summary.ks:
            a = tables.get(name, {}).get(k)
            cells.append(f"{a.mean:.3f}" if a is not None and a.mean is not None else "n/a")
        table.add_row(name, *cells)
    out = _wide_console()
    out.print(table)
    out.print(choice_sentence(summary))
    if summary.choice.not_retrieved:
        ks = ", ".join(map(str, summary.choice.not_retrieved))
        out.print(
            f"Not retrieved: k = {ks} (the retriever returned fewer documents, so these answers "
            "repeat a smaller k; they are neither chosen nor within noise)."
        )


def sweep(
    config: Path | None = typer.Option(
        None, "--config", "-c", help="The sweep YAML file (optional with --resume)."
    ),
    resume: str | None = typer.Option(
        None, "--resume", help="Resume this run (id, unique prefix or 'latest')."
    ),
    new: bool = typer.Option(
        False, "--new", help="Start a new run even if an unfinished one with this config exists."
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="Folder for tables, plots and summary (default: sweeps/RUN_ID in the state folder, "
        "RAGJUDGE_HOME or .ragjudge/).",
    ),
    tag: list[str] = typer.Option([], "--tag", help="Tag the run (repeatable; TAG or TAG=VALUE)."),
    executor: str | None = EXECUTOR,
    ray_address: str | None = ADDRESS,
    workers: int | None = WORKERS,
    store_url: str | None = STORE,
    verbose: bool = VERBOSE,
) -> None:
    """Run a k-sweep: retrieve once, generate and judge at every k, choose k with confidence.

    ``--executor ray`` (or ``executor: {kind: ray}`` in the config) runs encoding, retrieval,
    generation and judging on Ray workers; this process still writes the run store, and a run
    resumes on either executor.

    Running the same command again resumes an unfinished run of the same config;
    ``--resume RUN_ID`` alone continues a run with its stored config. Prints the distinct
    error of unscored judge results. Exit code 3 when the budget stopped the run (no k is
    chosen from a partial run); 2 when every LLM call of a stage (reranking, generation, or one
    judge) failed, e.g. endpoint unreachable or wrong key: the run is stored as ``failed``
    (resumable) and the first error is printed.
    """
    from ragjudge.errors import ConfigError
    from ragjudge.home import home
    from ragjudge.render import check_out_dir
    from ragjudge.store import open_store
    from ragjudge.sweep.config import load_config, stored_config
    from ragjudge.sweep.render import write_report
    from ragjudge.sweep.run import run_sweep

    if config is None and resume is None:
        raise ConfigError("give --config sweep.yaml, or --resume RUN_ID to continue a run")
    cfg = load_config(config) if config is not None else None  # a bad config before the store
    if out is not None:
        check_out_dir(out)  # before any work
    store = open_store(
        store_url, default=cfg.store.url.get_secret_value() if cfg and cfg.store else None
    )
    if cfg is None:  # the run's own configuration, as stored in its manifest
        cfg = stored_config(store.manifest(store.resolve(str(resume))))
    cfg = cfg.model_copy(
        update={"executor": executor_config(executor, ray_address, workers, cfg.executor)}
    )
    err = _console()
    tags = {name.strip(): value for name, _, value in (t.partition("=") for t in tag)}
    if "" in tags:
        raise ConfigError("--tag needs a name: --tag NAME or --tag NAME=VALUE")
    outcome = run_sweep(
        cfg,
        store=store,
        resume=resume,
        new=new,
        progress=err.print,
        tags=tags,
        progress_bar=err.is_terminal,
    )
    folder = out or home() / "sweeps" / outcome.run_id
    write_report(outcome.summary, folder)
    _print_summary(outcome.summary, folder)
    calls = ""
    if outcome.llm_calls or outcome.cached_calls:
        calls = (
            f"LLM calls sent {outcome.llm_calls}, answered {outcome.llm_answered}, "
            f"cache hits {outcome.cached_calls}; "
        )
    err.print(  # soft_wrap: the folder's path stays on one line, to be copied
        f"run {outcome.run_id}: {outcome.status}; {calls}report in {folder}/",
        markup=False,
        soft_wrap=True,
    )
    from ragjudge.cli.failures import failure_lines

    results: dict[str, list[JudgeResult]] = {}
    for row in store.judge_results(outcome.run_id):
        results.setdefault(row.judge, []).append(row.result)
    for line in failure_lines(results):
        err.print(line, style="yellow", markup=False, soft_wrap=True)
    if outcome.status == "stopped_budget":
        raise typer.Exit(3)


def demo(
    out: Path = typer.Option(Path("ragjudge-demo"), "--out", help="Folder for the results."),
    cases: int | None = typer.Option(
        None, "--cases", min=1, help="Use a seeded random sample of this many questions."
    ),
    executor: str | None = EXECUTOR,
    ray_address: str | None = ADDRESS,
    workers: int | None = WORKERS,
    verbose: bool = VERBOSE,
) -> None:
    """The k-sweep, offline, on the bundled demo set: prints the chosen k, writes a report.

    ``--executor ray`` runs it on Ray workers (a local Ray unless ``--ray-address``), as
    ``ragjudge sweep`` does."""
    from ragjudge.render import check_out_dir
    from ragjudge.sweep.demo import demo_config, run_demo

    check_out_dir(out)  # before any work
    set_verbose(verbose)
    chosen = executor_config(executor, ray_address, workers, demo_config().executor)
    err = _console()
    result = run_demo(
        out, cases=cases, progress=err.print, progress_bar=err.is_terminal, executor=chosen
    )
    _print_summary(result.summary, out)
    best = result.summary.choice.best_k
    print(f"chosen k = {best}; tables, plots and summary in {out}/ (open {out}/summary.html)")


@runs_app.command("list")
def runs_list(store_url: str | None = STORE) -> None:
    """Every run in the store, oldest first."""
    from rich.table import Table

    from ragjudge.store import open_store

    store = open_store(store_url, must_exist=store_url is not None)
    runs = store.list_runs()
    table = Table(title=f"runs in {store.location}")
    width = max((len(m.run_id) for m in runs), default=3)
    table.add_column("run", no_wrap=True, min_width=width)
    for col in ("status", "dataset", "started", "finished", "answers", "judged", "tags"):
        table.add_column(col)
    every = store.run_counts([m.run_id for m in runs])
    for m in runs:
        n = every[m.run_id]
        tags = ", ".join(f"{t}={v}" if v else t for t, v in m.tags.items())
        table.add_row(
            m.run_id,
            m.status,
            m.dataset_name,
            _short_time(m.started_at),
            _short_time(m.finished_at),
            str(n["answers"]),
            str(n["judge_results"]),
            tags,
        )
    _wide_console().print(table)


def _short_time(stamp: str | None) -> str:
    return (stamp or "").replace("T", " ")[:16]


def _wide_console() -> Console:
    """Standard-output console; wide when not a terminal, so piped tables keep whole ids."""
    import sys

    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 160)


@runs_app.command("show")
def runs_show(
    run: str = typer.Argument(..., help="Run id, unique prefix or 'latest'."),
    out: Path | None = typer.Option(None, "--out", help="Also write the report to this folder."),
    store_url: str | None = STORE,
) -> None:
    """A run's manifest, per-k means and choice of k."""
    from rich.console import Console

    from ragjudge.store import open_store
    from ragjudge.sweep.render import write_report
    from ragjudge.sweep.run import summarise_run

    store = open_store(store_url, must_exist=store_url is not None)
    run_id = store.resolve(run)
    m = store.manifest(run_id)
    con = Console()
    con.print(f"[bold]{m.run_id}[/]  status {m.status}  started {m.started_at}")
    # stored values are text, not markup: a cascade's version holds "[band=...]"
    for line in (
        f"data set {m.dataset_name} (hash {m.dataset_hash}), config {m.config_hash}",
        f"models {m.models}; prompts {m.prompts}; ragjudge {m.ragjudge_version}",
        f"rows {store.counts(run_id)}",
    ):
        con.print(line, markup=False, highlight=False)
    summary = summarise_run(store, run_id)
    _print_summary(summary, out)
    if out is not None:
        write_report(summary, out)
        con.print(f"report in {out}/")


@runs_app.command("export")
def runs_export(
    run: str = typer.Argument(..., help="Run id, unique prefix or 'latest'."),
    fmt: str = typer.Option("parquet", "--format", "-f", help="parquet, csv, jsonl or hf."),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="Output file (folder for hf); default: exports/RUN_ID.FORMAT in the state folder.",
    ),
    store_url: str | None = STORE,
) -> None:
    """Export a run as one row per (case, k): answers, judge scores and statuses, metrics;
    a column pair for every judge the run was configured with, empty where it stored nothing.
    A run not finished is said on one line (``run R is interrupted: N of M judge results
    stored``, on stderr); the last line printed names what was written."""
    from ragjudge.errors import ConfigError
    from ragjudge.home import home
    from ragjudge.store import open_store
    from ragjudge.store.export import export_view, progress
    from ragjudge.store.view import RunView

    if out is not None and str(out) == "-":
        raise ConfigError("--out -: runs export writes a file, not stdout; give a file name")
    store = open_store(store_url, must_exist=store_url is not None)
    run_id = store.resolve(run)
    suffix = "" if fmt == "hf" else f".{fmt}"
    view = RunView.read(store, run_id)
    path = export_view(view, fmt, out or home() / "exports" / f"{run_id}{suffix}")
    partial = progress(view)
    if partial is not None:
        typer.echo(partial, err=True)
    print(f"wrote {path}")


@runs_app.command("tag")
def runs_tag(
    run: str = typer.Argument(
        ..., help="Run id, unique prefix or 'latest' (the newest finished run)."
    ),
    tag: str = typer.Argument(..., help="TAG or TAG=VALUE."),
    store_url: str | None = STORE,
) -> None:
    """Tag a run (e.g. ``baseline``), for the regression report to find it. ``latest`` is the
    newest finished run, as for the report; without one, one line names the newest run and
    its status (a run that did not finish is tagged by its id)."""
    from ragjudge.store import open_store

    store = open_store(store_url, must_exist=store_url is not None)
    run_id = store.resolve(run, finished=True)
    name, _, value = tag.partition("=")
    store.tag(run_id, name, value)
    print(f"tagged {run_id} with {tag}")


def register(app: typer.Typer) -> None:
    """Add this area's commands to the app."""
    app.command("sweep")(sweep)
    app.command("demo")(demo)
    app.add_typer(runs_app, name="runs")
