"""``ragjudge ui`` on real sizes: one run of N cases x 10 k x 5 judges (default 10,000 cases:
500,000 judge results, 100,000 answers) and a nightly history of H small runs (default 365),
in a SQLite run store, served through HTTP (Starlette's client, in process).

Every run ends as a sweep's does: its summary is computed and kept in the store
(``ragjudge.sweep.digest``; the big run's is timed). Measured, each in a fresh server: the run
page (first request, again), the first page of the case explorer (plain, and ordered by the
move against a baseline), a case page, the runs list, the history page (first request, again),
the run page of an older run with no kept summary (computed once, then kept), and the weight of
each page. The peer is ``summarise_run`` (what ``ragjudge runs show`` computes) on the same
run, measured in the same process: ``ratio`` = page time / peer time.

    python bench/bench_ui.py --cases 10000 --history 365
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from starlette.testclient import TestClient

from ragjudge.schema import (
    Answer,
    ClaimVerdict,
    Evidence,
    JudgeResult,
    JudgeStatus,
    Ranking,
    RunManifest,
    ScoredDoc,
    TestCase,
)
from ragjudge.store import RetrievalMetric, RunStore, StoredJudgeResult, open_store
from ragjudge.store.view import RunView
from ragjudge.sweep.demo import demo_config
from ragjudge.sweep.digest import compute, keep
from ragjudge.sweep.run import summarise_run
from ragjudge.ui.app import create_app

KS = list(range(1, 11))
JUDGES = ["faithfulness", "answer_relevancy", "completeness", "context_recall", "context_precision"]


def _store_run(store: RunStore, run_id: str, n: int, started: str, rng: random.Random) -> None:
    cfg = demo_config().model_dump(mode="json")
    store.create_run(
        RunManifest(
            run_id=run_id,
            dataset_name="bench",
            dataset_hash="b" * 64,
            config_hash="c" * 16,
            config={"full": cfg},
            ragjudge_version="bench",
            started_at=started,
            status="running",
        )
    )
    cases = [f"q{i:05d}" for i in range(n)]
    store.put_cases(
        run_id,
        [TestCase(id=c, question=f"What is fact {c}?", relevant={f"{c}-d1": 2}) for c in cases],
    )
    store.put_rankings(
        run_id,
        [
            Ranking(query_id=c, docs=[ScoredDoc(doc_id=f"{c}-d{j}", score=1 / j) for j in KS])
            for c in cases
        ],
    )
    batch = 2000
    for start in range(0, n, batch):
        part = cases[start : start + batch]
        answers, results, metrics = [], [], []
        for c in part:
            base = rng.random()
            for k in KS:
                ids = [f"{c}-d{j}" for j in range(1, k + 1)]
                answers.append(
                    Answer(
                        case_id=c,
                        k=k,
                        text=f"Fact {c} is {k}. It holds.",
                        context_ids=ids,
                        contexts=[f"Document {d} says fact {c}." for d in ids],
                        generator="bench",
                    )
                )
                for j in JUDGES:
                    score = min(1.0, max(0.0, base + rng.gauss(0, 0.1) + 0.01 * k))
                    claims = [
                        ClaimVerdict(claim=f"Fact {c} is {k}.", verdict="supported"),
                        ClaimVerdict(claim="It holds.", verdict="unsupported"),
                    ]
                    results.append(
                        StoredJudgeResult(
                            case_id=c,
                            k=k,
                            judge=j,
                            result=JudgeResult(
                                judge=j,
                                judge_version="1",
                                backend="offline",
                                item_id=f"{c}@k{k}",
                                score=score,
                                status=JudgeStatus.ok,
                                evidence=Evidence(claims=claims, explanation="bench"),
                            ),
                        )
                    )
                for m in ("recall", "ndcg"):
                    metrics.append(RetrievalMetric(case_id=c, k=k, metric=m, value=rng.random()))
        store.put_answers(run_id, answers)
        store.put_judge_results(run_id, results)
        store.put_retrieval_metrics(run_id, metrics)
    store.set_status(run_id, "finished", finished=True)
    keep(store, compute(store, RunView.read(store, run_id)))  # as the sweep does at its end


def _time(client: TestClient, url: str) -> tuple[float, int]:
    t = time.perf_counter()
    res = client.get(url)
    assert res.status_code == 200, (url, res.status_code, res.text[:300])
    return time.perf_counter() - t, len(res.content)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--history", type=int, default=365)
    ap.add_argument("--history-cases", type=int, default=20)
    args = ap.parse_args()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / "runs.sqlite")
        t = time.perf_counter()
        _store_run(store, "big", args.cases, "2026-01-01T00:00:00+00:00", rng)
        print(f"stored {args.cases} cases x {len(KS)} k x {len(JUDGES)} judges in "
              f"{time.perf_counter() - t:.1f} s")  # fmt: skip
        t = time.perf_counter()
        keep(store, compute(store, RunView.read(store, "big")))
        kept = time.perf_counter() - t
        for night in range(args.history):
            run_id = f"night{night:03d}"
            day = (
                f"2025-{1 + night // 31 % 12:02d}-{1 + night % 28:02d}T{night % 24:02d}:00:00+00:00"
            )
            _store_run(store, run_id, args.history_cases, day, rng)
            store.tag(run_id, "nightly")

        t = time.perf_counter()
        summarise_run(store, "big")
        peer = time.perf_counter() - t

        _store_run(store, "older", args.cases // 10, "2026-01-02T00:00:00+00:00", rng)
        store.set_status("older", "finished", finished=True)  # drops its kept summary

        def fresh() -> TestClient:
            return TestClient(create_app(store), base_url="http://127.0.0.1")

        client = fresh()
        rows = [("summary kept at the end of the big run (once)", kept, 0)]
        for name, new, url in (
            ("run page, first request", True, "/runs/big"),
            ("run page, again", False, "/runs/big"),
            ("case explorer, first page, first request", True, "/runs/big/cases"),
            ("case explorer, moved most vs a baseline", True, "/runs/big/cases?baseline=big"),
            ("case page, first request", True, "/runs/big/cases/q00042"),
            (f"older run of {args.cases // 10} cases, no kept summary", True, "/runs/older"),
            (f"older run of {args.cases // 10} cases, then", False, "/runs/older"),
            ("runs list, first request", True, "/"),
            (f"history of {args.history} runs, first request", True, "/history?tag=nightly"),
            (f"history of {args.history} runs, again", False, "/history?tag=nightly"),
        ):
            client = fresh() if new else client
            seconds, size = _time(client, url)
            rows.append((name, seconds, size))
        print(f"peer: summarise_run (ragjudge runs show) on the big run: {peer:.2f} s")
        print("| page | seconds | ratio to peer | page weight (KB) |")
        print("|---|---:|---:|---:|")
        for name, seconds, size in rows:
            print(f"| {name} | {seconds:.3f} | {seconds / peer:.2f} | {size / 1024:.0f} |")


if __name__ == "__main__":
    main()
