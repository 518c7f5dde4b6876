"""Judge input and output rows (the files of ``ragjudge judge`` and ``ragjudge generate``).

Input row (JSONL, JSON array or CSV via ``ragjudge.io.rows``): ``question`` (str),
``answer`` (str; an empty string is allowed and judged ``invalid_input`` by answer judges),
``contexts`` (list of str, ranked best first), optional ``reference`` (str or null), ``id``
(default: ``row-<line>``) and ``context_ids`` (list of str). A missing or mistyped field is a
``DataError`` naming file and line; duplicate ids too.

Output row: the input fields plus ``judges``: judge name -> ``{score, status, evidence,
error, usage}`` (evidence as in ``ragjudge.schema.Evidence``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragjudge.errors import DataError
from ragjudge.prompts import cap_texts
from ragjudge.schema import Answer, JudgeInput, JudgeResult, TestCase


def cap_item(item: JudgeInput, per_text: int, total: int) -> tuple[JudgeInput, dict[str, float]]:
    """``item`` with its contexts, answer and reference cut (``cap_texts``) and the features
    recording the cut (empty when nothing was cut): ``truncated`` = 1, ``contexts_truncated``,
    ``context_chars_dropped``, ``answer_chars_dropped``, ``reference_chars_dropped``."""
    contexts, n_cut, ctx_dropped = cap_texts(item.contexts, per_text, total)
    (answer,), _, ans_dropped = cap_texts([item.answer], per_text)
    reference, ref_dropped = item.reference, 0
    if reference is not None:
        (reference,), _, ref_dropped = cap_texts([reference], per_text)
    if not (n_cut or ans_dropped or ref_dropped):
        return item, {}
    features = {
        "truncated": 1.0,
        "contexts_truncated": float(n_cut),
        "context_chars_dropped": float(ctx_dropped),
        "answer_chars_dropped": float(ans_dropped),
        "reference_chars_dropped": float(ref_dropped),
    }
    capped = item.model_copy(
        update={"contexts": contexts, "answer": answer, "reference": reference}
    )
    return capped, features


def record_truncation(result: JudgeResult, features: Mapping[str, float]) -> JudgeResult:
    """``result`` with the cut of its input added to ``evidence.features``."""
    if not features:
        return result
    evidence = result.evidence.model_copy(
        update={"features": {**result.evidence.features, **features}}
    )
    return result.model_copy(update={"evidence": evidence})


def _str_list(value: Any, field: str, path: Path, line: int) -> list[str]:
    if isinstance(value, str):
        try:
            value = json.loads(value)  # CSV cells hold JSON lists
        except json.JSONDecodeError:
            raise DataError(f"{field!r} must be a list of strings", path=path, line=line) from None
    if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
        raise DataError(f"{field!r} must be a list of strings", path=path, line=line)
    return value


def item_from_row(row: Mapping[str, Any], path: Path, line: int) -> JudgeInput:
    """One validated ``JudgeInput``; a bad row raises ``DataError`` at ``path:line``."""
    for field in ("question", "answer", "contexts"):
        if row.get(field) is None:
            raise DataError(f"row has no {field!r}", path=path, line=line)
    question, answer = row["question"], row["answer"]
    if not isinstance(question, str) or not question.strip():
        raise DataError("'question' must be a non-empty string", path=path, line=line)
    if not isinstance(answer, str):
        raise DataError("'answer' must be a string", path=path, line=line)
    contexts = _str_list(row["contexts"], "contexts", path, line)
    if not contexts:
        raise DataError(
            "'contexts' is empty: a row needs at least one context", path=path, line=line
        )
    reference = row.get("reference")
    if reference is not None and not isinstance(reference, str):
        raise DataError("'reference' must be a string or null", path=path, line=line)
    context_ids = row.get("context_ids")
    if context_ids is not None:
        context_ids = _str_list(context_ids, "context_ids", path, line)
        if len(context_ids) != len(contexts):
            raise DataError(
                f"{len(context_ids)} context_ids for {len(contexts)} contexts", path=path, line=line
            )
    item_id = row.get("id")
    return JudgeInput(
        id=str(item_id) if item_id not in (None, "") else f"row-{line}",
        question=question,
        answer=answer,
        contexts=contexts,
        context_ids=context_ids,
        reference=reference if reference and reference.strip() else None,
    )


def read_items(path: str | Path) -> tuple[list[dict[str, Any]], list[JudgeInput]]:
    """The raw rows of ``path`` and, for each, its validated ``JudgeInput``."""
    from ragjudge.io.rows import iter_rows

    p = Path(path)
    rows: list[dict[str, Any]] = []
    items: list[JudgeInput] = []
    seen: dict[str, int] = {}
    for line, row in iter_rows(p):
        item = item_from_row(row, p, line)
        if item.id in seen:
            raise DataError(
                f"id {item.id!r} repeats the row on line {seen[item.id]}", path=p, line=line
            )
        seen[item.id] = line
        rows.append(dict(row))
        items.append(item)
    if not items:
        raise DataError("no rows", path=p)
    return rows, items


def result_cell(result: JudgeResult) -> dict[str, Any]:
    return {
        "score": result.score,
        "status": result.status.value,
        "evidence": result.evidence.model_dump(mode="json", exclude_defaults=True),
        "error": result.error,
        "usage": result.usage.model_dump(mode="json"),
        "backend": result.backend,
        "version": result.judge_version,
    }


def output_rows(
    rows: Sequence[Mapping[str, Any]],
    items: Sequence[JudgeInput],
    results: Mapping[str, Sequence[JudgeResult]],
) -> list[dict[str, Any]]:
    """Each input row (its own fields kept) with ``id`` and ``judges`` -> name -> result; the
    contexts (and context ids) as the lists they were read as (a CSV cell holds a JSON list)."""
    out = []
    for i, item in enumerate(items):
        row = dict(rows[i])
        row["id"] = item.id
        row["contexts"] = item.contexts
        if item.context_ids is not None:
            row["context_ids"] = item.context_ids
        row["judges"] = {name: result_cell(rs[i]) for name, rs in results.items()}
        out.append(row)
    return out


def case_row(case: TestCase, answer: Answer) -> dict[str, Any]:
    """The ``ragjudge judge`` input row for one generated answer."""
    row: dict[str, Any] = {
        "id": f"{case.id}@k{answer.k}",
        "case_id": case.id,
        "k": answer.k,
        "question": case.question,
        "answer": answer.text,
        "contexts": answer.contexts,
        "context_ids": answer.context_ids,
        "reference": case.reference,
        "citations": answer.citations,
        "abstained": answer.abstained,
        "generator": answer.generator,
    }
    if answer.error:
        row["error"] = answer.error
    return row


def write_jsonl(rows: Sequence[Mapping[str, Any]], path: str | Path) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
