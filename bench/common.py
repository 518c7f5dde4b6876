"""What the retrieval benchmarks share: where the shared data lies and the run's state folder."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("RAGJUDGE_SHARED_DATA") or ROOT.parent / "shared" / "data")
DEFAULT_HOME = str(ROOT / ".ragjudge" / "bench")
"""Document vectors, token matrices and reranker scores are cached here between runs."""


def prepare(home: str) -> bool:
    """Point ``RAGJUDGE_HOME`` at ``home`` and silence library warnings; False (with a message)
    when the shared data folder is absent, so the benchmark skips cleanly."""
    if not DATA.is_dir():
        print(f"shared data not found at {DATA}; skipping", file=sys.stderr)
        return False
    os.environ["RAGJUDGE_HOME"] = home
    warnings.simplefilter("ignore")
    return True
