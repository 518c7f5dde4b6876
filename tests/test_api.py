"""The public API at the package root: evaluate() on every row source, custom judges (function
and class), the shared pre-check every backend goes through, the criteria judge against the
local test server, and a cheap ``import ragjudge``."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

import ragjudge
from ragjudge.errors import ConfigError, DataError
from ragjudge.judges.base import conform, precheck
from ragjudge.judges.llm.criteria import CriteriaJudge
from ragjudge.judges.runner import run_judges
from ragjudge.schema import JudgeInput, JudgeResult, JudgeStatus
from ragjudge.sweep.stages import StageFailedError

ROWS = [
    {
        "id": "a",
        "question": "Where is tin mined?",
        "answer": "Tin is mined in Bolivia [1].",
        "contexts": ["Tin is mined in Bolivia and China."],
        "reference": "Tin is mined in Bolivia.",
    },
    {
        "id": "b",
        "question": "Who painted the ceiling?",
        "answer": "Thank you for asking: Michelangelo painted it.",
        "contexts": ["Michelangelo painted the Sistine Chapel ceiling."],
    },
    {
        "id": "c",
        "question": "How tall is the tower?",
        "answer": "It is 300 metres tall.",
        "contexts": ["   ", "\n"],
    },
]


@ragjudge.judge(name="cites", needs=("answer",))
def cites(answer: str) -> tuple[float, str]:
    return float("[" in answer), "has a [n] marker" if "[" in answer else "no marker"


@ragjudge.judge(name="grounded")
async def grounded(answer: str, contexts: list[str]) -> float:
    words = set(answer.lower().split())
    return max(len(words & set(c.lower().split())) / len(words) for c in contexts)


def test_evaluate_list_dataframe_dataset_and_file_agree(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in ROWS), encoding="utf-8")
    from datasets import Dataset

    sources = [ROWS, pd.DataFrame(ROWS), Dataset.from_list(ROWS), path]
    results = [ragjudge.evaluate(s, judges=[cites, grounded], backend="offline") for s in sources]
    first = results[0]
    assert [i.id for i in first.items] == ["a", "b", "c"]
    assert [r.score for r in first.results["cites"]] == [1.0, 0.0, 0.0]
    assert first.results["cites"][0].evidence.explanation == "has a [n] marker"
    # row c has only blank contexts: the shared pre-check, not the function, decides
    assert first.results["grounded"][2].status == JudgeStatus.invalid_input
    agg = first.aggregates["grounded"]
    assert (agg.n_scored, agg.n_total) == (2, 3) and agg.ci_low <= agg.mean <= agg.ci_high
    for other in results[1:]:
        assert other.aggregates == first.aggregates
    df = first.to_pandas()
    assert list(df["cites"]) == [1.0, 0.0, 0.0] and df.loc[2, "grounded_status"] == "invalid_input"
    ds = first.to_hf()
    assert ds.num_rows == 3 and ds[1]["cites_status"] == "ok"
    assert [i.id for i, _ in first.worst("grounded", 2)] == ["c", "b"]  # unscored first


def test_bad_rows_name_the_row():
    with pytest.raises(DataError, match="<rows>:2: row has no 'answer'"):
        ragjudge.evaluate([ROWS[0], {"question": "q", "contexts": ["x"]}], judges=[cites])
    with pytest.raises(DataError, match="repeats"):
        ragjudge.evaluate([ROWS[0], ROWS[0]], judges=[cites])
    with pytest.raises(ConfigError, match="not item fields"):
        ragjudge.judge(lambda answr: 1.0)


def test_function_judge_scores_out_of_range_and_exceptions_are_typed():
    @ragjudge.judge(name="broken", needs=("answer",))
    def broken(answer: str) -> float:
        if "Tin" in answer:
            return 1.5
        raise RuntimeError("bug in my judge")

    with pytest.raises(StageFailedError, match=r"broken scored 0/2 \(0%") as failed:
        ragjudge.evaluate(ROWS[:2], judges=[broken])
    res = failed.value.partial.results["broken"]
    assert res[0].status == JudgeStatus.parse_error and "outside [0, 1]" in (res[0].error or "")
    assert res[1].status == JudgeStatus.judge_error and "bug in my judge" in (res[1].error or "")
    assert broken("Tin") == 1.5  # still callable as the plain function


class Polite(ragjudge.JudgeBase):
    """A class judge: declarations as class attributes, ``_judge`` after the pre-check."""

    name = "polite_words"
    needs_contexts = False

    async def _judge(self, item: JudgeInput) -> JudgeResult:
        return self.result(item, JudgeStatus.ok, score=float("thank" in item.answer.lower()))


class Legacy:
    """An older judge declaring only name, version and requires_reference."""

    name, version, requires_reference = "legacy", "v0", True

    async def judge(self, item: JudgeInput) -> JudgeResult:
        return JudgeResult(
            judge=self.name,
            judge_version=self.version,
            backend="custom",
            item_id=item.id,
            score=1.0,
            status=JudgeStatus.ok,
        )


async def test_one_precheck_for_every_judge_kind(llm_env):
    blank = JudgeInput(id="x", question="q?", answer="an answer", contexts=[" ", "\t"])
    kinds = [
        Polite(),
        conform(Legacy()),
        ragjudge.judge(lambda contexts: 1.0, name="ctx"),
        ragjudge.CriteriaJudge("sourced", "Does it cite a source?", needs=("contexts",)),
    ]
    out = await run_judges(kinds, [blank], progress=False)
    assert out["legacy"][0].status == JudgeStatus.skipped_missing_reference
    assert out["ctx"][0].status == JudgeStatus.invalid_input
    assert out["sourced"][0].status == JudgeStatus.invalid_input  # no call was made
    assert out["polite_words"][0].status == JudgeStatus.ok  # it does not read contexts
    assert llm_env.stats()["chat_requests"] == 0
    assert precheck(kinds[0], blank.model_copy(update={"answer": "  "})) is not None
    with pytest.raises(ConfigError, match="not a judge"):
        conform(object())


def test_criteria_judge_verdicts_evidence_and_version(llm_env):
    cite = CriteriaJudge("sourced", "Does the answer cite a source?")
    polite = CriteriaJudge("polite", "Is the answer polite?")
    res = ragjudge.evaluate(ROWS[:2], judges=[cite, polite])
    s = res.results["sourced"]
    assert [r.score for r in s] == [1.0, 0.0] and s[0].backend == "llm"
    assert s[0].evidence.claims[0].claim == "[1]" and s[0].evidence.claims[0].verdict == "supported"
    assert "lacks" in (s[1].evidence.explanation or "") and s[1].usage.calls == 1
    assert [r.score for r in res.results["polite"]] == [0.0, 1.0]
    assert llm_env.stats()["by_template"] == {"judges/criteria@v1": 4}
    # a changed criterion is a changed judge; the same one keeps its version
    assert CriteriaJudge("sourced", "Does it cite?").version != cite.version
    assert CriteriaJudge("x", "Does the answer cite a source?").version == cite.version


def test_import_is_cheap_and_sweep_stays_callable():
    code = (
        "import sys, ragjudge; heavy = [m for m in ('torch', 'openai', 'pydantic', "
        "'sentence_transformers', 'numpy') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    import ragjudge.sweep.run as run_module

    assert callable(ragjudge.sweep) and ragjudge.sweep.run is run_module
    assert ragjudge.TestCase.__name__ == "TestCase" and "evaluate" in dir(ragjudge)
