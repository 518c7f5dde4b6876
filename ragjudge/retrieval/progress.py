"""Rich progress bars on stderr for work that takes more than a second."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


@contextmanager
def progress_bar(label: str, total: int, *, min_total: int = 64) -> Iterator[Callable[[int], None]]:
    """Yields ``advance(n)``; no bar for fewer than ``min_total`` items."""
    if total < min_total:
        yield lambda n: None
        return
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)
