"""``ragjudge store copy`` and ``ragjudge store check``: whole-store maintenance."""

from __future__ import annotations

import typer

STORE = typer.Option(
    None,
    "--store",
    help="Run store: a file path or a URL such as postgresql://USER:PASSWORD@HOST/DB "
    "(default: RAGJUDGE_STORE_URL, else RAGJUDGE_HOME/runs.sqlite).",
)
"""The ``--store`` option of every command that reads or writes runs."""

store_app = typer.Typer(
    help="The run store as a whole: copy a history between stores, check a store.",
    no_args_is_help=True,
)


@store_app.command("copy")
def store_copy(
    source: str = typer.Option(..., "--from", help="Store to copy from (file path or URL)."),
    target: str = typer.Option(..., "--to", help="Store to copy into (file path or URL)."),
) -> None:
    """Copy every run (manifest, rows, ledger, tags, labels) from one store into another, e.g. a
    laptop's SQLite into the team's PostgreSQL. A merge that never loses what the target holds:
    a run both hold keeps the status and rows of the one further along (finished beats every
    other status; alike, the target's stay) and gains the rows it lacks; tags are the union, the
    target's value kept on a conflict. Prints the counts, then one line per status or tag the
    target kept over the source's (or took from it). Copying again changes nothing."""
    from ragjudge.store import open_store
    from ragjudge.store.maintain import copy_store

    with open_store(source, must_exist=True) as src, open_store(target) as dst:
        done = copy_store(src, dst)
        print(
            f"copied {_count(done.runs, 'run')} ({done.new} new, {done.runs - done.new} merged; "
            f"{done.rows} rows written, {done.kept} already in the target kept, "
            f"{done.labels} new labels) from {src.location} to {dst.location}"
        )
        for line in done.notes:
            print(line)


@store_app.command("check")
def store_check(
    store: str | None = STORE,
) -> None:
    """Verify the store: schema migrations applied, every row of every run readable, the SQLite
    file's integrity. Exit 2 with one line per problem: every corrupt row named (run, table,
    key), at most 20 per run and a line counting the rest."""
    from ragjudge.store import open_store
    from ragjudge.store.maintain import check_store
    from ragjudge.store.sql import SqlRunStore

    with open_store(store, must_exist=store is not None) as st:
        assert isinstance(st, SqlRunStore)  # the one implementation
        report = check_store(st)
        for line in report.problems:
            typer.echo(line, err=True)
        print(
            f"{st.location}: schema {report.revision} (newest {report.head}), "
            f"{_count(report.runs, 'run')}, {_count(report.found, 'problem')}"
        )
    if report.problems:
        raise typer.Exit(2)


def _count(n: int, noun: str) -> str:
    """``1 run``, ``2 runs``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def register(app: typer.Typer) -> None:
    """Add this area's commands to the app."""
    app.add_typer(store_app, name="store")
