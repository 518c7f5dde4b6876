"""The demo's human spot-check labels (``datasets/demo/labels.csv``), analysed on their own.

The label file is a filled ``ragjudge spot-check`` sheet of the demo run, so it carries the
question, answer and contexts each label was given for. ``demo_report`` judges exactly those
items again with the offline judges (no run store needed) and runs ``analyze`` on them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from ragjudge.resources import demo_dir
from ragjudge.schema import Answer, JudgeResult

from .analyze import AgreementReport, analyze
from .labels import load_labels
from .resample import DEFAULT_RESAMPLES
from .source import RunData
from .spotcheck import read_sheet_inputs


def demo_labels_path() -> Path:
    return demo_dir() / "labels.csv"


async def _judge(
    labels_path: Path, dimensions: list[str], backend: str
) -> tuple[list[JudgeResult], dict[str, Answer]]:
    from ragjudge.judges.registry import create_judge
    from ragjudge.judges.runner import run_judges
    from ragjudge.store import parse_item_id

    inputs = read_sheet_inputs(labels_path)
    items = list(inputs.values())
    judges = [create_judge(d, backend) for d in dimensions]
    by_judge = await run_judges(judges, items, progress=False)
    answers = {}
    for item in items:
        case_id, k = parse_item_id(item.id)
        answers[item.id] = Answer(
            case_id=case_id,
            k=k,
            text=item.answer,
            context_ids=[],
            contexts=item.contexts,
            generator="extractive",
        )
    return [r for rs in by_judge.values() for r in rs], answers


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
    results, answers = await _judge(path, labels.dimensions(), backend)
    run = RunData(source=f"demo labels ({backend} judges)", results=results, answers=answers)
    return analyze(labels, run, n_resamples=n_resamples, seed=seed)


def demo_report(
    labels_path: str | Path | None = None,
    *,
    backend: str = "offline",
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> AgreementReport:
    """``ademo_report`` from synchronous code."""
    return asyncio.run(
        ademo_report(labels_path, backend=backend, n_resamples=n_resamples, seed=seed)
    )
