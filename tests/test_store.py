"""The run store: round trips, idempotent writes, tags, locking, and clear errors."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ragjudge.errors import ConfigError, StateFileError
from ragjudge.llm import LedgerEntry
from ragjudge.schema import (
    Answer,
    Evidence,
    JudgeResult,
    JudgeStatus,
    Ranking,
    RunManifest,
    ScoredDoc,
    TokenUsage,
)
from ragjudge.store import (
    RetrievalMetric,
    RunLockedError,
    StoredJudgeResult,
    StoredLabel,
    StoreFullError,
    StoreLockedError,
    StoreWaitWarning,
    item_id,
    open_store,
    parse_item_id,
)
from ragjudge.store.base import now
from ragjudge.store.view import RunView


def manifest(run_id: str = "r1", started: str = "2026-01-01T00:00:00+00:00") -> RunManifest:
    return RunManifest(
        run_id=run_id,
        dataset_name="demo",
        dataset_hash="d" * 16,
        config_hash="c" * 16,
        config={"definition": {"ks": [1, 2]}},
        ragjudge_version="0.1.0",
        models={"generator": "extractive@1"},
        started_at=started,
    )


def result(case: str, k: int, score: float | None = 0.5) -> JudgeResult:
    return JudgeResult(
        judge="faithfulness",
        judge_version="1",
        backend="offline",
        item_id=item_id(case, k),
        score=score,
        status=JudgeStatus.ok if score is not None else JudgeStatus.no_claims,
        evidence=Evidence(explanation="because"),
        usage=TokenUsage(prompt_tokens=10, calls=1),
    )


def test_item_id_round_trip():
    assert item_id("q@1", 3) == "q@1@k3"
    assert parse_item_id("q@1@k3") == ("q@1", 3)
    with pytest.raises(ValueError):
        parse_item_id("q1")


def test_round_trip_and_idempotent_writes(store_url):
    store = open_store(store_url)
    store.create_run(manifest())
    a = Answer(
        case_id="q1",
        k=2,
        text="x",
        context_ids=["d1", "d2"],
        contexts=["a", "b"],
        generator="extractive",
    )
    store.put_answers("r1", [a])
    store.put_answers("r1", [a.model_copy(update={"text": "y"})])  # replaced, not duplicated
    assert [x.text for x in store.answers("r1")] == ["y"]

    rows = [StoredJudgeResult("q1", k, "faithfulness", result("q1", k)) for k in (1, 2)]
    store.put_judge_results("r1", rows)
    store.put_judge_results("r1", rows)
    got = store.judge_results("r1")
    assert len(got) == 2 and got[0].result == rows[0].result

    store.put_rankings("r1", [Ranking(query_id="q1", docs=[ScoredDoc(doc_id="d1", score=1.0)])])
    assert store.rankings("r1")["q1"].doc_ids == ["d1"]
    store.put_retrieval_metrics("r1", [RetrievalMetric("q1", 1, "ndcg", 1.0)] * 2)
    assert store.retrieval_metrics("r1") == [RetrievalMetric("q1", 1, "ndcg", 1.0)]
    entries = [LedgerEntry(kind="call", call_id=str(i), prompt_tokens=i) for i in (1, 2, 3)]
    store.append_ledger("r1", entries[:2])
    store.append_ledger("r1", entries[2:])
    assert store.ledger("r1") == entries
    assert store.counts("r1") == {
        "answers": 1,
        "judge_results": 2,
        "rankings": 1,
        "retrieval_metrics": 1,
        "ledger": 3,
    }
    # A second connection (another process would do the same) sees committed rows.
    other = open_store(store_url)
    assert other.manifest("r1").dataset_hash == "d" * 16
    if "://" not in store_url:
        mode = sqlite3.connect(store_url).execute("PRAGMA journal_mode").fetchone()
        assert mode[0] == "wal"


def test_runs_tags_status_and_resolution(store_url):
    store = open_store(store_url)
    store.create_run(manifest("20260101-aaaa", "2026-01-01T00:00:00+00:00"))
    store.create_run(manifest("20260102-bbbb", "2026-01-02T00:00:00+00:00"))
    with pytest.raises(ConfigError, match="already exists"):
        store.create_run(manifest("20260101-aaaa"))
    assert [m.run_id for m in store.list_runs()] == ["20260101-aaaa", "20260102-bbbb"]
    assert store.resolve("latest") == "20260102-bbbb"
    assert store.resolve("20260101") == "20260101-aaaa"
    with pytest.raises(ConfigError, match="ambiguous"):
        store.resolve("2026")
    with pytest.raises(ConfigError, match=r"no run 'nope'.*known runs"):
        store.resolve("nope")
    store.tag("20260101-aaaa", "baseline")
    store.tag("20260102-bbbb", "baseline", "v2")
    assert [m.run_id for m in store.find_by_tag("baseline")] == ["20260102-bbbb", "20260101-aaaa"]
    assert store.manifest("20260102-bbbb").tags == {"baseline": "v2"}
    m = store.set_status("20260101-aaaa", "finished", finished=True)
    assert m.status == "finished" and m.finished_at is not None
    assert store.manifest("20260101-aaaa").status == "finished"
    store.delete_run("20260101-aaaa")
    assert [m.run_id for m in store.list_runs()] == ["20260102-bbbb"]


def test_runs_begun_in_one_second_list_and_resolve_in_the_order_they_began(store_url):
    """Run ids end in random hex, so within one second they need not sort by start; the
    start stamp a sweep writes (``now("microseconds")``) must order them, or ``latest`` and
    resuming the newest unfinished run could take the older one."""
    store = open_store(store_url)
    first = now("microseconds")
    second = now("microseconds")
    while second == first:
        second = now("microseconds")
    store.create_run(manifest("20260101T000000-abcdef-ffff", first))
    store.create_run(manifest("20260101T000000-abcdef-0000", second))
    order = [m.run_id for m in store.list_runs()]
    assert order == ["20260101T000000-abcdef-ffff", "20260101T000000-abcdef-0000"]
    assert store.resolve("latest") == "20260101T000000-abcdef-0000"


def test_store_locked_by_another_process_is_a_clear_error(tmp_path):
    path = tmp_path / "runs.sqlite"
    store = open_store(path, busy_timeout=0.2)
    store.create_run(manifest())
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sqlite3, sys, time
            c = sqlite3.connect({str(path)!r}, isolation_level=None)
            c.execute("BEGIN EXCLUSIVE")
            print("locked", flush=True)
            time.sleep(30)
        """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        answer = Answer(case_id="q1", k=1, text="x", context_ids=[], contexts=[], generator="g")
        with (
            pytest.warns(StoreWaitWarning, match="another process is writing"),
            pytest.raises(StoreLockedError, match=r"runs.sqlite is locked by another process"),
        ):
            store.put_answers("r1", [answer])
    finally:
        holder.kill()
        holder.wait()
    store.put_answers("r1", [answer])  # usable again once the other process is gone


