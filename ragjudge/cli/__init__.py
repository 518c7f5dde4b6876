"""The ``ragjudge`` command line (typer). Each area registers its commands from its own module.

Heavy libraries (torch, sentence-transformers, openai) are imported inside commands, so that
``ragjudge --help`` stays fast.
"""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from ragjudge import __version__
from ragjudge.errors import RagjudgeError

from . import (
    agree_cmd,
    fit_cmd,
    judge_cmd,
    llm_cmd,
    metrics_cmd,
    report_cmd,
    retrieval_cmd,
    sweep_cmd,
)

app = typer.Typer(
    name="ragjudge",
    help="Evaluate retrieval-augmented generation end to end: k-sweeps, regression reports, "
    "human-vs-judge agreement. Runs offline by default; set OPENAI_BASE_URL to use an LLM.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

# Help lists the three jobs first (sweep/demo, report, agree), then the building blocks.
for _module in (
    sweep_cmd,
    report_cmd,
    agree_cmd,
    judge_cmd,
    retrieval_cmd,
    metrics_cmd,
    fit_cmd,
    llm_cmd,
):
    _module.register(app)


def _version(value: bool) -> None:
    if value:
        print(__version__)
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """ragjudge command line."""


err_console = Console(stderr=True)


def main() -> None:
    """Entry point: user errors become one message and exit code 2, never a traceback."""
    try:
        # Without standalone mode click returns (not raises) the code of a typer.Exit.
        code = app(standalone_mode=False)
    except RagjudgeError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err_console.print("aborted")
        sys.exit(130)
    except Exception as exc:  # click usage errors
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(2)
        raise
    sys.exit(code if isinstance(code, int) else 0)
