"""Export a stored run as one flat table: one row per (case, k).

Columns: ``run_id, case_id, k, item_id, answer, abstained, context_ids, generator,
answer_error``, then per judge ``<judge>_score`` / ``<judge>_status``, and per retrieval metric
its value; JSON Lines rows also carry ``evidence`` (judge -> the full ``JudgeResult`` as JSON).
The judges are the run's as configured (its manifest) together with any judge holding a stored
result, sorted, so every format has the same columns whatever the run stored: a judge without a
result for an item (a run killed before it judged) has empty cells, never a missing column. A
judge configured by import path gets its columns under the name its results carry, so only
once it has one. ``progress`` is the line that says a run is not finished and how much of its
judging is stored.

Formats: ``parquet``, ``csv``, ``jsonl``, ``hf`` (a ``datasets.Dataset`` saved to a folder with
``save_to_disk``; load it back with ``datasets.load_from_disk``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ragjudge.adapters import is_import_path
from ragjudge.errors import ConfigError
from ragjudge.store.base import RunStore, item_id
from ragjudge.store.view import RunView

FORMATS: tuple[str, ...] = ("parquet", "csv", "jsonl", "hf")


def export_judges(view: RunView) -> list[str]:
    """The judges an export has columns for (module docstring), sorted."""
    configured = {j for j in view.configured_judges if not is_import_path(j)}
    return sorted(configured | set(view.judges))


def run_rows(view: RunView, *, evidence: bool = False) -> list[dict[str, Any]]:
    """The run as rows (see the module docstring), ordered by case then k."""
    keys = set(view.answers) | {(c, k) for _, k, c in view.results}
    keys |= {(c, k) for _, k, c in view.retrieval}
    judges, metrics = export_judges(view), view.retrieval_metrics
    out = []
    for case_id, k in sorted(keys):
        a = view.answers.get((case_id, k))
        row: dict[str, Any] = {
            "run_id": view.run_id,
            "case_id": case_id,
            "k": k,
            "item_id": item_id(case_id, k),
            "answer": a.text if a else None,
            "abstained": a.abstained if a else None,
            "context_ids": json.dumps(a.context_ids) if a else None,
            "generator": a.generator if a else None,
            "answer_error": a.error if a else None,
        }
        for j in judges:
            key = (j, k, case_id)
            stored = key in view.results
            row[f"{j}_score"] = view.results.score(key) if stored else None
            row[f"{j}_status"] = view.results.status(key).value if stored else None
            if evidence and stored:
                row.setdefault("evidence", {})[j] = view.results[key].model_dump(mode="json")
        for m in metrics:
            row[m] = view.retrieval.get((m, k, case_id))
        out.append(row)
    return out


def progress(view: RunView) -> str | None:
    """``run R is interrupted: N of M judge results stored`` for a run not finished (None for a
    finished one): M is every configured judge at every configured k for every stored test case
    (the stored judges, ks and cases for a run stored without a sweep config)."""
    if view.manifest is None or view.manifest.status == "finished":
        return None
    judges = view.configured_judges or view.judges
    ks = view.configured_ks or {k for _, k in view.answers} | {k for _, k, _ in view.results}
    cases = view.testcases or view.cases
    expected = len(judges) * len(ks) * len(cases)
    return (
        f"run {view.run_id} is {view.manifest.status}: {len(view.results)} of {expected} "
        "judge results stored"
    )


def export_run(store: RunStore, run_id: str, fmt: str, out: Path) -> Path:
    """Write the run to ``out`` in ``fmt``; returns the path written."""
    return export_view(RunView.read(store, run_id), fmt, out)


def export_view(view: RunView, fmt: str, out: Path) -> Path:
    """Write the run read as ``view`` to ``out`` in ``fmt``; returns the path written."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    rows = run_rows(view, evidence=fmt == "jsonl")
    if not rows:
        raise ConfigError(f"run {view.run_id} has no rows to export yet")
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        with out.open("w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        return out
    import pandas as pd

    frame = pd.DataFrame(rows)
    if fmt == "csv":
        frame.to_csv(out, index=False)
    elif fmt == "parquet":
        frame.to_parquet(out, index=False)
    else:
        from ragjudge.io.hf import to_hf_dataset

        to_hf_dataset(frame.to_dict(orient="records")).save_to_disk(str(out))
    return out
