"""``ragjudge.compare`` (the nightly regression report) and ``ragjudge.agree`` (judges against
human labels): the objects ``ragjudge report`` and ``ragjudge agree`` render, from Python.

A run is named as on the command line (a run id, a unique prefix, or ``latest``: the newest
finished run) in the run store (``RAGJUDGE_HOME`` or ``store=``); ``ragjudge.sweep``'s result
may be passed directly. ``agree`` also takes the results of ``ragjudge.evaluate``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragjudge.calibrate.analyze import AgreementReport
    from ragjudge.report.build import Report


def _run_id(run: Any) -> str:
    return str(getattr(run, "run_id", run))


def compare(
    run: Any,
    baseline: Any,
    *,
    thresholds: str | Path | None = None,
    store: str | Path | None = None,
    allow_unfinished: bool = False,
    seed: int = 0,
) -> Report:
    """The regression report of ``run`` against ``baseline`` (``ragjudge report``):
    ``.verdict`` is ``regressed`` or ``ok``, ``.metrics`` the per-metric comparisons with
    their intervals and verdicts. ``thresholds`` is a thresholds YAML file (docs/nightly.md)."""
    from ragjudge.report.build import build_report
    from ragjudge.report.from_store import check_comparable, load_run_scores, resolve_runs
    from ragjudge.report.thresholds import load_thresholds
    from ragjudge.store import open_store

    rules = load_thresholds(thresholds)
    with open_store(store) as st:
        run_id, base_id, warnings = resolve_runs(
            st, _run_id(run), _run_id(baseline), None, allow_unfinished=allow_unfinished
        )
        current = load_run_scores(st, run_id)
        base = load_run_scores(st, base_id)
    notes = check_comparable(current, base, allow_partial=allow_unfinished)
    return build_report(current, base, thresholds=rules, notes=notes, warnings=warnings, seed=seed)


def agree(
    run: Any,
    labels: str | Path,
    *,
    store: str | Path | None = None,
    threshold: float = 0.5,
    resamples: int = 2000,
    seed: int = 0,
) -> AgreementReport:
    """Agreement of a run's judges with human ``labels`` (CSV or JSONL; ``ragjudge agree``):
    kappa, alpha, correlations with 95% bootstrap intervals, calibration, bias probes.
    ``run`` is a stored run (id, ``latest``, a sweep result) or an ``EvaluationResult``."""
    from ragjudge.api.evaluate import EvaluationResult
    from ragjudge.calibrate.analyze import analyze
    from ragjudge.calibrate.labels import load_labels
    from ragjudge.calibrate.source import RunData, from_store

    if isinstance(run, EvaluationResult):
        data = RunData(
            source="evaluate",
            results=[r for rs in run.results.values() for r in rs],
            questions={i.id: i.question for i in run.items},
            references={i.id: i.reference for i in run.items if i.reference},
        )
    else:
        data = from_store(_run_id(run), store)
    return analyze(load_labels(labels), data, threshold=threshold, n_resamples=resamples, seed=seed)
