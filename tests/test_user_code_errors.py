"""Code the user supplied that raises is blamed on that code, never on the LLM endpoint or on
ragjudge: a judge whose own code raises is a ``judge_error`` result (not ``provider_error``)
naming the exception and the judge's file:line, judged again on resume; a retriever or
generator that raises is one error line naming the part, the exception and the file:line of the
user's code (exit code 2 from the CLI, a ``RagjudgeError`` from Python), and a run it stops is
stored as ``failed`` and resumes once the code is fixed."""

from __future__ import annotations

import importlib
import json
import re
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import ragjudge
from ragjudge.cli import main
from ragjudge.errors import DataError, RagjudgeError, UserCodeError
from ragjudge.schema import Document, JudgeInput, JudgeResult, JudgeStatus, TestCase, TestSet
from ragjudge.store import open_store
from ragjudge.sweep.stages import StageFailedError

PARTS = """
import json
import os

import ragjudge

DOCS = {"tin": "Tin is mined in Bolivia.", "copper": "Copper is mined in Chile."}


def broken(part):
    return part in os.environ.get("PARTS_BROKEN", "").split(",")


def retrieve(question, k):
    if broken("retrieve"):
        raise ValueError("boom in retrieve")  # RETRIEVE_LINE
    return list(DOCS.items())[:k]


class Searcher:
    name = "searcher"
    version = "1"

    def index(self, documents):
        pass

    def retrieve(self, queries, k):
        if broken("search"):
            raise ValueError("boom in search")  # SEARCH_LINE
        from ragjudge.schema import Ranking, ScoredDoc

        docs = [ScoredDoc(doc_id=d, score=1.0) for d in DOCS][:k]
        return {q: Ranking(query_id=q, docs=docs) for q in queries}


searcher = Searcher()


def generate(question, contexts):
    if broken("generate"):
        raise ValueError("boom in generate")  # GENERATE_LINE
    return contexts[0]


@ragjudge.judge(name="fragile", version="1", needs=("answer",))
def fragile(answer):
    if broken("judge"):
        return json.loads(answer)  # JUDGE_LINE: the json library raises
    return 1.0
"""


class Parts:
    """``PARTS`` as a fresh module in ``folder`` (importable from the working directory)."""

    def __init__(self, folder: Path) -> None:
        self.name = f"parts_{uuid.uuid4().hex[:8]}"
        self.path = folder / f"{self.name}.py"
        self.path.write_text(PARTS)
        sys.path.insert(0, str(folder))
        self.module: ModuleType = importlib.import_module(self.name)
        self.folder = folder

    def line(self, marker: str) -> int:
        """The line of ``PARTS`` tagged ``marker``."""
        lines = self.path.read_text().splitlines()
        return next(i for i, text in enumerate(lines, 1) if marker in text)

    def where(self, marker: str, function: str) -> str:
        """``file:line in function`` as an error names the tagged line (the test runs in the
        module's folder, so the file is named relative to it)."""
        return f"{self.path.name}:{self.line(marker)} in {function}"


@pytest.fixture
def parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Parts]:
    """The parts module; the test breaks a part with ``PARTS_BROKEN=part,...``."""
    monkeypatch.chdir(tmp_path)
    made = Parts(tmp_path)
    yield made
    sys.path.remove(str(tmp_path))
    sys.modules.pop(made.name, None)


def write_dataset(folder: Path) -> None:
    (folder / "qrels").mkdir(parents=True)
    docs = [{"_id": "tin", "text": "Tin is mined in Bolivia."}]
    docs.append({"_id": "copper", "text": "Copper is mined in Chile."})
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    queries = [{"_id": "q1", "text": "Where is tin mined?", "reference": "In Bolivia."}]
    queries.append({"_id": "q2", "text": "Where is copper mined?", "reference": "In Chile."})
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\ttin\t1\n")


