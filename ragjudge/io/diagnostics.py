"""Counted warnings for input problems that evaluation can survive.

A loader that drops or ignores rows (qrels naming unknown documents, queries without judgments,
run queries absent from the qrels) says how many and names a few, through one ``DataWarning``
per kind of problem instead of one per row. The command line prints them in yellow.
"""

from __future__ import annotations

import warnings
from collections.abc import Collection
from pathlib import Path


class DataWarning(UserWarning):
    """Input that was skipped or ignored, with a count and a few examples."""


def warn_counted(
    what: str, items: Collection[str], *, path: str | Path | None = None, examples: int = 3
) -> None:
    """Warn once that ``len(items)`` ``what`` were found; nothing happens for no items."""
    if not items:
        return
    shown = ", ".join(repr(x) for x in list(items)[:examples])
    more = ", ..." if len(items) > examples else ""
    where = f"{path}: " if path is not None else ""
    warnings.warn(DataWarning(f"{where}{len(items)} {what} (e.g. {shown}{more})"), stacklevel=3)
