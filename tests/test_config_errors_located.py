"""A bad config file is refused in one line naming the file, the line and the key at fault,
exit code 2, through the real command line: the sweep config (a data set path that names no
folder, an import path that does not import, an empty file, option values of the wrong kind or
out of range, reranker depths), the test set's mix file (a negative weight, an empty file);
``testset --max-cost`` with an unpriced model is refused before any call, as ``sweep`` refuses
it; and the ``testset`` filter table adds up."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ragjudge.resources import demo_dir
from ragjudge.testing.server import FakeLLMServer
from ragjudge.testset.models import FILTERS
from tests.test_exit_codes import run_cli as run


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one error line of ``ragjudge ARGV``, which must exit 2 without a traceback."""
    code, text = run(argv, capsys)
    lines = text.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), text
    assert "Traceback" not in text
    return lines[0].removeprefix("error: ")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """Eight demo passages as a JSONL corpus."""
    path = tmp_path / "passages.jsonl"
    path.write_text("".join((demo_dir() / "corpus.jsonl").read_text().splitlines(True)[:8]))
    return path


def sweep_refusal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> tuple[Path, str]:
    """The config file holding ``text`` and the error line ``ragjudge sweep`` gives it."""
    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(text)
    return cfg, refused(["sweep", "--config", str(cfg)], capsys)


def test_a_dataset_path_that_names_no_folder_is_refused_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg, line = sweep_refusal(tmp_path, capsys, "ks: [1, 2]\ndataset:\n  path: nowhere\n")
    assert line == f"{cfg}:3: dataset.path: folder not found: {tmp_path / 'nowhere'}"


