"""User-facing errors. The command line prints them as one clear message (no traceback), exit 2.

``DataError`` names the file and, where there is one, the line of the bad input.
"""

from __future__ import annotations

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