def sweep_cli(
    parts: Parts, capsys: pytest.CaptureFixture[str], *options: str, **kinds: str
) -> tuple[int, str]:
    """``ragjudge sweep`` with ``options`` on a config naming the parts' ``retriever``,
    ``generator`` and ``judge`` (import paths into the parts module); exit code and stderr (on
    one line)."""
    if not (parts.folder / "data").exists():
        write_dataset(parts.folder / "data")
    p = parts.name
    cfg = parts.folder / "sweep.yaml"
    cfg.write_text(
        "dataset: {path: data}\n"
        f"retriever: {{kind: '{p}:{kinds.get('retriever', 'retrieve')}'}}\n"
        f"generator: {{kind: '{p}:{kinds.get('generator', 'generate')}'}}\n"
        f"judges: {{names: ['{p}:{kinds.get('judge', 'fragile')}']}}\n"
        "ks: [1, 2]\n"
    )
    with pytest.raises(SystemExit) as exc:
        main(["sweep", "--config", str(cfg), "--out", str(parts.folder / "out"), *options])
    return int(exc.value.code or 0), " ".join(capsys.readouterr().err.split())


def only_run(status: str) -> str:
    """The id of the one stored run, checked to have ``status``."""
    with open_store() as store:
        (run,) = store.list_runs()
    assert run.status == status
    return run.run_id


# ----------------------------------------------------------------------------- judges


class Exploding:
    """A judge object whose own code raises (in a helper it calls)."""

    name, version, requires_reference = "exploding", "v0", False

    def _count(self, item: JudgeInput) -> int:
        return {"a": 1}[item.id]  # EXPLODING_LINE

    async def judge(self, item: JudgeInput) -> JudgeResult:
        self._count(item)
        raise AssertionError("unreachable")


ROWS = [
    {"id": "b", "question": "Where is tin mined?", "answer": "In Bolivia.", "contexts": ["x"]},
    {"id": "c", "question": "Where is tin mined?", "answer": "In Chile.", "contexts": ["y"]},
]


def test_a_raising_judge_is_a_judge_error_naming_where_its_code_raised() -> None:
    here = Path(__file__).read_text().splitlines()
    line = next(i for i, text in enumerate(here, 1) if "# EXPLODING_LINE" in text)
    with pytest.raises(StageFailedError) as failed:
        ragjudge.evaluate(ROWS, judges=[Exploding()])
    results = failed.value.partial.results["exploding"]
    assert [r.status for r in results] == [JudgeStatus.judge_error] * 2
    error = results[0].error or ""
    assert re.fullmatch(
        rf"judge raised KeyError: 'b' \(at \S*test_user_code_errors\.py:{line} in _count\)", error
    ), error
    message = str(failed.value)
    assert "judge_error x2: judge raised KeyError: 'b' (at " in message, message
    assert "provider_error" not in message and "Traceback" not in message


