"""The run store, SQLite beside PostgreSQL, measured side by side in one run:

1. judge-result rows written per second at batch sizes 1, 10, 100, 1000 (one ``put_*`` call
   = one transaction = one batch), on each backend, with PostgreSQL's figure as a ratio of
   SQLite's;
2. a large run (``--cases`` x 10 k x 5 judges judge rows, 10,000 cases = 500,000 rows by
   default) written in batches of 1000 and read back whole as a ``RunView`` (target: under 2 s
   on either backend);
3. ``list_runs`` over 1,000 runs.

PostgreSQL is a server this script starts from the Debian binaries, as the tests do
(tests/fixtures/postgres.py), in a temporary folder; SQLite is a file in another.

    .venv/bin/python bench/bench_store.py                 # 10,000 cases (several minutes)
    .venv/bin/python bench/bench_store.py --cases 1000    # a quick look
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ragjudge.schema import (  # noqa: E402
    Evidence,
    JudgeResult,
    JudgeStatus,
    RunManifest,
    TokenUsage,
)
from ragjudge.store import RunStore, StoredJudgeResult, item_id, open_store  # noqa: E402
from ragjudge.store.view import RunView  # noqa: E402
from tests.fixtures.postgres import start_server  # noqa: E402

JUDGES = ["faithfulness", "answer_relevancy", "completeness", "context_recall", "context_precision"]
KS = list(range(1, 11))


def manifest(run_id: str, started: str = "2026-01-01T00:00:00+00:00") -> RunManifest:
    return RunManifest(
        run_id=run_id,
        dataset_name="bench",
        dataset_hash="d" * 16,
        config_hash="c" * 16,
        config={"definition": {"ks": KS}},
        ragjudge_version="0.1.0",
        models={},
        started_at=started,
    )


def row(case: str, k: int, judge: str) -> StoredJudgeResult:
    result = JudgeResult(
        judge=judge,
        judge_version="1",
        backend="offline",
        item_id=item_id(case, k),
        score=(hash((case, k, judge)) % 1000) / 1000,
        status=JudgeStatus.ok,
        evidence=Evidence(explanation="the answer's claims are supported by contexts 1 and 3"),
        usage=TokenUsage(prompt_tokens=120, completion_tokens=30, calls=1),
    )
    return StoredJudgeResult(case, k, judge, result)


def rows_per_second(store: RunStore, batch: int, total: int) -> float:
    run_id = f"batch-{batch}"
    store.create_run(manifest(run_id))
    data = [row(f"q{i // 50}", 1 + i % 10, JUDGES[(i // 10) % 5]) for i in range(total)]
    start = time.perf_counter()
    for i in range(0, total, batch):
        store.put_judge_results(run_id, data[i : i + batch])
    return total / (time.perf_counter() - start)


def big_run(store: RunStore, cases: int) -> tuple[float, float, float, float, int]:
    """Write seconds; read seconds and this process's CPU seconds of ``RunView.read``; seconds
    to then take every score and status from the view (columns, no parse); judge rows read."""
    store.create_run(manifest("big"))
    start = time.perf_counter()
    batch: list[StoredJudgeResult] = []
    for c in range(cases):
        batch += [row(f"q{c:05d}", k, j) for k in KS for j in JUDGES]
        if len(batch) >= 1000:
            store.put_judge_results("big", batch)
            batch = []
    store.put_judge_results("big", batch)
    written = time.perf_counter() - start
    start, cpu = time.perf_counter(), time.process_time()
    view = RunView.read(store, "big")
    read, read_cpu = time.perf_counter() - start, time.process_time() - cpu
    start = time.perf_counter()
    scores, statuses = view.results.scores, view.results.statuses
    assert len(scores) == len(statuses) == len(view.results)
    columns = time.perf_counter() - start
    return written, read, read_cpu, columns, len(view.results)


def list_runs(store: RunStore, n: int) -> float:
    for i in range(n):
        store.create_run(
            manifest(f"run-{i:04d}", f"2026-02-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z")
        )
    start = time.perf_counter()
    runs = store.list_runs()
    took = time.perf_counter() - start
    assert len(runs) >= n
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--rows", type=int, default=2000, help="rows per batch-size measurement")
    args = ap.parse_args()
    print("load average at start: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    server = start_server()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            stores = {
                "sqlite": lambda: open_store(Path(tmp) / "runs.sqlite"),
                "postgres": lambda: open_store(server.fresh_url()),
            }
            print("rows/s by batch size (judge results; one batch = one transaction)")
            print(f"{'batch':>6} {'sqlite':>10} {'postgres':>10} {'pg/sqlite':>10}")
            for batch in (1, 10, 100, 1000):
                total = min(args.rows, max(200, batch * 4)) if batch == 1 else args.rows
                got = {name: rows_per_second(make(), batch, total) for name, make in stores.items()}
                print(
                    f"{batch:>6} {got['sqlite']:>10.0f} {got['postgres']:>10.0f} "
                    f"{got['postgres'] / got['sqlite']:>10.2f}"
                )
            n_rows = args.cases * len(KS) * len(JUDGES)
            print(
                f"\na run of {args.cases} cases x {len(KS)} k x {len(JUDGES)} judges "
                f"= {n_rows} rows"
            )
            for name, make in stores.items():
                written, read, cpu, columns, got = big_run(make(), args.cases)
                assert got == n_rows
                print(
                    f"{name:>8}: written in {written:.1f} s ({n_rows / written:.0f} rows/s), "
                    f"read as a RunView in {read:.2f} s ({'under' if read < 2 else 'OVER'} 2 s; "
                    f"{cpu:.2f} s of CPU), every score and status then in {columns:.2f} s"
                )
            print("\nlist_runs over 1,000 runs")
            for name, make in stores.items():
                print(f"{name:>8}: {list_runs(make(), 1000) * 1000:.0f} ms")
        print("load average at end: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    finally:
        server.stop("immediate")
        shutil.rmtree(server.root, ignore_errors=True)


if __name__ == "__main__":
    main()
