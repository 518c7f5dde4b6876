"""The ``ragjudge`` command line (typer). Each area registers its commands from its own module.

Heavy libraries (torch, sentence-transformers, openai) are imported inside commands, so that
``ragjudge --help`` stays fast.
"""

from __future__ import annotations

import errno
import sys
from typing import NoReturn

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
    store_cmd,
    sweep_cmd,
    testset_cmd,
    ui_cmd,
)

app = typer.Typer(
    name="ragjudge",
    help="Evaluate retrieval-augmented generation end to end: k-sweeps, regression reports, "
    "human-vs-judge agreement. Runs offline by default; set OPENAI_BASE_URL to use an LLM. "
    "Exit codes: 0 success, 1 regressed (report), 2 bad input or error, 3 budget stop; "
    "RAGJUDGE_DEBUG=1 shows the traceback of an unexpected error.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode="markdown",
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
    testset_cmd,
    store_cmd,
    ui_cmd,
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


def _where(exc: BaseException) -> str:
    """``file:line in function`` of the innermost frame of ``exc``'s traceback."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return "unknown place"
    code = tb.tb_frame.f_code
    return f"{code.co_filename}:{tb.tb_lineno} in {code.co_name}"


def _fail(message: str) -> NoReturn:
    """Print ``error: message`` (secrets redacted: ``settings.redact``) on one line and exit 2."""
    from rich.markup import escape

    from ragjudge.llm.settings import redact

    text = escape(redact(message))
    err_console.print(f"[bold red]error:[/] {text}", highlight=False, soft_wrap=True)
    sys.exit(2)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: object = None,
    line: str | None = None,
) -> None:
    """A warning as one line (``warning: ...``), without the source line Python would add;
    a ``DataWarning`` (skipped input, counted) names its file itself."""
    from rich.markup import escape

    from ragjudge.io.diagnostics import DataWarning

    kind = "" if issubclass(category, DataWarning) else f"{category.__name__}: "
    err_console.print(
        f"[yellow]warning:[/] {escape(kind + str(message))}", highlight=False, soft_wrap=True
    )


def main(argv: list[str] | None = None) -> None:
    """Entry point. Exit codes: 0 success, 1 regressed (``report`` only), 2 bad input or error,
    3 the budget stopped the run. User errors become one message; an unexpected exception
    becomes one line (type, message, where) and exit 2, never a traceback, unless
    ``RAGJUDGE_DEBUG=1`` asks for the traceback."""
    import atexit
    import os
    import warnings

    from ragjudge.heap import freeze_at_exit

    warnings.showwarning = _show_warning
    atexit.unregister(freeze_at_exit)  # once, however often main runs in one process
    atexit.register(freeze_at_exit)
    try:
        # Without standalone mode click returns (not raises) the code of a typer.Exit.
        code = app(args=argv, standalone_mode=False)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err_console.print("aborted")
        sys.exit(130)
    except typer.TyperException as exc:  # a bad option or value (typer's click): one line
        _fail(_usage_error(exc))
    except Exception as exc:
        if os.environ.get("RAGJUDGE_DEBUG", "").strip() not in ("", "0"):
            raise
        _fail(_describe(exc, sys.argv[1:] if argv is None else argv))
    sys.exit(code if isinstance(code, int) else 0)


def _usage_error(exc: Exception) -> str:
    """``ragjudge CMD: what is wrong (see ragjudge CMD --help)`` for a usage error, which names
    the option or value at fault."""
    message = getattr(exc, "format_message", lambda: str(exc))()
    words: list[str] = []
    ctx = getattr(exc, "ctx", None)
    while ctx is not None and ctx.parent is not None:  # the root's name is how Python was run
        words.insert(0, str(ctx.info_name))
        ctx = ctx.parent
    path = " ".join(["ragjudge", *words])
    return f"{path}: {message} (see {path} --help)"


_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _out_option(argv: list[str]) -> str | None:
    """The value of ``--out`` (``-o``) on the command line, if given."""
    for i, arg in enumerate(argv):
        if arg.startswith("--out="):
            return arg.split("=", 1)[1]
        if arg in ("--out", "-o") and i + 1 < len(argv):
            return argv[i + 1]
    return None


def _describe(exc: Exception, argv: list[str] | None = None) -> str:
    """The one-line message of an exception that reached the entry point. A disk that filled
    up while writing (an ``OSError`` that names no file, as a failed ``write`` or ``close``
    raises) names the command's ``--out``."""
    import sqlite3

    if isinstance(exc, RagjudgeError):
        return str(exc)
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    full = isinstance(exc, OSError) and (
        exc.errno in _FULL or "no space left on device" in str(exc).lower()
    )
    if full:
        out = _out_option(argv or [])
        where = f"{out} (--out)" if out else "the output"
        return (
            f"{where}: no space left on the device while writing it ({exc}); free some space "
            "or write elsewhere"
        )
    if isinstance(exc, sqlite3.DatabaseError):
        return (
            f"a state file under RAGJUDGE_HOME is unusable ({type(exc).__name__}: {exc}; at "
            f"{_where(exc)}); set RAGJUDGE_DEBUG=1 for the traceback"
        )
    return (
        f"internal error {type(exc).__name__}: {exc} (at {_where(exc)}); please report it; "
        "set RAGJUDGE_DEBUG=1 for the traceback"
    )
