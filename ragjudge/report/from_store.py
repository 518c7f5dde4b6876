"""Read a run out of the run store as ``RunScores`` for the regression report.

Judge series come from the stored judge results (score, or None for any status other than ok);
retrieval series from the stored per-query retrieval metrics; the evidence for movers from the
results, the answers' context ids and the run's stored test cases (questions and qrels).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

from ragjudge.errors import ConfigError
from ragjudge.report.build import Report, build_report
from ragjudge.report.runscores import MetricSeries, RunScores
from ragjudge.report.thresholds import Thresholds
from ragjudge.schema import RunManifest
from ragjudge.store import RunStore
from ragjudge.store.view import RunView


def _testset_info(view: RunView) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """Questions and qrels: the run's stored test cases; for a run stored before test cases
    were, its data set folder when still readable (else movers lose their question text)."""
    if view.testcases:
        cases = list(view.testcases.values())
        return view.questions, {c.id: dict(c.relevant) for c in cases if c.relevant}
    config = view.manifest.config if view.manifest is not None else {}
    dataset = (config.get("full") or {}).get("dataset") or {}
    path = dataset.get("path")
    if not path or not Path(path).is_dir():
        return {}, {}
    from ragjudge.io import load_testset

    try:
        testset = load_testset(path, split=dataset.get("split", "test"))
    except Exception:  # the folder changed since the run: movers lose their question text only
        return {}, {}
    return {c.id: c.question for c in testset.cases}, testset.qrels()


def load_run_scores(store: RunStore, run_id: str, *, evidence: bool = True) -> RunScores:
    """The run's series by (metric, k) and, with ``evidence``, what the movers show; read
    through the one reader of a stored run (``RunView``)."""
    view = RunView.read(store, run_id)
    values: dict[tuple[str, int], dict[str, float | None]] = defaultdict(dict)
    versions: dict[str, str] = {}
    for (judge, k, case_id), result in view.results.items():
        values[(judge, k)][case_id] = result.score
        versions[judge] = result.judge_version
    series = [
        MetricSeries(metric=j, k=k, kind="judge", values=v, version=versions.get(j))
        for (j, k), v in values.items()
    ]
    retrieval: dict[tuple[str, int], dict[str, float | None]] = defaultdict(dict)
    for (metric, k, case_id), value in view.retrieval.items():
        retrieval[(metric, k)][case_id] = value
    series += [
        MetricSeries(metric=m, k=k, kind="retrieval", values=v) for (m, k), v in retrieval.items()
    ]
    run = RunScores(
        run_id=run_id,
        manifest=view.manifest,
        series=sorted(series, key=lambda s: RunScores.sort_key((s.metric, s.k))),
    )
    if evidence:
        run.results = dict(view.results)
        run.contexts = {key: list(a.context_ids) for key, a in view.answers.items()}
        run.questions, run.relevant = _testset_info(view)
    return run


def _unfinished(store: RunStore, run_id: str, what: str, allow: bool) -> list[str]:
    """Refuse an unfinished run unless ``allow``; then a warning for the top of the report."""
    status = store.manifest(run_id).status
    if status == "finished":
        return []
    why = _below_floor(store, run_id) if status == "failed" else None
    state = f"status {status}" + (f", {why}" if why else "")
    if not allow:
        raise ConfigError(
            f"{what} run {run_id} is not finished ({state}): its scores are partial; "
            "compare it anyway with --allow-unfinished"
        )
    return [
        f"the {what} run {run_id} is not finished ({state}): only what it scored is "
        "compared, and a missing query or k is not a regression"
    ]


def _below_floor(store: RunStore, run_id: str) -> str | None:
    """The coverage-floor line of a failed run (``ragjudge.judges.coverage.judging_failure``
    over its stored results: which judge, its coverage, its commonest failure), or None."""
    from ragjudge.judges.coverage import stored_judging_failure

    return stored_judging_failure(store.judge_result_rows(run_id))


def resolve_runs(
    store: RunStore,
    run: str,
    baseline: str | None,
    baseline_tag: str | None,
    *,
    allow_unfinished: bool = False,
) -> tuple[str, str, list[str]]:
    """(run id, baseline id, warnings). ``latest`` (as the run or the baseline) is the newest
    finished run and a baseline tag picks the newest finished run carrying it, unless
    ``allow_unfinished``; a run named directly that is not finished is refused unless
    ``allow_unfinished``; a run compared with itself (``--run latest --baseline latest``) is
    refused."""
    if (baseline is None) == (baseline_tag is None):
        raise ConfigError("give exactly one of --baseline RUN and --baseline-tag TAG")

    def resolved(ref: str) -> str:
        """``latest``: the newest finished run (for either side), unless ``allow_unfinished``."""
        if ref != "latest" or allow_unfinished:
            return store.resolve(ref)
        finished = [m.run_id for m in store.list_runs() if m.status == "finished"]
        if not finished:
            store.resolve("latest")  # an empty store says so
            raise ConfigError(
                f"no finished run in {store.location} (use --allow-unfinished to compare the "
                "newest run anyway)"
            )
        return finished[-1]

    run_id = resolved(run)
    if baseline is not None:
        base_id = resolved(baseline)
    else:
        tagged = [m for m in store.find_by_tag(str(baseline_tag)) if m.run_id != run_id]
        usable = [m for m in tagged if allow_unfinished or m.status == "finished"]
        if not usable:
            which = "finished run" if tagged else "run"
            raise ConfigError(f"no {which} other than {run_id} carries the tag {baseline_tag!r}")
        base_id = usable[0].run_id
    if base_id == run_id:
        raise ConfigError(
            f"--run {run} and --baseline {baseline} are the same run {run_id}: a run compared "
            "with itself shows nothing; name another baseline (a run id or --baseline-tag)"
        )
    warnings = _unfinished(store, run_id, "current", allow_unfinished)
    warnings += _unfinished(store, base_id, "baseline", allow_unfinished)
    return run_id, base_id, warnings


def newer_unfinished(store: RunStore, run_id: str) -> list[RunManifest]:
    """The runs started after ``run_id`` that did not finish (what ``latest`` skipped)."""
    started = store.manifest(run_id).started_at
    return [m for m in store.list_runs() if m.started_at > started and m.status != "finished"]


def deciders(run: RunScores, judge: str) -> str:
    """Which backends decided ``judge``'s results in ``run`` and how often ("llm 46%, offline
    54%" for a judge cascade; "llm" when one backend decided them all)."""
    backends = Counter(r.backend for (name, _, _), r in run.results.items() if name == judge)
    total = sum(backends.values())
    if len(backends) <= 1:
        return next(iter(backends), "no result")
    return ", ".join(f"{b} {n / total:.0%}" for b, n in backends.most_common())


