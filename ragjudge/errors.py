"""User-facing errors. The command line prints them as one clear message (no traceback), exit 2.

``DataError`` names the file and, where there is one, the line of the bad input.
``UserCodeError`` blames a part the user supplied (a retriever) that raised; ``raised_at`` names
where in the user's code an exception was raised.
"""

from __future__ import annotations

import functools
import os
import site
import sys
import sysconfig
import traceback
from pathlib import Path
from typing import Any


class RagjudgeError(Exception):
    """Base of every error ragjudge reports to a user."""


class ConfigError(RagjudgeError):
    """A configuration, option or argument that cannot be used as given."""


class DataError(RagjudgeError):
    """Malformed input data, located by file and line."""

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None):
        self.path = str(path) if path is not None else None
        self.line = line
        where = ""
        if self.path is not None:
            where = f"{self.path}:{line}: " if line is not None else f"{self.path}: "
        super().__init__(f"{where}{message}")


def first_problem(exc: Any) -> str:
    """``key.path: message`` of the first problem of a pydantic ``ValidationError``, on one
    line: the part of an error message that names what is wrong."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    msg = str(first["msg"]).removeprefix("Value error, ")
    return f"{where}: {msg}" if where else msg


class StateFileError(RagjudgeError):
    """A state file (run store, LLM cache, vector cache) that cannot be read or written."""


def sqlite_file_error(path: str | Path, exc: BaseException) -> StateFileError:
    """The one-line error for a ``sqlite3`` failure on the state file ``path``.

    A file another process keeps locked past the busy timeout says so; a read-only file or
    folder says so and points at ``RAGJUDGE_HOME``; anything else (``file
    is not a database``, ``database disk image is malformed``) is a corrupt or truncated file,
    to be moved aside (a new one is created on the next run)."""
    msg = str(exc)
    if "locked" in msg:
        return StateFileError(
            f"{path}: locked by another process for too long ({msg}); let it finish, then run again"
        )
    if "readonly" in msg or "read-only" in msg or "unable to open" in msg:
        return StateFileError(
            f"{path}: cannot write ({msg}): the state folder is read-only; "
            "set RAGJUDGE_HOME to a writable folder"
        )
    return StateFileError(
        f"{path}: not a readable SQLite database ({msg}): the file is corrupt or truncated; "
        "move it aside and a new one is created on the next run"
    )


class UserCodeError(RagjudgeError):
    """A part the user supplied raised: the one-line message names the part (``retriever
    NAME``), the exception's type and message, and where the user's code raised it
    (``raised_at``); the exception itself is the ``__cause__``."""


@functools.cache
def library_roots() -> tuple[str, ...]:
    """Folders whose code is not the user's: the interpreter's, installed packages' and
    ragjudge's own."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(__file__).parent)}
    roots.update(sysconfig.get_paths().values())
    roots.update([*site.getsitepackages(), site.getusersitepackages()])
    return tuple(str(Path(r).resolve()) for r in roots if r)


@functools.cache
def _stdlib_roots() -> tuple[str, ...]:
    """The folders of the standard library."""
    paths = sysconfig.get_paths()
    return tuple(str(Path(paths[k]).resolve()) for k in ("stdlib", "platstdlib") if k in paths)


def _under(filename: str, roots: tuple[str, ...]) -> bool:
    """Whether ``filename`` is a generated module (``<frozen ...>``, ``<string>``) or lies
    under one of ``roots``."""
    if filename.startswith("<"):
        return True
    path = Path(filename).resolve()
    return any(path.is_relative_to(root) for root in roots)


def in_user_code(exc: BaseException) -> bool:
    """Whether ``exc`` passed through the user's code: a frame of its traceback is in a file
    outside ``library_roots``."""
    frames = traceback.extract_tb(exc.__traceback__)
    return any(not _under(f.filename, library_roots()) for f in frames)


def raised_at(exc: BaseException) -> str:
    """``file:line in function`` where ``exc`` was raised, from its traceback: the innermost
    frame in the user's code (outside ``library_roots``), else (a bug of ragjudge or of a
    library) the innermost frame outside the standard library, else the innermost; ``unknown
    place`` without a traceback. A file under the working directory is named relative to it."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "unknown place"
    user = [f for f in frames if not _under(f.filename, library_roots())]
    ours = [f for f in frames if not _under(f.filename, _stdlib_roots())]
    frame = (user or ours or frames)[-1]
    path = Path(frame.filename)
    cwd = Path.cwd()
    shown = os.path.relpath(path, cwd) if path.is_absolute() and path.is_relative_to(cwd) else path
    return f"{shown}:{frame.lineno} in {frame.name}"
