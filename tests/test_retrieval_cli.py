"""``ragjudge retrieval`` and ``ragjudge rerank-study`` on a tiny collection."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from ragjudge.cli import app
from ragjudge.io import read_trec_run

DOCS = {
    "d1": "Vitamin D deficiency raises the risk of bone fractures in older adults.",
    "d2": "Regular exercise lowers blood pressure in adults with hypertension.",
    "d3": "Aspirin reduces the risk of a second heart attack.",
    "d4": "Smoking damages the lungs and causes cancer.",
    "d5": "A feline rested on a woven rug near the fireplace.",
    "d6": "Bone density falls with age, especially after menopause.",
}
QUERIES = {
    "q1": "vitamin D and fracture risk",
    "q2": "does exercise reduce hypertension",
    "q3": "aspirin after heart attack",
    "q4": "unjudged query",
}
QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td6\t1\nq2\td2\t1\nq3\td3\t1\n"


def _collection(tmp_path: Path) -> tuple[Path, Path, Path]:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in DOCS.items()))
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        "".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in QUERIES.items())
    )
    qrels = tmp_path / "qrels" / "test.tsv"
    qrels.parent.mkdir()
    qrels.write_text(QRELS)
    return corpus, queries, qrels


def test_retrieval_command_writes_run_and_metrics_json(tmp_path: Path) -> None:
    corpus, queries, qrels = _collection(tmp_path)
    run, out = tmp_path / "run.trec", tmp_path / "m.json"
    res = CliRunner().invoke(
        app,
        [
            "retrieval", "--corpus", str(corpus), "--queries", str(queries),
            "--qrels", str(qrels), "--retriever", "hybrid", "--rerank", "late-interaction",
            "--k", "1,3,5", "--run-out", str(run), "--json", str(out),
        ],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "ndcg@5" in res.output
    data = json.loads(out.read_text())
    assert set(data) >= {"metrics", "ci", "per_query", "n_queries"}
    assert data["n_queries"] == 3 and data["metrics"]["recall@5"] > 0.8
    ranked = read_trec_run(run)
    assert set(ranked) == {"q1", "q2", "q3"} and all(len(v) == 5 for v in ranked.values())


def test_folder_input_and_rerank_study(tmp_path: Path) -> None:
    _collection(tmp_path)
    out = tmp_path / "study.json"
    res = CliRunner().invoke(
        app,
        ["rerank-study", "--corpus", str(tmp_path), "--depth", "4", "--json", str(out)],
    )
    assert res.exit_code == 0, res.output
    study = json.loads(out.read_text())
    assert study["summary"]["n_queries"] == 3
    s = study["summary"]
    assert s["fixed"] + s["broken"] + s["unchanged"] == 3
    assert {g["feature"] for g in study["groups"]} == {"query length", "lexical overlap"}
    q1 = next(r for r in study["per_query"] if r["query_id"] == "q1")
    assert len(q1["ranks_before"]) == 2 and q1["overlap"] > 0.5
    assert "NDCG@5" in res.output and "who gains" in res.output


def test_bad_options_are_one_clear_error(tmp_path: Path) -> None:
    corpus, queries, qrels = _collection(tmp_path)
    base = [
        sys.executable, "-c", "from ragjudge.cli import main; main()", "retrieval",
        "--corpus", str(corpus), "--queries", str(queries), "--qrels", str(qrels),
        "--retriever", "bm25",
    ]  # fmt: skip
    env = {**os.environ, "COLUMNS": "300"}
    bad = subprocess.run(
        [*base, "--rerank", "magic"], capture_output=True, text=True, timeout=120, env=env
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "unknown reranker 'magic'" in bad.stderr and "late-interaction" in bad.stderr
    missing = subprocess.run(
        [*base, "--rerank", f"cross-encoder:{tmp_path / 'none'}"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_three_files_and_a_folder_read_the_same_qrels_alike(tmp_path: Path) -> None:
    """A qrels naming a document the corpus lacks (d9) and a query the queries lack (qX):
    read from a BEIR folder they were dropped with warnings (recall@1 = 1), from three files
    d9 stayed a relevant document no retriever can return (recall@1 = 0.75, no warning)."""
    corpus, queries, qrels = _collection(tmp_path)
    qrels.write_text(QRELS + "q1\td9\t1\nqX\td2\t1\n")
    metrics = []
    for args in (
        ["--corpus", str(tmp_path)],
        ["--corpus", str(corpus), "--queries", str(queries), "--qrels", str(qrels)],
    ):
        out = tmp_path / "m.json"
        res = CliRunner().invoke(
            app, ["retrieval", *args, "--retriever", "bm25", "--k", "1,5", "--json", str(out)]
        )
        assert res.exit_code == 0, res.output
        flat = " ".join(res.output.split())
        assert "1 qrels documents are not in corpus.jsonl" in flat and "'d9'" in flat, flat
        assert "1 qrels queries are not in queries.jsonl" in flat and "'qX'" in flat, flat
        assert "1 queries have no judgments" in flat and "'q4'" in flat, flat
        data = json.loads(out.read_text())
        assert data["n_queries"] == 3
        metrics.append(data["metrics"])
    assert metrics[0] == metrics[1]
