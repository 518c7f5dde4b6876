"""``ragjudge.evaluate``: judge rows of (question, answer, contexts[, reference]) in Python.

Rows come from a list of dicts, a pandas ``DataFrame``, a Hugging Face ``Dataset`` or a file
(JSONL, JSON, CSV; ``ragjudge.judges.items``), with the fields of ``ragjudge judge``'s input;
a bad row is a ``DataError`` naming it. Judges are registered names (built for ``backend``),
``Judge`` objects or ``@ragjudge.judge`` functions, run concurrently by
``ragjudge.judges.runner.run_judges`` (shared pre-check, a raising judge becomes a typed
``judge_error`` result naming the exception and the judge's line). Each judge's aggregate is
``mean`` with its 95% percentile-bootstrap interval and coverage ``n_scored / n_total``
(``ragjudge.stats.aggregate``), exactly as the CLI prints.
A judge whose coverage is below the floor (``ragjudge.sweep.stages.judging_failure``; every
call failing is always below it) raises ``StageFailedError`` naming it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from ragjudge.errors import ConfigError, DataError
from ragjudge.judges.registry import JUDGE_NAMES
from ragjudge.schema import Aggregate, JudgeInput, JudgeResult, SpendEstimate, TokenUsage

DEFAULT_JUDGES = JUDGE_NAMES
"""The judges ``evaluate`` and ``sweep`` run when none are named: the five built-ins."""


class EvaluationResult(BaseModel):
    """Per-row results and per-judge aggregates of one ``evaluate`` call."""

    model_config = ConfigDict(frozen=True)

    items: list[JudgeInput]
    results: dict[str, list[JudgeResult]]
    """judge name -> one result per item, in item order."""
    aggregates: dict[str, Aggregate]
    """judge name -> mean, 95% bootstrap interval and coverage."""
    backend: str
    preflight: list[SpendEstimate] = []
    """What each judge that spends selectively (the cascade) expected to spend, said before
    the run (``ragjudge.protocols.SpendingJudge``)."""

    @property
    def judges(self) -> list[str]:
        return list(self.results)

    @property
    def usage(self) -> TokenUsage:
        """Tokens, calls and cost summed over every result."""
        return sum((r.usage for rs in self.results.values() for r in rs), TokenUsage())

    def worst(self, judge: str, n: int = 5) -> list[tuple[JudgeInput, JudgeResult]]:
        """The ``n`` rows ``judge`` scored lowest, unscored rows (typed status) first; a judge
        the result does not have is a ``ConfigError`` naming those it has."""
        if judge not in self.results:
            raise ConfigError(
                f"no judge {judge!r} in the result; it has: {', '.join(self.results)}"
            )
        pairs = list(zip(self.items, self.results[judge], strict=True))
        return sorted(pairs, key=lambda p: -1.0 if p[1].score is None else p[1].score)[:n]

    def to_pandas(self) -> Any:
        """One row per item: its fields, then ``<judge>`` (score, None when unscored),
        ``<judge>_status`` and ``<judge>_error`` per judge."""
        import pandas as pd

        return pd.DataFrame(self._records())

    def to_hf(self) -> Any:
        """The rows of ``to_pandas`` as a Hugging Face ``datasets.Dataset``."""
        import importlib

        datasets = importlib.import_module("datasets")
        return datasets.Dataset.from_list(self._records())

    def _records(self) -> list[dict[str, Any]]:
        out = []
        for i, item in enumerate(self.items):
            row: dict[str, Any] = item.model_dump()
            for name, rs in self.results.items():
                row[name] = rs[i].score
                row[f"{name}_status"] = rs[i].status.value
                row[f"{name}_error"] = rs[i].error
            out.append(row)
        return out

    def __str__(self) -> str:
        lines = [f"{len(self.items)} rows, backend {self.backend}"]
        lines += [f"  pre-flight: {est.describe()}" for est in self.preflight]
        for name, a in self.aggregates.items():
            mean = "—" if a.mean is None else f"{a.mean:.3f} [{a.ci_low:.3f}, {a.ci_high:.3f}]"
            lines.append(f"  {name}: {mean} ({a.n_scored}/{a.n_total} scored)")
        return "\n".join(lines)


def _plain(value: Any) -> Any:
    """numpy arrays and scalars (pandas, parquet) as plain Python values; a missing cell
    (NaN in a DataFrame) as None."""
    value = value.tolist() if hasattr(value, "tolist") else value
    return None if isinstance(value, float) and math.isnan(value) else value


def load_rows(data: Any) -> list[JudgeInput]:
    """``data`` (module docstring) as validated judge inputs, ids unique."""
    from ragjudge.judges.items import item_from_row, read_items

    if isinstance(data, str | Path):
        return read_items(data)[1]
    if hasattr(data, "to_dict") and hasattr(data, "columns"):  # a pandas DataFrame
        rows: Iterable[Mapping[str, Any]] = data.to_dict("records")
    elif hasattr(data, "to_list") and hasattr(data, "features"):  # a datasets.Dataset
        rows = data.to_list()
    elif isinstance(data, Sequence) and not isinstance(data, str | bytes):
        rows = data
    else:
        raise DataError(
            f"cannot read rows from {type(data).__name__}: pass a list of dicts, a pandas "
            "DataFrame, a Hugging Face Dataset or a file path"
        )
    where = Path("<rows>")
    items: list[JudgeInput] = []
    seen: set[str] = set()
    for i, row in enumerate(rows, start=1):
        if not isinstance(row, Mapping):
            raise DataError(f"row {i} is a {type(row).__name__}, not a mapping", path=where)
        item = item_from_row({k: _plain(v) for k, v in row.items()}, where, i)
        if item.id in seen:
            raise DataError(f"id {item.id!r} repeats an earlier row", path=where, line=i)
        seen.add(item.id)
        items.append(item)
    if not items:
        raise DataError("no rows", path=where)
    return items


def build(
    judges: Iterable[Any] | None,
    backend: str | None,
    concurrency: int,
    options: Mapping[str, Any] | None = None,
) -> list[Any]:
    """Judges from names (built for ``backend`` with ``options``), ``Judge`` objects and judge
    functions."""
    from ragjudge.judges.base import conform
    from ragjudge.judges.registry import build_judges, default_backend

    if isinstance(judges, str):  # one name, not its letters
        judges = [judges]
    specs = list(judges) if judges is not None else list(DEFAULT_JUDGES)
    names = [s for s in specs if isinstance(s, str)]
    built = iter(
        build_judges(names, backend or default_backend(), concurrency, options) if names else []
    )
    return [next(built) if isinstance(s, str) else conform(s) for s in specs]


def evaluate(
    data: Any,
    judges: Iterable[Any] | None = None,
    *,
    backend: str | None = None,
    concurrency: int | None = None,
    progress: bool = False,
    seed: int = 0,
    options: Mapping[str, Any] | None = None,
    min_coverage: float | None = None,
) -> EvaluationResult:
    """Judge every row of ``data`` with ``judges`` (default: the five built-ins) on
    ``backend`` (``offline``, ``llm``, ``ragas``, ``cascade``; default ``llm`` when an endpoint
    is configured, else ``offline``); ``options`` go to every named judge's factory (the
    cascade's band: ``low``, ``high``, ``platt``); ``min_coverage`` is the coverage floor
    (default ``RAGJUDGE_MIN_COVERAGE``, else ``ragjudge.toml``'s ``[judges] min_coverage``, else
    0.5; a judge that scored nothing is always below it); below it ``StageFailedError`` is
    raised, its ``partial`` holding the result. See the module docstring."""
    from ragjudge.adapters import run_sync
    from ragjudge.judges.coverage import coverage_floor
    from ragjudge.judges.registry import default_backend
    from ragjudge.judges.runner import estimate_spend, run_judges
    from ragjudge.llm import preflight_judges
    from ragjudge.llm.settings import resolve_concurrency
    from ragjudge.stats import aggregate
    from ragjudge.sweep.stages import StageFailedError, judging_failure

    concurrency = resolve_concurrency(concurrency)
    if concurrency < 1:
        raise ConfigError(f"concurrency={concurrency}: at least 1 call in flight is needed")
    if min_coverage is None:
        coverage_floor()  # a bad floor is refused before any work, not after the calls are paid
    elif not 0.0 <= min_coverage <= 1.0:  # NaN too
        raise ConfigError(f"min_coverage={min_coverage!r} is not a share between 0 and 1")
    items = load_rows(data)
    chosen = backend or default_backend()
    built = build(judges, chosen, concurrency, options)
    clash = sorted({j.name for j in built} & set(JudgeInput.model_fields))
    if clash:  # to_pandas() would write the judge's scores over the rows' own column
        raise ConfigError(
            f"judge name {clash[0]!r} is also a field of the rows "
            f"({', '.join(JudgeInput.model_fields)}): give the judge another name"
        )
    run_sync(lambda: preflight_judges(built))
    preflight = run_sync(lambda: estimate_spend(built, items))
    results = run_sync(lambda: run_judges(built, items, concurrency=concurrency, progress=progress))
    out = EvaluationResult(
        items=items,
        results=results,
        aggregates={n: aggregate(rs, seed=seed) for n, rs in results.items()},
        backend=chosen,
        preflight=preflight,
    )
    failure = judging_failure(results, min_coverage)
    if failure is not None:
        err = StageFailedError(failure)
        err.partial = out
        raise err
    return out
