"""``ragjudge judge`` / ``ragjudge generate``: bad input is one clear message with exit code 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragjudge.errors import ConfigError, DataError
from ragjudge.judges.items import read_items
from ragjudge.judges.registry import create_judge

GOOD = {"question": "Q?", "answer": "A.", "contexts": ["c1", "c2"], "reference": "R."}


def write(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"question": "Q?", "contexts": ["c"]}, "row has no 'answer'"),
        ({"question": "Q?", "answer": "A."}, "row has no 'contexts'"),
        ({"question": "Q?", "answer": "A.", "contexts": []}, "'contexts' is empty"),
        ({"question": "Q?", "answer": "A.", "contexts": "c1"}, "must be a list of strings"),
        ({"question": "Q?", "answer": 3, "contexts": ["c"]}, "'answer' must be a string"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path: Path, row: dict[str, object], message: str) -> None:
    path = write(tmp_path / "in.jsonl", [GOOD, row])
    with pytest.raises(DataError, match=message) as err:
        read_items(path)
    assert err.value.line == 2 and str(path) in str(err.value)


def test_rows_keep_ids_and_default_them(tmp_path: Path) -> None:
    path = write(tmp_path / "in.jsonl", [dict(GOOD, id="a"), dict(GOOD, reference="  ")])
    rows, items = read_items(path)
    assert [i.id for i in items] == ["a", "row-2"]
    assert items[1].reference is None and rows[0]["id"] == "a"
    with pytest.raises(DataError, match="repeats the row on line 1"):
        read_items(write(tmp_path / "dup.jsonl", [dict(GOOD, id="a"), dict(GOOD, id="a")]))


def test_unknown_judge_lists_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"known judges: .*context_precision.*faithfulness"):
        create_judge("faithfulnes", "llm")
    with pytest.raises(ConfigError, match=r"has no 'nope' backend; it has: .*llm"):
        create_judge("faithfulness", "nope")


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragjudge", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def test_cli_errors_are_one_message_and_exit_2(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.jsonl", [GOOD, {"question": "Q?", "answer": "A."}])
    res = run_cli("judge", "--input", str(bad), "--backend", "llm")
    assert res.returncode == 2, res.stderr
    assert f"{bad}:2: row has no 'contexts'" in " ".join(res.stderr.split())
    assert "Traceback" not in res.stderr
    good = write(tmp_path / "good.jsonl", [GOOD])
    res = run_cli(
        "judge", "--input", str(good), "--judges", "faithfulness,bogus", "--backend", "llm"
    )
    assert res.returncode == 2 and "unknown judge 'bogus'" in res.stderr
    assert "Traceback" not in res.stderr


def test_judge_llm_backend_end_to_end(tmp_path: Path) -> None:
    from ragjudge.testing.server import FakeLLMServer

    rows = [
        {
            "id": "a",
            "question": "When was Aster Labs founded?",
            "answer": "Aster Labs was founded in 1990 in Lisbon. It went public in 1996.",
            "contexts": [
                "Aster Labs was founded in 1990 in Lisbon.",
                "Boreal Works makes heat pumps.",
            ],
            "reference": "Aster Labs was founded in 1990 in Lisbon.",
            "k": 2,
        },
        {
            "id": "b",
            "question": "When was Aster Labs founded?",
            "answer": "Aster Labs was founded in 1990 in Lisbon.",
            "contexts": ["Aster Labs was founded in 1990 in Lisbon."],
        },
    ]
    src = write(tmp_path / "in.jsonl", rows)
    out, summary = tmp_path / "out.jsonl", tmp_path / "summary.json"
    with FakeLLMServer() as srv:
        env = {"OPENAI_BASE_URL": srv.base_url, "OPENAI_API_KEY": "sk-test", "RAGJUDGE_MODEL": "m"}
        res = run_cli(
            "judge",
            "--input",
            str(src),
            "--output",
            str(out),
            "--json",
            str(summary),
            "--judges",
            "faithfulness,context_recall",
            "--no-progress",
            env=env,
        )
        assert res.returncode == 0, res.stderr
        assert srv.stats()["chat_requests"] == 3  # row b has no reference: recall skipped
    assert "backend llm" in res.stdout and "faithfulness" in res.stdout
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in got] == ["a", "b"] and got[0]["k"] == 2  # input fields kept
    faith = got[0]["judges"]["faithfulness"]
    assert faith["status"] == "ok" and faith["score"] == 0.5
    assert [c["verdict"] for c in faith["evidence"]["claims"]] == ["supported", "unsupported"]
    assert got[1]["judges"]["context_recall"]["status"] == "skipped_missing_reference"
    doc = json.loads(summary.read_text())
    recall = doc["judges"]["context_recall"]
    assert (recall["n_scored"], recall["n_total"]) == (1, 2) and recall["mean"] == 1.0
    assert doc["judges"]["faithfulness"]["mean"] == 0.75 and doc["usage"]["calls"] == 3


def test_generate_writes_judge_rows(tmp_path: Path) -> None:
    data = tmp_path / "set"
    (data / "qrels").mkdir(parents=True)
    write(
        data / "corpus.jsonl",
        [
            {"_id": "d1", "text": "Aster Labs was founded in 1990 in Lisbon."},
            {"_id": "d2", "text": "Boreal Works makes heat pumps in Osaka."},
            {"_id": "d3", "text": "Cobalt Foods sells cheese in Hobart."},
        ],
    )
    write(
        data / "queries.jsonl",
        [
            {"_id": "q1", "text": "When was Aster Labs founded?", "reference": "In 1990."},
            {"_id": "q2", "text": "What does Boreal Works make?"},
        ],
    )
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    out = tmp_path / "cases.jsonl"
    # in-process, so the embedding model loaded by other tests is reused
    from typer.testing import CliRunner

    from ragjudge.cli import app

    args = ["generate", "--dataset", str(data), "--retriever", "bm25", "--k", "2"]
    res = CliRunner().invoke(app, [*args, "--output", str(out)])
    assert res.exit_code == 0, res.output
    assert "2 answers (0 abstained, 0 failed)" in res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["q1@k2", "q2@k2"]
    assert rows[0]["context_ids"][0] == "d1" and len(rows[0]["contexts"]) == 2
    assert rows[0]["answer"].startswith("Aster Labs was founded in 1990") and rows[0][
        "citations"
    ] == [0]
    assert rows[0]["reference"] == "In 1990." and rows[1]["reference"] is None
    # the rows are valid `ragjudge judge` input
    assert [i.id for i in read_items(out)[1]] == ["q1@k2", "q2@k2"]


def test_judge_llm_with_no_usable_endpoint_says_why_and_exits_2(tmp_path: Path) -> None:
    """Unreachable endpoint / wrong key: every call fails, so the command prints each judge's
    distinct error and exits 2 (a misconfiguration, not a score); the rows are still written."""
    from ragjudge.testing.server import FakeLLMServer

    src = write(tmp_path / "in.jsonl", [GOOD, dict(GOOD, id="b")])
    out = tmp_path / "out.jsonl"
    base = ["judge", "--input", str(src), "--backend", "llm", "--no-progress"]
    fast = {"RAGJUDGE_MODEL": "m", "RAGJUDGE_MAX_ATTEMPTS": "1", "RAGJUDGE_TIMEOUT": "5"}
    res = run_cli(
        *base,
        "--judges",
        "faithfulness",
        "--output",
        str(out),
        env={**fast, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-x"},
    )
    assert res.returncode == 2, res.stdout + res.stderr
    line = " ".join(res.stderr.split())
    assert "error: pre-flight call to model" in line and "cannot reach the LLM endpoint" in line
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert not out.exists()  # found before any row was judged
    with FakeLLMServer(api_key="sk-right") as srv:
        res = run_cli(
            *base,
            "--judges",
            "faithfulness,answer_relevancy",
            env={**fast, "OPENAI_BASE_URL": srv.base_url, "OPENAI_API_KEY": "sk-wrong-key"},
        )
    assert res.returncode == 2, res.stdout + res.stderr
    assert srv.stats()["preflight"] == 1 and srv.stats()["chat_requests"] == 0
    assert "rejected the API key (401" in " ".join(res.stderr.split())
    assert "API key" in res.stdout + res.stderr and "sk-wrong-key" not in res.stdout + res.stderr


def test_an_unreachable_endpoint_names_where_its_url_was_set(tmp_path: Path) -> None:
    """The hint said "check OPENAI_BASE_URL" when the URL came from RAGJUDGE_BASE_URL or the
    config file, which the user then could not find in their environment."""
    src = write(tmp_path / "in.jsonl", [GOOD])
    toml = tmp_path / "ragjudge.toml"
    toml.write_text('[llm]\nmodel = "m"\nbase_url = "http://127.0.0.1:9/v1"\n')
    env = {k: v for k, v in os.environ.items() if not k.endswith("_BASE_URL")}
    env.update(RAGJUDGE_MAX_ATTEMPTS="1", RAGJUDGE_TIMEOUT="5", OPENAI_API_KEY="sk-x")
    argv = [sys.executable, "-m", "ragjudge", "judge", "--input", str(src), "--backend", "llm"]
    argv += ["--judges", "faithfulness", "--no-progress"]
    for extra, where in (
        ({"RAGJUDGE_CONFIG": str(toml)}, f"check {toml}:3: [llm] base_url"),
        ({"RAGJUDGE_BASE_URL": "http://127.0.0.1:9/v1"}, "check RAGJUDGE_BASE_URL (it"),
    ):
        res = subprocess.run(
            argv, capture_output=True, text=True, env={**env, **extra}, timeout=120
        )
        line = " ".join(res.stderr.split())
        assert res.returncode == 2 and "cannot reach the LLM endpoint" in line, res.stderr
        assert where in line and "OPENAI_BASE_URL" not in line, line