def test_run_lease_is_exclusive_and_released_by_process_death(store_url):
    store = open_store(store_url)
    store.create_run(manifest().model_copy(update={"status": "running"}))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import time
            from ragjudge.store import open_store
            open_store({store_url!r}).lease("r1").__enter__()
            print("held", flush=True)
            time.sleep(60)
        """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(RunLockedError, match=f"pid {holder.pid}"):
            store.lease("r1").__enter__()
        assert store.writer_alive("r1") and store.manifest("r1").status == "running"
    finally:
        holder.kill()  # SIGKILL: the OS drops the flock, the server the session's lock
        holder.wait()
    deadline = time.monotonic() + 10
    while store.writer_alive("r1") and time.monotonic() < deadline:
        time.sleep(0.1)  # the server notices the closed socket
    assert store.manifest("r1").status == "interrupted"
    with store.lease("r1"):
        assert store.writer_alive("r1")
    assert not store.writer_alive("r1")


def test_a_locked_state_file_is_reported_as_locked_not_corrupt(tmp_path: Path) -> None:
    from ragjudge.errors import sqlite_file_error

    path = tmp_path / "x.sqlite"
    locked = str(sqlite_file_error(path, sqlite3.OperationalError("database is locked")))
    corrupt = str(sqlite_file_error(path, sqlite3.DatabaseError("file is not a database")))
    assert "locked by another process" in locked and "corrupt" not in locked
    assert "corrupt or truncated" in corrupt and str(path) in locked


FIXTURE_V1 = Path(__file__).parent / "fixtures" / "store_v1.sqlite"
"""A store written by ragjudge 0.1 (schema version 1, no Alembic): a 3-case demo sweep with a
tag and a ledger line, made with the code before the store seam."""


def test_a_store_of_the_previous_release_upgrades_in_place(tmp_path):
    path = tmp_path / "runs.sqlite"
    path.write_bytes(FIXTURE_V1.read_bytes())
    with sqlite3.connect(path) as con:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "alembic_version" not in tables and "labels" not in tables
    store = open_store(path)
    (run,) = store.list_runs()
    assert run.status == "finished" and run.tags == {"demo": "", "baseline": "v1"}
    assert store.counts(run.run_id) == {
        "answers": 30,
        "judge_results": 150,
        "rankings": 3,
        "retrieval_metrics": 100,
        "ledger": 1,
    }
    view = RunView.read(store, run.run_id)
    assert len(view.testcases) == 3 and len(view.judges) == 5
    label = StoredLabel(
        run_id=run.run_id, case_id=view.cases[0], k=1, judge="faithfulness", value=1, labeler="a"
    )
    store.add_labels([label])
    assert [x.labeler for x in store.labels(run.run_id)] == ["a"]
    with sqlite3.connect(path) as con:
        (rev,) = con.execute("SELECT version_num FROM alembic_version").fetchone()
    from ragjudge.store.migrate import head

    assert rev == head()
    assert open_store(path).labels(run.run_id)[0].value == 1.0  # reopening does not migrate again
    from ragjudge.sweep.digest import digest

    assert store.summaries([run.run_id]) == {}  # the summaries table came with the upgrade
    assert digest(store, run.run_id).summary.n_cases == 3  # computed once for the old run...
    assert store.summaries([run.run_id])[run.run_id][0] == "finished"  # ...and kept


def _sql_url(store_url: str) -> str:
    return store_url if "://" in store_url else f"sqlite:///{store_url}"


def test_a_table_someone_added_is_named_not_called_corrupt(store_url):
    """A run store is precious (issue #30): a healthy store holding a table ragjudge did not
    make, under a name a migration needs, gets a message saying exactly that, and the failed
    upgrade leaves it as it was; an extra table under another name is simply kept."""
    import sqlalchemy as sa

    engine = sa.create_engine(_sql_url(store_url))
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE labels (mine TEXT)"))
        conn.execute(sa.text("INSERT INTO labels VALUES ('keep me')"))
        conn.execute(sa.text("CREATE TABLE my_notes (note TEXT)"))
    with pytest.raises(StateFileError) as err:
        open_store(store_url)
    msg = str(err.value)
    assert "\n" not in msg and "already" in msg and "labels" in msg, msg
    assert "to 0" in msg and "rolled back" in msg and "intact" in msg, msg
    assert "layout" not in msg and "from revision" not in msg, msg  # it was never a store
    assert "corrupt" not in msg and "truncated" not in msg, msg
    assert "s3cret" not in msg
    with engine.begin() as conn:
        have = set(sa.inspect(conn).get_table_names())
        assert {"labels", "my_notes"} <= have and "runs" not in have, have  # rolled back whole
        assert conn.execute(sa.text("SELECT mine FROM labels")).scalar_one() == "keep me"
        conn.execute(sa.text("DROP TABLE labels"))
    store = open_store(store_url)  # the extra table of another name is no obstacle
    assert store.list_runs() == []
    with engine.connect() as conn:
        assert "my_notes" in sa.inspect(conn).get_table_names()
    engine.dispose()


def test_a_file_that_is_not_sqlite_is_named_not_called_corrupt(tmp_path, capsys):
    """A label sheet passed as --store was "corrupt or truncated; move it aside": advice to
    move a user's CSV away. It is refused unchanged; an empty file is a new store."""
    from tests.test_exit_codes import run_cli

    sheet = tmp_path / "labels.csv"
    sheet.write_text("item_id,dimension,label\nq1@k1,faithfulness,1\n")
    before = sheet.read_bytes()
    for argv in (["store", "check"], ["runs", "list"]):
        code, out = run_cli([*argv, "--store", str(sheet)], capsys)
        assert code == 2 and out.count("\n") == 1, out
        assert "not an SQLite database" in out and "labels.csv" in out, out
        assert "move it aside" not in out and "corrupt" not in out, out
    assert sheet.read_bytes() == before
    empty = tmp_path / "new.sqlite"
    empty.touch()
    assert open_store(empty).list_runs() == []


def test_a_store_of_a_newer_release_is_refused_unchanged(tmp_path):
    path = tmp_path / "runs.sqlite"
    open_store(path)
    with sqlite3.connect(path) as con:
        con.execute("UPDATE alembic_version SET version_num = '0999'")
    before = path.read_bytes()
    with pytest.raises(StateFileError, match=r"newer ragjudge \(schema revision 0999; this"):
        open_store(path)
    assert path.read_bytes() == before


def test_human_labels_keep_every_labeler(store_url):
    store = open_store(store_url)
    store.create_run(manifest())
    rows = [
        StoredLabel(
            run_id="r1",
            case_id="q1",
            k=2,
            judge="faithfulness",
            value=v,
            raw=raw,
            scale="binary",
            note=note,
            labeler=who,
            judge_version="1",
        )
        for v, raw, who, note in [(1, "yes", "ann", ""), (0, "no", "bob", "claim 2 unsupported")]
    ]
    ids = store.add_labels(rows)
    ids += store.add_labels([rows[0].model_copy(update={"case_id": "q2", "judge": "relevancy"})])
    assert len(set(ids)) == 3
    got = store.labels("r1", case_id="q1")
    assert [(x.labeler, x.value, x.note) for x in got] == [
        ("ann", 1.0, ""),
        ("bob", 0.0, "claim 2 unsupported"),
    ]
    assert all(x.created_at and x.id in ids and x.item_id == "q1@k2" for x in got)
    assert [x.case_id for x in store.labels("r1", judge="relevancy")] == ["q2"]
    store.delete_run("r1")
    assert store.labels("r1") == []


def test_a_corrupt_row_is_one_line_naming_the_run_and_the_table(tmp_path, capsys, monkeypatch):
    """Issue 30 item 6: one line naming the run and the table, exit 2 (it was a multi-line
    validation error)."""
    from ragjudge.cli import main

    monkeypatch.setenv("RAGJUDGE_HOME", str(tmp_path))
    path = tmp_path / "runs.sqlite"
    path.write_bytes(FIXTURE_V1.read_bytes())
    with sqlite3.connect(path) as con:
        (run_id,) = con.execute("SELECT run_id FROM runs").fetchone()
        con.execute(
            "UPDATE judge_results SET result = '{\"judge\": 3' WHERE rowid = "
            "(SELECT MIN(rowid) FROM judge_results)"
        )
    with pytest.raises(SystemExit) as exit_:
        main(["runs", "show", run_id])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2
    assert len(err.splitlines()) == 1, err
    assert f"run {run_id}" in err and "table judge_results" in err and str(path) in err


def test_disk_full_says_so_and_that_nothing_was_lost(tmp_path):
    """Issue 30 item 5: a full disk is not a corrupt store (the old message said to move it
    aside); a real full file system, a small tmpfs."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(mnt)]).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        store = open_store(mnt / "runs.sqlite")
        store.create_run(manifest())
        big = "x" * 20_000
        written = 0
        with pytest.raises(StoreFullError) as err:
            for i in range(200):
                store.put_answers(
                    "r1",
                    [
                        Answer(
                            case_id=f"q{i}",
                            k=1,
                            text=big,
                            context_ids=[],
                            contexts=[],
                            generator="g",
                        )
                    ],
                )
                written += 1
        msg = str(err.value)
        assert "the disk is full" in msg and str(mnt) in msg and "nothing stored" in msg
        assert "corrupt" not in msg and "move it aside" not in msg
        assert written > 0 and len(store.answers("r1")) == written  # every batch before it
    finally:
        subprocess.run(["umount", "-l", str(mnt)])


def test_the_store_password_never_appears(postgres, capsys, monkeypatch, tmp_path):
    from ragjudge.cli import main
    from tests.fixtures.postgres import PASSWORD

    url = postgres.fresh_url()
    store = open_store(url)
    assert PASSWORD not in store.location and "***" in store.location
    store.create_run(manifest())
    monkeypatch.setenv("RAGJUDGE_STORE_URL", url)
    monkeypatch.setenv("RAGJUDGE_HOME", str(tmp_path))
    main_code = None
    try:
        main(["runs", "list"])
    except SystemExit as exc:
        main_code = exc.code
    out = capsys.readouterr()
    assert main_code in (None, 0) and "r1" in out.out
    assert PASSWORD not in out.out + out.err
    bad = url.replace(PASSWORD, PASSWORD + "-wrong")
    with pytest.raises(StateFileError) as err:
        open_store(bad)
    assert PASSWORD not in str(err.value) and "***" in str(err.value)


def test_a_sqlite_reader_is_never_blocked_by_a_writer(tmp_path):
    path = tmp_path / "runs.sqlite"
    store = open_store(path, busy_timeout=5)
    store.create_run(manifest())
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sqlite3, time
            c = sqlite3.connect({str(path)!r}, isolation_level=None)
            c.execute("BEGIN IMMEDIATE")
            c.execute("UPDATE runs SET status = 'x'")
            print("writing", flush=True)
            time.sleep(30)
        """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "writing"
        started = time.monotonic()
        assert [m.run_id for m in open_store(path).list_runs()] == ["r1"]
        assert store.counts("r1")["answers"] == 0
        assert time.monotonic() - started < 1.0
    finally:
        holder.kill()
        holder.wait()


def test_view_reads_scores_from_columns_and_parses_a_result_when_asked(store_url):
    """RunView keeps judge results as stored: scores and statuses come from their columns,
    a result is parsed on access, iteration is (judge, case, k) on both backends, and a
    corrupt result is found when parsed (``validate`` parses all: ``store check``)."""
    import sqlalchemy as sa

    from ragjudge.store import CorruptRowError

    store = open_store(store_url)
    store.create_run(manifest())
    rows = [
        StoredJudgeResult(c, k, j, result(c, k, None if c == "q2" else 0.25 * k))
        for j in ("relevancy", "faithfulness")
        for c in ("q2", "q10", "q1")
        for k in (2, 1)
    ]
    store.put_judge_results("r1", rows)
    view = RunView.read(store, "r1")
    want = sorted((r.judge, r.k, r.case_id) for r in rows)
    assert list(view.results) == sorted(want, key=lambda key: (key[0], key[2], key[1]))
    assert view.results.scores[("faithfulness", 2, "q1")] == 0.5
    assert view.results.statuses[("relevancy", 1, "q2")] is JudgeStatus.no_claims
    given = {(r.judge, r.k, r.case_id): r.result for r in rows}
    assert view.results[("faithfulness", 2, "q1")] == given[("faithfulness", 2, "q1")]
    assert [r.result for r in store.judge_results("r1")] == [view.results[k] for k in view.results]
    fresh = RunView.read(store, "r1").results
    assert [fresh.usage(k) for k in fresh] == [given[k].usage for k in fresh]  # field alone
    assert fresh.usage(("faithfulness", 2, "q1")) == TokenUsage(prompt_tokens=10, calls=1)

    engine = sa.create_engine(_sql_url(store_url))
    with engine.begin() as c:
        c.execute(
            sa.text("UPDATE judge_results SET result = '{\"judge\": 3' WHERE case_id = 'q10'")
        )
    view = RunView.read(store, "r1")  # the columns read, nothing parsed: no error yet
    assert view.results.score(("faithfulness", 1, "q1")) == 0.25
    assert view.results[("faithfulness", 1, "q1")].score == 0.25
    for found in (
        lambda: view.results[("relevancy", 2, "q10")],
        lambda: view.results.usage(("relevancy", 2, "q10")),
        view.validate,
    ):
        with pytest.raises(CorruptRowError) as err:
            found()
        assert "run r1: a corrupt row in table judge_results" in str(err.value)
        assert len(str(err.value).splitlines()) == 1
    with engine.begin() as c:
        c.execute(sa.text("UPDATE judge_results SET status = 'bogus' WHERE case_id = 'q2'"))
    with pytest.raises(CorruptRowError, match=r"judge_results \(faithfulness q2@k1\): status"):
        RunView.read(store, "r1").results.statuses  # noqa: B018 (the property raises)
    engine.dispose()
