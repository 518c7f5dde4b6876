"""Export a stored run as one flat table: one row per (case, k).

Columns: ``run_id, case_id, k, item_id, answer, abstained, context_ids, generator,
answer_error``, then per judge ``<judge>_score`` / ``<judge>_status``, and per retrieval metric
its value; JSON Lines rows also carry ``evidence`` (judge -> the full ``JudgeResult`` as JSON).
Formats: ``parquet``, ``csv``, ``jsonl``, ``hf`` (a ``datasets.Dataset`` saved to a folder with
``save_to_disk``; load it back with ``datasets.load_from_disk``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from ragjudge.errors import ConfigError
from ragjudge.store.sqlite import RunStore, item_id

ExportFormat = Literal["parquet", "csv", "jsonl", "hf"]
FORMATS: tuple[str, ...] = ("parquet", "csv", "jsonl", "hf")


def run_rows(store: RunStore, run_id: str, *, evidence: bool = False) -> list[dict[str, Any]]:
    """The run as rows (see the module docstring), ordered by case then k."""
    rows: dict[tuple[str, int], dict[str, Any]] = {}

    def row(case_id: str, k: int) -> dict[str, Any]:
        if (case_id, k) not in rows:
            rows[(case_id, k)] = {
                "run_id": run_id,
                "case_id": case_id,
                "k": k,
                "item_id": item_id(case_id, k),
                "answer": None,
                "abstained": None,
                "context_ids": None,
                "generator": None,
                "answer_error": None,
            }
        return rows[(case_id, k)]

    for a in store.answers(run_id):
        r = row(a.case_id, a.k)
        r.update(
            answer=a.text,
            abstained=a.abstained,
            context_ids=json.dumps(a.context_ids),
            generator=a.generator,
            answer_error=a.error,
        )
    judges: set[str] = set()
    for jr in store.judge_results(run_id):
        judges.add(jr.judge)
        r = row(jr.case_id, jr.k)
        r[f"{jr.judge}_score"] = jr.result.score
        r[f"{jr.judge}_status"] = jr.result.status.value
        if evidence:
            r.setdefault("evidence", {})[jr.judge] = jr.result.model_dump(mode="json")
    metrics: set[str] = set()
    for m in store.retrieval_metrics(run_id):
        metrics.add(m.metric)
        row(m.case_id, m.k)[m.metric] = m.value
    columns = [f"{j}_{p}" for j in sorted(judges) for p in ("score", "status")] + sorted(metrics)
    out = []
    for key in sorted(rows):
        r = rows[key]
        for c in columns:
            r.setdefault(c, None)
        out.append(r)
    return out


def export_run(store: RunStore, run_id: str, fmt: str, out: Path) -> Path:
    """Write the run to ``out`` in ``fmt``; returns the path written."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    rows = run_rows(store, run_id, evidence=fmt == "jsonl")
    if not rows:
        raise ConfigError(f"run {run_id} has no rows to export yet")
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
