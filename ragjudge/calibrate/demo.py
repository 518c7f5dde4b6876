"""The demo's human spot-check labels (``datasets/demo/labels.csv``), analysed on their own.

The label file is a filled ``ragjudge spot-check`` sheet of the demo run, so it carries the
question, answer and contexts each label was given for. ``ademo_report`` judges exactly those
items again with the offline judges (no run store needed; ``spotcheck.judge_sheet``) and runs
``analyze`` on them. The command line does the same with
``ragjudge agree --labels datasets/demo/labels.csv --rejudge offline``.
"""

from __future__ import annotations

from pathlib import Path

from ragjudge.resources import demo_dir

from .analyze import AgreementReport, analyze
from .labels import load_labels
from .resample import DEFAULT_RESAMPLES
from .spotcheck import judge_sheet


def demo_labels_path() -> Path:
    return demo_dir() / "labels.csv"


async def ademo_report(
    labels_path: str | Path | None = None,
    *,
    backend: str = "offline",
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> AgreementReport:
    """Agreement of the ``backend`` judges with the demo labels (await it in a notebook)."""
    path = Path(labels_path) if labels_path is not None else demo_labels_path()
    labels = load_labels(path)
    run = await judge_sheet(path, labels.dimensions(), backend)
    return analyze(labels, run, n_resamples=n_resamples, seed=seed)
