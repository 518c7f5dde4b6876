"""User-facing errors. The command line prints them as one clear message (no traceback), exit 2.

``DataError`` names the file and, where there is one, the line of the bad input.
"""

from __future__ import annotations

from pathlib import Path


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
