"""A run store a team shares: the same commands against a real PostgreSQL started by the tests
(tests/fixtures/postgres.py) and against SQLite; ``store copy`` / ``store check``; concurrent
sweeps writing one store while reports and listings read it; ``kill -9`` and a server restart
in the middle of a sweep.

Real parts: ``ragjudge`` in subprocesses, BM25 retrieval, the chat generator and the LLM judges
over HTTP to the local test server (tests/test_sweep_kill.py's data set).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragjudge.cli import main
from ragjudge.store import RunStore, StoredLabel, open_store
from ragjudge.testing.server import FakeLLMServer
from tests.fixtures.postgres import PASSWORD
from tests.test_store import FIXTURE_V1
from tests.test_sweep_kill import METALS, env_for, write_dataset

JUDGES = 5


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_copy_is_idempotent_and_check_finds_nothing_wrong(store_url, tmp_path, capsys):
    source = tmp_path / "laptop.sqlite"
    source.write_bytes(FIXTURE_V1.read_bytes())
    src = open_store(source)
    (run,) = src.list_runs()
    src.add_labels(
        [
            StoredLabel(
                run_id=run.run_id, case_id=c, k=1, judge="faithfulness", value=1, labeler=who
            )
            for c in sorted(src.cases(run.run_id))
            for who in ("ann", "bob")
        ]
    )
    src.put_summary(run.run_id, run.status, '{"kept": true}')
    for _ in range(2):
        code, out, err = run_cli(
            ["store", "copy", "--from", str(source), "--to", store_url], capsys
        )
        assert code == 0, err
        assert "copied 1 run (" in out and PASSWORD not in out
    dst = open_store(store_url)
    assert dst.counts(run.run_id) == src.counts(run.run_id)
    assert len(dst.labels(run.run_id)) == 6
    assert dst.manifest(run.run_id) == src.manifest(run.run_id)
    assert dst.judge_results(run.run_id) == src.judge_results(run.run_id)
    assert dst.summaries([run.run_id]) == src.summaries([run.run_id])  # the UI need not redo it
    code, out, err = run_cli(["store", "check", "--store", store_url], capsys)
    assert code == 0 and "1 run, 0 problems" in out, out + err


def test_check_names_a_corrupt_row(tmp_path, capsys):
    import sqlite3

    path = tmp_path / "runs.sqlite"
    path.write_bytes(FIXTURE_V1.read_bytes())
    open_store(path).close()
    with sqlite3.connect(path) as con:
        (run_id,) = con.execute("SELECT run_id FROM runs").fetchone()
        con.execute("UPDATE answers SET answer = 'nonsense' WHERE rowid = 1")
    code, out, err = run_cli(["store", "check", "--store", str(path)], capsys)
    assert code == 2 and out.rstrip().endswith("1 run, 1 problem"), out
    assert f"run {run_id}: a corrupt row in table answers" in err


def write_config(folder: Path, name: str, ks: list[int]) -> Path:
    cfg = folder / f"{name}.yaml"
    cfg.write_text(
        f"dataset: {{path: {folder / 'data'}}}\n"
        "retriever: {kind: bm25}\n"
        "generator: {kind: chat}\n"
        "judges: {backend: llm}\n"
        f"ks: {ks}\n"
        "concurrency: 2\n"
    )
    return cfg


def sweep(cfg: Path, env: dict[str, str], out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ragjudge", "sweep", "--config", str(cfg), "--out", str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragjudge", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_four_sweeps_at_once_lose_and_duplicate_nothing(store_url, tmp_path):
    """Four sweeps with different ks write one store at once while ``runs list`` and
    ``report`` read it; then every run is whole: 0 lost, 0 duplicated rows."""
    write_dataset(tmp_path / "data")
    configs = {f"s{i}": ks for i, ks in enumerate([[1, 2], [1, 3], [2, 3], [1, 2, 3]])}
    with FakeLLMServer(latency=0.01) as server:
        env = env_for(server, tmp_path / "home") | {"RAGJUDGE_STORE_URL": store_url}
        first = cli(
            env,
            "sweep",
            "--config",
            str(write_config(tmp_path, "base", [1, 2])),
            "--out",
            str(tmp_path / "o-base"),
            "--tag",
            "baseline",
        )
        assert first.returncode == 0, first.stderr
        procs = {
            name: sweep(write_config(tmp_path, name, ks), env, tmp_path / f"o-{name}")
            for name, ks in configs.items()
        }
        reads = 0
        while any(p.poll() is None for p in procs.values()):
            listed = cli(env, "runs", "list")
            assert listed.returncode == 0, listed.stderr
            reads += 1
        outs = {name: p.communicate() for name, p in procs.items()}
        for name, p in procs.items():
            assert p.returncode == 0, outs[name][1]
        report = cli(
            env,
            "report",
            "--run",
            "latest",
            "--baseline-tag",
            "baseline",
            "--allow-partial",
            "--out",
            str(tmp_path / "rep"),
        )
        assert report.returncode in (0, 1), report.stderr
    assert reads >= 1
    store = open_store(store_url)
    runs = store.list_runs()
    assert len(runs) == 5 and all(m.status == "finished" for m in runs)
    for m in runs:
        ks = m.config["definition"]["ks"]
        counts = store.counts(m.run_id)
        assert counts["answers"] == len(METALS) * len(ks), (m.run_id, counts)
        assert counts["judge_results"] == JUDGES * len(METALS) * len(ks), (m.run_id, counts)
        assert counts["rankings"] == len(METALS)
        assert PASSWORD not in m.model_dump_json()
    assert PASSWORD not in "".join(o + e for o, e in outs.values())


def sweep_until_judged(
    cfg: Path, env: dict[str, str], out: Path, url: str
) -> tuple[subprocess.Popen[str], RunStore]:
    """A sweep started, once it has stored 10 judge results (within 120 s)."""
    proc = sweep(cfg, env, out)
    store = open_store(url)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        runs = store.list_runs()
        if runs and store.counts(runs[0].run_id)["judge_results"] >= 10:
            break
        time.sleep(0.2)
    return proc, store


@pytest.mark.slow
def test_kill_9_mid_sweep_then_resume_on_postgres(postgres, tmp_path):
    """kill -9 of a sweep writing to PostgreSQL: its lease lapses with its session, the run
    reads ``interrupted`` and resumes to exactly the rows of a whole run."""
    url = postgres.fresh_url()
    write_dataset(tmp_path / "data")
    cfg = write_config(tmp_path, "kill", [1, 2, 3])
    with FakeLLMServer(latency=0.05) as server:
        env = env_for(server, tmp_path / "home") | {"RAGJUDGE_STORE_URL": url}
        proc, store = sweep_until_judged(cfg, env, tmp_path / "o1", url)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        (run,) = store.list_runs()
        time.sleep(0.5)
        assert store.manifest(run.run_id).status == "interrupted"
        partial = store.counts(run.run_id)["judge_results"]
        assert 0 < partial < JUDGES * len(METALS) * 3
        again = sweep(cfg, env, tmp_path / "o2")
        _, err = again.communicate(timeout=300)
        assert again.returncode == 0, err
        assert f"resuming run {run.run_id}" in err
    counts = store.counts(run.run_id)
    assert store.manifest(run.run_id).status == "finished"
    assert counts["answers"] == len(METALS) * 3
    assert counts["judge_results"] == JUDGES * len(METALS) * 3


@pytest.mark.slow
def test_server_restart_mid_sweep_is_retried(postgres, tmp_path):
    """The PostgreSQL server restarts while a sweep writes to it: the writes are retried
    (bounded backoff) and the sweep finishes whole."""
    url = postgres.fresh_url()
    write_dataset(tmp_path / "data")
    cfg = write_config(tmp_path, "restart", [1, 2, 3])
    with FakeLLMServer(latency=0.05) as server:
        env = env_for(server, tmp_path / "home") | {"RAGJUDGE_STORE_URL": url}
        proc, store = sweep_until_judged(cfg, env, tmp_path / "o1", url)
        store.close()
        postgres.restart()
        _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    store = open_store(url)
    (run,) = store.list_runs()
    assert store.manifest(run.run_id).status == "finished"
    assert store.counts(run.run_id)["judge_results"] == JUDGES * len(METALS) * 3
    assert PASSWORD not in err


@pytest.mark.slow
def test_export_and_agree_read_a_postgres_run(postgres, tmp_path):
    url = postgres.fresh_url()
    write_dataset(tmp_path / "data")
    cfg = write_config(tmp_path, "exp", [1, 2])
    cfg.write_text(cfg.read_text() + f"store: {{url: '{url}'}}\n")  # the config names the store
    with FakeLLMServer(latency=0.0) as server:
        env = env_for(server, tmp_path / "home")
        done = cli(env, "sweep", "--config", str(cfg), "--out", str(tmp_path / "o"))
        assert done.returncode == 0, done.stderr
    assert not (tmp_path / "home" / "runs.sqlite").exists()
    (run,) = open_store(url).list_runs()
    assert PASSWORD not in run.model_dump_json() and PASSWORD not in done.stderr + done.stdout
    env["RAGJUDGE_STORE_URL"] = url
    out = tmp_path / "run.csv"
    exported = cli(env, "runs", "export", "latest", "--format", "csv", "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    assert len(out.read_text().strip().splitlines()) == 1 + len(METALS) * 2
    store = open_store(url)
    run_id = store.resolve("latest")
    labels = tmp_path / "labels.csv"
    labels.write_text(
        "item_id,dimension,label\n"
        + "".join(
            f"q-{m}@k{k},faithfulness,{(i + k) % 2}\n" for i, m in enumerate(METALS) for k in (1, 2)
        )
    )
    report = tmp_path / "agree.json"
    agreed = cli(
        env,
        "agree",
        "--run",
        run_id,
        "--labels",
        str(labels),
        "--resamples",
        "200",
        "--json",
        str(report),
    )
    assert agreed.returncode == 0, agreed.stderr
    assert "faithfulness" in report.read_text()


def test_a_refused_login_a_missing_database_and_no_server_each_say_what_fixes_them(
    postgres, capsys
):
    """All three said 'the database server failed (...); ... run the same command again to
    resume', and hid the user name of the URL."""
    from tests.fixtures.postgres import USER

    good = postgres.url_of("postgres")
    cases = [
        (good.replace(PASSWORD, "not-the-password"), "refused the login"),
        (postgres.url_of("no_such_db"), "no such database"),
        (good.replace(f":{postgres.port}/", ":1/"), "cannot reach the database server"),
    ]
    for url, says in cases:
        code, _, err = run_cli(["runs", "list", "--store", url], capsys)
        (line,) = err.strip().splitlines()
        assert code == 2 and says in line and "run the same command again" not in line, line
        assert f"{USER}:***@" in line and "not-the-password" not in line
