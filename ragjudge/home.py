"""Where ragjudge keeps state: one folder, nothing written anywhere else.

``RAGJUDGE_HOME`` if set, else ``.ragjudge/`` in the working directory. Inside it:
``cache.sqlite`` (LLM calls), ``runs.sqlite`` (run store), ``embeddings/`` (document vectors),
``rerank.sqlite`` (reranker scores), ``sweeps/RUN_ID/`` (a sweep's tables, plots and summary
when ``ragjudge sweep`` is given no ``--out``), ``exports/RUN_ID.FORMAT`` (``ragjudge runs
export`` without ``--out``).
"""

from __future__ import annotations

import os
from pathlib import Path


def home_path() -> Path:
    """Where the state folder is (module docstring), without creating it."""
    return Path(os.environ.get("RAGJUDGE_HOME") or Path.cwd() / ".ragjudge")


def home() -> Path:
    """The state folder, created on first use."""
    root = home_path()
    root.mkdir(parents=True, exist_ok=True)
    return root


def state_path(*parts: str) -> Path:
    """A path inside the state folder; parent folders are created."""
    p = home().joinpath(*parts)
    p.parent.mkdir(parents=True, exist_ok=True)
    return p
