"""Where judge results come from: a run in the run store, or a JSONL of ``JudgeResult``.

``RunData`` is the plain-data view the calibration area works on: the judge results (with item
ids ``f"{case_id}@k{k}"``), the answers by item id when known (for length and self-preference
probes and for spot-check sheets), and the run manifest when there is one.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragjudge.errors import DataError, first_problem
from ragjudge.io.rows import iter_jsonl
from ragjudge.judges.items import item_from_row
from ragjudge.schema import Answer, JudgeInput, JudgeResult, RunManifest

if TYPE_CHECKING:
    from ragjudge.store.view import RunView


class RunData(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str
    """Run id, or the results file path."""
    results: list[JudgeResult]
    answers: dict[str, Answer] = Field(default_factory=dict)
    manifest: RunManifest | None = None
    questions: dict[str, str] = Field(default_factory=dict)
    """case id -> question text, when known."""
    references: dict[str, str] = Field(default_factory=dict)
    """case id -> reference answer, when known."""

    def judge_model(self) -> str | None:
        """The model behind the run's judges (``RunModels.judge``), if recorded."""
        if self.manifest is None:
            return None
        return self.manifest.used_models().judge

    def generator_models(self) -> dict[str, str]:
        """item id -> generating model, when the run records one (``RunModels.generator``)."""
        if self.manifest is None:
            return {}
        model = self.manifest.used_models().generator
        if not model:
            return {}
        return dict.fromkeys(self.answers, model)


def _cell_result(item: str, name: str, cell: dict[str, Any]) -> JudgeResult:
    """One ``judges`` cell of a ``ragjudge judge`` output row as a ``JudgeResult``."""
    return JudgeResult(
        judge=name,
        judge_version=str(cell.get("version", "")),
        backend=cell.get("backend", "custom"),
        item_id=item,
        score=cell.get("score"),
        status=cell.get("status", "ok"),
        evidence=cell.get("evidence") or {},
        usage=cell.get("usage") or {},
        error=cell.get("error"),
    )


def _answer(
    row: dict[str, Any], item: str, path: Path, line: int
) -> tuple[Answer, JudgeInput] | None:
    """The answer of a ``ragjudge judge`` output row, its input fields read as ``ragjudge judge``
    reads them (``item_from_row``: a CSV cell's JSON list of contexts is a list); ``None`` when
    the row has no answer or its item id names no case and k."""
    if not isinstance(row.get("answer"), str):
        return None
    case_id, k = row.get("case_id"), row.get("k")
    if case_id is None or k is None:
        case_id, sep, k_text = item.rpartition("@k")
        if not sep or not k_text.isdigit():
            return None
        k = int(k_text)
    judged = item_from_row(row, path, line)
    answer = Answer(
        case_id=str(case_id),
        k=int(k),
        text=judged.answer,
        context_ids=judged.context_ids or [],
        contexts=judged.contexts,
        generator=str(row.get("generator") or "unknown"),
    )
    return answer, judged


def from_results_file(path: str | Path) -> RunData:
    """Judge results from JSONL, one record per line, in any of three shapes:

    - a ``ragjudge judge --output`` row: ``{"id", "question", "answer", "contexts", ...,
      "judges": {name: {"score", "status", "evidence", "error", "usage", "backend",
      "version"}}}`` (the answers, questions and references are kept too);
    - a bare ``JudgeResult``;
    - ``{"result": JudgeResult, ...}`` (a run store's ``StoredJudgeResult``).

    A malformed line is a ``DataError`` with its line number.
    """
    p = Path(path)
    if not p.is_file():
        raise DataError("results file not found", path=p)
    data = RunData(source=str(p), results=[])
    for line_no, obj in iter_jsonl(p):
        try:
            if isinstance(obj.get("judges"), dict):
                item = str(obj["id"])
                for name, cell in obj["judges"].items():
                    data.results.append(_cell_result(item, str(name), cell))
                found = _answer(obj, item, p, line_no)
                if found is not None:
                    answer, judged = found
                    data.answers[item] = answer
                    data.questions[answer.case_id] = judged.question
                    if judged.reference is not None:
                        data.references[answer.case_id] = judged.reference
                continue
            if isinstance(obj.get("result"), dict):
                obj = obj["result"]
            data.results.append(JudgeResult.model_validate(obj))
        except (ValidationError, KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, DataError):
                raise
            raise DataError(f"not a judge result: {_why(exc)}", path=p, line=line_no) from exc
    return data


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return first_problem(exc)
    if isinstance(exc, KeyError):
        return f"missing {exc}"
    return str(exc)


def from_store(run: str, store_path: str | Path | None = None) -> RunData:
    """Load a run (full id, unique prefix, or ``latest``) from the run store, with the
    questions and references of its stored test cases."""
    from ragjudge.store import open_store
    from ragjudge.store.view import RunView

    with open_store(store_path, must_exist=True) as store:
        view = RunView.read(store, store.resolve(run))
    return from_view(view)


def from_view(view: RunView) -> RunData:
    """A stored run, read whole (``RunView``), as the items calibration reads."""
    from ragjudge.store import item_id

    return RunData(
        source=view.run_id,
        results=[
            r.model_copy(update={"item_id": item_id(case_id, k)})
            for (_, k, case_id), r in view.results.items()
        ],
        answers={item_id(c, k): a for (c, k), a in view.answers.items()},
        manifest=view.manifest,
        questions=view.questions,
        references=view.references,
    )


def attach_testset(data: RunData, folder: str | Path) -> RunData:
    """A copy of ``data`` with the questions and references of a test set folder."""
    from ragjudge.io import load_testset

    testset = load_testset(folder)
    return data.model_copy(
        update={
            "questions": {c.id: c.question for c in testset.cases},
            "references": {c.id: c.reference for c in testset.cases if c.reference},
        }
    )