@pytest.mark.parametrize(
    ("entry", "key", "problem"),
    [
        ("retriever: {kind: 'nosuchmod_rj:f'}", "retriever.kind", "cannot import 'nosuchmod_rj'"),
        ("generator: {kind: 'nosuchmod_rj:f'}", "generator.kind", "cannot import 'nosuchmod_rj'"),
        ("judges: {names: ['nosuchmod_rj:f']}", "judges.names.0", "cannot import 'nosuchmod_rj'"),
        ("retriever: {kind: 'json:nosuch'}", "retriever.kind", "module 'json' has no 'nosuch'"),
        ("retriever: {kind: 'json:__name__'}", "retriever.kind", "'json' is not a retriever"),
        ("generator: {kind: 'parts_rj_syntax:f'}", "generator.kind", "SyntaxError at "),
        ("retriever: {kind: 'parts_rj_raises:f'}", "retriever.kind", "RuntimeError at "),
    ],
)
def test_an_import_path_that_does_not_import_is_refused_at_its_key(
    entry: str,
    key: str,
    problem: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # the working directory is importable
    (tmp_path / "parts_rj_syntax.py").write_text("def f(:\n")
    (tmp_path / "parts_rj_raises.py").write_text("x = 1\nraise RuntimeError('no index')\n")
    text = f"dataset: {{path: 'bundled:demo'}}\nks: [1, 2]\n{entry}\n"
    cfg, line = sweep_refusal(tmp_path, capsys, text)
    assert line.startswith(f"{cfg}:3: {key}: "), line
    assert problem in line, line
    if "Error at" in problem:  # the user's file and line where the import failed
        module = entry.split("'")[1].split(":")[0]
        assert f"{module}.py:{1 if 'syntax' in module else 2}" in line, line


@pytest.mark.parametrize("text", ["", "# a sweep, some day\n\n"])
def test_an_empty_config_file_says_so(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg, line = sweep_refusal(tmp_path, capsys, text)
    assert line.startswith(
        f"{cfg}: the file is empty; expected a mapping with keys dataset, retriever, rerankers"
    ), line


@pytest.mark.parametrize(
    ("entry", "at", "message"),
    [
        (
            "retriever: {kind: bm25, options: {k1: abc}}",
            "retriever.options.k1",
            'expected a number (default 0.9), got "abc"',
        ),
        ("retriever: {kind: bm25, options: {k1: -1}}", "retriever.options.k1", "need k1 >= 0"),
        (
            "retriever: {kind: hybrid, options: {bm25: 3}}",
            "retriever.options.bm25",
            "expected a mapping of BM25Retriever options, got 3",
        ),
        (
            "retriever: {kind: hybrid, options: {fusion: rff}}",
            "retriever.options.fusion",
            "unknown fusion 'rff'",
        ),
        (
            "retriever: {kind: hybrid, options: {dense: {encoder: bogus}}}",
            "retriever.options.dense.encoder",
            "unknown encoder 'bogus'",
        ),
        (
            "generator: {kind: chat, options: {temperature: hot}}",
            "generator.options.temperature",
            'expected a number (default 0.0), got "hot"',
        ),
        (
            "rerankers: [{spec: 'cross-encoder:', depth: 3}]",
            "rerankers.0",
            "unknown reranker 'cross-encoder:'",
        ),
        (
            "rerankers: [{spec: prune, depth: 3}, {spec: prune, depth: 5}]",
            "rerankers.1.depth",
            "5 is above the depth 3 of the stage before",
        ),
    ],
)
def test_option_values_are_refused_at_their_line(
    entry: str, at: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = f"dataset: {{path: 'bundled:demo'}}\nks: [1, 2]\n{entry}\n"
    cfg, line = sweep_refusal(tmp_path, capsys, text)
    assert line.startswith(f"{cfg}:3: {at}: "), line
    assert message in line, line


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("factoid: 2\nlist: -1\n", ":2: weight of 'list' must be a finite number >= 0, got -1"),
        ("", ": the file is empty; expected a mapping with keys factoid, why_how, list"),
    ],
)
def test_a_bad_mix_file_is_refused_at_its_line(
    text: str,
    expected: str,
    corpus: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    mix = tmp_path / "mix.yaml"
    mix.write_text(text)
    argv = ["testset", "--corpus", str(corpus), "--n", "2", "--out", str(tmp_path / "set")]
    line = refused([*argv, "--mix", str(mix)], capsys)
    assert line.startswith(f"{mix}{expected}"), line


def test_max_cost_with_an_unpriced_model_is_refused_before_any_call(
    corpus: Path, llm_env: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["testset", "--corpus", str(corpus), "--n", "2", "--out", str(tmp_path / "set")]
    line = refused([*argv, "--max-cost", "0.5"], capsys)
    assert line == (
        "--max-cost: no price is known for model 'fake-model', so its calls would count as "
        "free and the limit would never stop the build; set --max-calls, or give the LLM "
        "client a PriceTable with its price (docs/llm.md)"
    )
    assert llm_env.stats()["preflight"] == 0 and llm_env.stats()["chat_requests"] == 0
    assert not (tmp_path / "set").exists()


def _table(text: str) -> list[dict[str, str]]:
    """The rows of the filter table ``ragjudge testset`` prints, as column -> cell."""
    header = next(ln for ln in text.splitlines() if ln.startswith("┃"))
    columns = [c.strip() for c in header.strip("┃").split("┃")]
    rows = [ln for ln in text.splitlines() if ln.startswith("│")]
    return [
        dict(zip(columns, (c.strip() for c in r.strip("│").split("│")), strict=True)) for r in rows
    ]


def test_the_filter_table_adds_up(
    corpus: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every generated candidate is in one column: generated = removed by each filter +
    surplus (passed every filter once its type's quota was full) + kept; the offline writer
    makes four candidates per missing question, so there is a surplus to count."""
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "RAGJUDGE_BASE_URL", "RAGJUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    out = tmp_path / "set"
    code, text = run(["testset", "--corpus", str(corpus), "--n", "4", "--out", str(out)], capsys)
    assert code == 0, text
    rows = _table(text)
    assert [r["type"] for r in rows][-1] == "total"
    for r in rows:
        parts = [int(r[f]) for f in FILTERS] + [int(r["surplus"]), int(r["kept"])]
        assert int(r["generated"]) == sum(parts), r
    total = rows[-1]
    assert int(total["surplus"]) > 0, total
    report = json.loads((out / "testset.json").read_text())["report"]
    assert int(total["generated"]) == sum(report["generated"].values())
    assert int(total["surplus"]) == sum(report["unused"].values())
    assert re.search(r"generated = removed by the filters \+ surplus", text), text