def test_a_sweep_judge_error_names_the_users_line_and_is_judged_again_on_resume(
    parts: Parts, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARTS_BROKEN", "judge")
    code, err = sweep_cli(parts, capsys)
    assert code == 2, err
    # json's decoder raised, but the line named is the judge's own call into it
    where = re.escape(parts.where("JUDGE_LINE", "fragile"))
    line = r"fragile scored 0/\d+ \(0%, floor 50%\); judge_error x\d+: judge raised "
    assert re.search(line + rf"JSONDecodeError: Expecting value: .*? \(at {where}\)", err), err
    assert "provider_error" not in err and "stored as failed" in err
    run_id = only_run("failed")
    monkeypatch.setenv("PARTS_BROKEN", "")  # the judge fixed, its version kept
    code, err = sweep_cli(parts, capsys)
    assert code == 0 and f"resuming run {run_id}" in err, err
    only_run("finished")
    with open_store() as store:
        statuses = {r.result.status for r in store.judge_results(run_id)}
    assert statuses == {JudgeStatus.ok}


# ----------------------------------------------------------------------------- retrievers


def test_cli_a_raising_retrieval_function_is_one_line_naming_it(
    parts: Parts, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARTS_BROKEN", "retrieve")
    code, err = sweep_cli(parts, capsys)
    where = parts.where("RETRIEVE_LINE", "retrieve")
    assert code == 2
    expected = f"retriever {parts.name}:retrieve raised ValueError: boom in retrieve (at {where})"
    assert err == f"error: {expected}", err


def failed_run_line(where: str, run_id: str) -> str:
    """The error line of a sweep whose retriever ``searcher`` raised at ``where``."""
    return (
        f"error: retriever searcher raised ValueError: boom in search (at {where}); run {run_id} "
        "is stored as failed: fix the cause and run the same command again to resume it"
    )


def test_cli_a_raising_retriever_object_fails_the_run_which_resumes_once_fixed(
    parts: Parts, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARTS_BROKEN", "search")
    code, err = sweep_cli(parts, capsys, retriever="searcher")
    where = parts.where("SEARCH_LINE", "retrieve")
    run_id = only_run("failed")
    assert code == 2
    assert err.endswith(failed_run_line(where, run_id)), err
    monkeypatch.setenv("PARTS_BROKEN", "")
    code, err = sweep_cli(parts, capsys, retriever="searcher")
    assert code == 0 and f"resuming run {run_id}" in err, err
    only_run("finished")


def test_api_a_raising_retriever_is_a_user_code_error_caused_by_its_exception(
    parts: Parts, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARTS_BROKEN", "retrieve,search")
    own = {"generator": parts.module.generate, "judges": [parts.module.fragile], "ks": [1]}
    cases = [{"id": "q1", "question": "Where is tin mined?", "reference": "In Bolivia."}]
    with pytest.raises(UserCodeError) as failed:
        ragjudge.sweep(cases, retriever=parts.module.retrieve, **own)
    where = parts.where("RETRIEVE_LINE", "retrieve")
    expected = f"retriever {parts.name}:retrieve raised ValueError: boom in retrieve (at {where})"
    assert str(failed.value) == expected
    assert isinstance(failed.value, RagjudgeError)
    assert isinstance(failed.value.__cause__, ValueError)

    corpus = TestSet(
        name="tiny",
        documents=[Document(id=d, text=t) for d, t in parts.module.DOCS.items()],
        cases=[TestCase(id="q1", question="Where is tin mined?", reference="In Bolivia.")],
    )
    with pytest.raises(UserCodeError, match=r"^retriever searcher raised ValueError: ") as err:
        ragjudge.sweep(corpus, retriever=parts.module.searcher, **own)
    assert f"(at {parts.where('SEARCH_LINE', 'retrieve')}); run " in str(err.value)
    assert "is stored as failed" in str(err.value)
    assert isinstance(err.value.__cause__, ValueError)
    only_run("failed")


def test_what_a_retriever_returns_is_still_checked_by_ragjudge(parts: Parts) -> None:
    own = {"generator": parts.module.generate, "judges": [parts.module.fragile], "ks": [1]}
    cases = [{"id": "q1", "question": "Where is tin mined?"}]
    with pytest.raises(DataError, match="returned 'oops'"):
        ragjudge.sweep(cases, retriever=lambda q, k: "oops", **own)


# ----------------------------------------------------------------------------- generators


def test_cli_a_raising_generator_names_itself_and_where(
    parts: Parts, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARTS_BROKEN", "generate")
    code, err = sweep_cli(parts, capsys, retriever="searcher")
    where = parts.where("GENERATE_LINE", "generate")
    assert code == 2
    assert (
        f"first error: generator {parts.name}:generate raised ValueError: boom in generate "
        f"(at {where}); run " in err
    ), err
    only_run("failed")


@pytest.mark.slow
def test_cli_a_raising_retriever_on_ray_is_the_same_one_line(
    parts: Parts, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a Ray worker too: the worker names the user's line, the driver prints that line
    (not Ray's report of the worker's traceback) and stores the run as failed."""
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    monkeypatch.setenv("PARTS_BROKEN", "search")
    # A Ray session another test left running has workers on that test's sys.path, without
    # this test's parts module: the sweep starts its own local Ray, as a command does.
    ray.shutdown()
    try:
        code, err = sweep_cli(
            parts, capsys, "--executor", "ray", "--workers", "1", retriever="searcher"
        )
    finally:
        ray.shutdown()
    where = parts.where("SEARCH_LINE", "retrieve")
    run_id = only_run("failed")
    assert code == 2
    assert err.endswith(failed_run_line(where, run_id)), err