def check_comparable(current: RunScores, baseline: RunScores, *, allow_partial: bool) -> list[str]:
    """Refuse runs on different data or judged by different judge versions, unless
    ``allow_partial``: then drop what differs, keep the shared part, and say so."""
    problems, notes = [], []
    cm, bm = current.manifest, baseline.manifest
    if cm and bm and cm.dataset_hash != bm.dataset_hash:
        problems.append(
            f"the runs use different data sets ({cm.dataset_name} {cm.dataset_hash[:12]} vs "
            f"{bm.dataset_name} {bm.dataset_hash[:12]})"
        )
        notes.append("data sets differ: only the queries both runs share are compared")
    cv, bv = current.judge_versions(), baseline.judge_versions()
    differing = sorted(j for j in set(cv) & set(bv) if cv[j] != bv[j])
    if differing:
        problems.append(
            "judge versions differ: " + ", ".join(f"{j} {bv[j]} -> {cv[j]}" for j in differing)
        )
        problems += [
            f"{j} decided by {deciders(baseline, j)} in the baseline, by "
            f"{deciders(current, j)} in the current run"
            for j in differing
            if deciders(baseline, j) != deciders(current, j)
        ]
        notes.append(f"not compared (judge version changed): {', '.join(differing)}")
    if problems and not allow_partial:
        raise ConfigError(
            "runs are not comparable: " + "; ".join(problems) + " (use --allow-partial to "
            "compare only the shared part)"
        )
    for run in (current, baseline):
        run.series = [s for s in run.series if s.metric not in differing]
    return notes


def stored_report(
    store: RunStore,
    run_id: str,
    base_id: str,
    *,
    thresholds: Thresholds | None = None,
    history: int = 10,
    headline_k: int | None = None,
    allow_partial: bool = False,
    warnings: Sequence[str] = (),
) -> Report:
    """The regression report of ``run_id`` against ``base_id``, with the last ``history`` runs
    on the same data set (up to the current run) for the trend: what ``ragjudge report`` and
    the ``ui`` compare page show."""
    current = load_run_scores(store, run_id)
    base = load_run_scores(store, base_id)
    notes = check_comparable(current, base, allow_partial=allow_partial)
    cm = store.manifest(run_id)
    past = [m for m in store.list_runs() if m.dataset_hash == cm.dataset_hash]
    ids = [m.run_id for m in past if m.started_at <= cm.started_at][-history:]
    if run_id not in ids:
        ids.append(run_id)
    runs = [current if i == run_id else load_run_scores(store, i, evidence=False) for i in ids]
    return build_report(
        current,
        base,
        thresholds=thresholds,
        history=runs,
        headline_k=headline_k,
        notes=notes,
        warnings=warnings,
    )
