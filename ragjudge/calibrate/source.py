"""Where judge results come from: a run in the run store, or a JSONL of ``JudgeResult``.

``RunData`` is the plain-data view the calibration area works on: the judge results (with item
ids ``f"{case_id}@k{k}"``), the answers by item id when known (for length and self-preference
probes and for spot-check sheets), and the run manifest when there is one.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ragjudge.schema import Answer, JudgeResult, RunManifest

from .join import load_results_jsonl


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
        """The model behind the run's judges (manifest ``models['judge']``), if recorded."""
        if self.manifest is None:
            return None
        return self.manifest.models.get("judge")

    def generator_models(self) -> dict[str, str]:
        """item id -> generating model, when the run records one (``models['generator']``)."""
        if self.manifest is None:
            return {}
        model = self.manifest.models.get("generator")
        if not model:
            return {}
        return dict.fromkeys(self.answers, model)


def from_results_file(path: str | Path) -> RunData:
    return RunData(source=str(path), results=load_results_jsonl(path))


def from_store(run: str, store_path: str | Path | None = None) -> RunData:
    """Load a run (full id, unique prefix, or ``latest``) from the run store."""
    from ragjudge.store import RunStore, item_id

    with RunStore(store_path) as store:
        run_id = store.resolve(run)
        manifest = store.manifest(run_id)
        results = [
            r.result.model_copy(update={"item_id": item_id(r.case_id, r.k)})
            for r in store.judge_results(run_id)
        ]
        answers = {item_id(a.case_id, a.k): a for a in store.answers(run_id)}
    return RunData(source=run_id, results=results, answers=answers, manifest=manifest)


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
