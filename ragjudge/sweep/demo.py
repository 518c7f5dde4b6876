"""``ragjudge demo``: the k-sweep on the bundled demo set, offline, written to one folder.

Runs ``datasets/demo/sweep.yaml`` (hybrid retrieval, extractive generator, offline judges,
k = 1..10) into the project's run store and writes tables, plots and a Markdown/HTML summary.
"""

from __future__ import annotations

from pathlib import Path

from ragjudge.resources import demo_dir
from ragjudge.store import RunStore
from ragjudge.sweep.config import ExecutorConfig, SweepConfig, load_config
from ragjudge.sweep.execute import Progress
from ragjudge.sweep.render import write_report
from ragjudge.sweep.run import SweepOutcome, run_sweep


def demo_config() -> SweepConfig:
    return load_config(demo_dir() / "sweep.yaml")


def run_demo(
    out: Path,
    *,
    cases: int | None = None,
    store: RunStore | None = None,
    progress: Progress | None = None,
    progress_bar: bool = False,
    executor: ExecutorConfig | None = None,
) -> SweepOutcome:
    """Run the demo sweep (resuming an unfinished demo run) and write its report to ``out``.

    ``cases`` keeps a seeded random sample of that many questions (a quicker look);
    ``executor`` runs it on Ray (``docs/scale.md``): the same run, resumable on either."""
    config = demo_config()
    if executor is not None:
        config = config.model_copy(update={"executor": executor})
    if cases is not None:
        config = config.model_copy(
            update={"dataset": config.dataset.model_copy(update={"sample": cases})}
        )
    outcome = run_sweep(
        config, store=store, progress=progress, tags={"demo": ""}, progress_bar=progress_bar
    )
    write_report(outcome.summary, out)
    return outcome
