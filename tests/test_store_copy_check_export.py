"""``store copy`` merges into the target without losing what it holds, ``store check`` names
every corrupt row, and ``runs export`` has a column for every configured judge and says when a
run is partial; through the CLI, on SQLite and PostgreSQL (``store_url``)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa

from ragjudge.cli import main
from ragjudge.llm import LedgerEntry
from ragjudge.schema import Answer
from ragjudge.store import RunStore, StoredJudgeResult, open_store
from ragjudge.store.maintain import copy_store
from ragjudge.store.sql import SqlRunStore
from ragjudge.sweep.run import run_sweep
from tests.test_exit_codes import run_cli
from tests.test_store import manifest, result
from tests.test_sweep_run import Crash, config, make_testset, parts

JUDGES = ("answer_relevancy", "context_precision", "faithfulness")


def small_run(store: RunStore, run_id: str = "r1", *, cases: int = 3, **tags: str) -> None:
    """A run of ``cases`` answered and judged cases at k = 1, finished, with ``tags``."""
    store.create_run(manifest(run_id).model_copy(update={"status": "finished", "tags": dict(tags)}))
    ids = [f"q{i:02d}" for i in range(cases)]
    store.put_answers(run_id, [answer(c) for c in ids])
    store.put_judge_results(
        run_id, [StoredJudgeResult(c, 1, "faithfulness", result(c, 1)) for c in ids]
    )


def answer(case_id: str, text: str = "") -> Answer:
    return Answer(
        case_id=case_id,
        k=1,
        text=text or f"answer {case_id}",
        context_ids=["d1"],
        contexts=["Copper is mined in Chile."],
        generator="extractive@1",
    )


def entry(call_id: str) -> LedgerEntry:
    return LedgerEntry(kind="call", call_id=call_id, model="m", cost_usd=0.01)


def corrupt(store: SqlRunStore, sql: str) -> None:
    """Overwrite stored rows with text that is no JSON (a hand edit, a bad copy)."""
    with store.connection(write=True) as conn:
        conn.execute(sa.text(sql))


# ----------------------------------------------------------------------------- store copy


def test_copy_again_keeps_the_targets_tags_and_merges_the_sources(store_url, tmp_path, capsys):
    source = tmp_path / "laptop.sqlite"
    with open_store(source) as src:
        small_run(src, nightly="a")
    code, first = run_cli(["store", "copy", "--from", str(source), "--to", store_url], capsys)
    assert code == 0, first
    for tag in ("baseline", "nightly=b"):
        code, out = run_cli(["runs", "tag", "latest", tag, "--store", store_url], capsys)
        assert code == 0, out
    with open_store(source) as src:
        src.tag("r1", "reviewed", "yes")
    code, out = run_cli(["store", "copy", "--from", str(source), "--to", store_url], capsys)
    assert code == 0, out
    with open_store(store_url) as dst:
        assert dst.manifest("r1").tags == {"baseline": "", "nightly": "b", "reviewed": "yes"}
        assert [m.run_id for m in dst.find_by_tag("baseline")] == ["r1"]
    assert "copied 1 run (1 new, 0 merged; 6 rows written, 0 already" in first, first
    assert "copied 1 run (0 new, 1 merged; 0 rows written, 6 already" in out, out
    assert "run r1: tag nightly: kept the target's value 'b' (the source has 'a')" in out


def test_copy_of_an_older_state_keeps_the_targets_finished_run(store_url, tmp_path, capsys):
    """A killed run copied to the team store and resumed there to the end: copying the laptop's
    (still interrupted) run again neither turns it back to interrupted nor touches its rows."""
    source = tmp_path / "laptop.sqlite"
    with open_store(source) as src:
        with pytest.raises(Crash):
            run_sweep(config(), store=src, components=parts(crash_after=10), testset=make_testset())
        (m,) = src.list_runs()
        src.set_status(m.run_id, "running")  # as kill -9 leaves it: no writer, so interrupted
        assert src.manifest(m.run_id).status == "interrupted"
        src.append_ledger(m.run_id, [entry("laptop-1")])
        partial = src.counts(m.run_id)["judge_results"]
    code, out = run_cli(["store", "copy", "--from", str(source), "--to", store_url], capsys)
    assert code == 0, out
    with open_store(store_url) as dst:
        done = run_sweep(config(), store=dst, components=parts(), testset=make_testset())
        assert done.resumed and done.status == "finished"
        dst.append_ledger(m.run_id, [entry("team-1")])
        results, counts = dst.judge_results(m.run_id), dst.counts(m.run_id)
        assert counts["judge_results"] == 3 * 7 * 4 > partial
    with open_store(source) as src:  # the laptop's ledger grows meanwhile
        src.append_ledger(m.run_id, [entry("laptop-2")])
    code, out = run_cli(["store", "copy", "--from", str(source), "--to", store_url], capsys)
    assert code == 0, out
    with open_store(store_url) as dst:
        assert dst.manifest(m.run_id).status == "finished"
        assert dst.judge_results(m.run_id) == results
        calls = [e.call_id for e in dst.ledger(m.run_id)]
        assert {"laptop-1", "team-1", "laptop-2"} <= set(calls)
        assert len(calls) == len(set(calls)) == counts["ledger"] + 1  # only laptop-2 added
    assert (
        f"run {m.run_id}: the source's is interrupted, the target's finished: kept the target's "
        "status and rows, added the rows it lacked"
    ) in out


def test_a_finished_source_wins_over_the_targets_unfinished_run(store_url, tmp_path, capsys):
    source = tmp_path / "laptop.sqlite"
    with open_store(source) as src:
        small_run(src, cases=4)
        src.set_status("r1", "running")
    run_cli(["store", "copy", "--from", str(source), "--to", store_url], capsys)
    with open_store(store_url) as dst:
        dst.tag("r1", "team", "kept")
        dst.put_answers("r1", [answer("only-in-target", "mine")])
    with open_store(source) as src:
        src.put_answers("r1", [answer("q00", "resumed")])
        src.set_status("r1", "finished", finished=True)
    code, out = run_cli(["store", "copy", "--from", str(source), "--to", store_url], capsys)
    assert code == 0, out
    with open_store(store_url) as dst:
        m = dst.manifest("r1")
        assert m.status == "finished" and m.finished_at is not None and m.tags == {"team": "kept"}
        texts = {a.case_id: a.text for a in dst.answers("r1")}
        assert texts["q00"] == "resumed" and texts["only-in-target"] == "mine"
    assert (
        "run r1: the source's is finished, the target's interrupted: took the source's status "
        "and its rows"
    ) in out


def test_a_copy_killed_midway_leaves_a_resumable_run_that_copying_again_completes(
    store_url, tmp_path
):
    class DiesAtJudgeResults:
        """The target store, the copying process dying when it writes judge results."""

        def __init__(self, store: RunStore) -> None:
            self._store = store

        def __getattr__(self, name: str) -> object:
            return getattr(self._store, name)

        def put_judge_results(self, run_id: str, rows: object) -> None:
            raise Crash

    with open_store(tmp_path / "laptop.sqlite") as src, open_store(store_url) as dst:
        small_run(src)
        with pytest.raises(Crash):
            copy_store(src, DiesAtJudgeResults(dst))  # type: ignore[arg-type]
        assert dst.manifest("r1").status == "interrupted"
        assert dst.counts("r1")["judge_results"] == 0
        copy_store(src, dst)
        assert dst.manifest("r1") == src.manifest("r1")
        assert dst.judge_results("r1") == src.judge_results("r1")


# ----------------------------------------------------------------------------- store check


def test_check_lists_every_corrupt_row_of_a_run(store_url, capsys):
    with open_store(store_url) as st:
        small_run(st)
        assert isinstance(st, SqlRunStore)
        corrupt(st, "UPDATE answers SET answer = 'nonsense' WHERE case_id = 'q01'")
        corrupt(st, "UPDATE judge_results SET result = '{oops' WHERE case_id = 'q02'")
    code, out = run_cli(["store", "check", "--store", store_url], capsys)
    assert code == 2 and "1 run, 2 problems" in out, out
    assert "run r1: a corrupt row in table answers (q01@k1)" in out
    assert "run r1: a corrupt row in table judge_results (faithfulness q02@k1)" in out


def test_check_caps_the_rows_listed_per_run_and_counts_the_rest(store_url, capsys):
    with open_store(store_url) as st:
        small_run(st, cases=25)
        assert isinstance(st, SqlRunStore)
        corrupt(st, "UPDATE answers SET answer = 'nonsense'")
    code, out = run_cli(["store", "check", "--store", store_url], capsys)
    assert code == 2 and "1 run, 25 problems" in out, out
    assert out.count("a corrupt row in table answers") == 20
    assert "run r1: 5 more corrupt rows not listed (the first 20 are)" in out


# ----------------------------------------------------------------------------- runs export


def read_export(path: Path, fmt: str) -> pd.DataFrame:
    if fmt == "csv":
        return pd.read_csv(path)
    if fmt == "parquet":
        return pd.read_parquet(path)
    if fmt == "jsonl":
        return pd.DataFrame([json.loads(x) for x in path.read_text().splitlines()])
    return importlib.import_module("datasets").load_from_disk(str(path)).to_pandas()


def test_export_of_a_partial_run_has_every_configured_judge_and_says_so(
    store_url, tmp_path, capsys
):
    with open_store(store_url) as st:
        run_id = run_sweep(config(), store=st, components=parts(), testset=make_testset()).run_id
        assert isinstance(st, SqlRunStore)
        corrupt(st, "DELETE FROM judge_results WHERE judge <> 'context_precision'")
        st.set_status(run_id, "running")  # killed before the other judges stored anything
    columns = None
    for fmt in ("csv", "jsonl", "parquet", "hf"):
        out_path = tmp_path / f"export.{fmt}"
        argv = ["runs", "export", run_id, "--format", fmt, "--out", str(out_path)]
        with pytest.raises(SystemExit) as exit_:
            main([*argv, "--store", store_url])
        cap = capsys.readouterr()
        assert exit_.value.code in (0, None), cap.err
        frame = read_export(out_path, fmt)
        judged = [c for c in frame.columns if c.endswith(("_score", "_status"))]
        assert judged == [f"{j}_{x}" for j in JUDGES for x in ("score", "status")], fmt
        assert frame["faithfulness_score"].isna().all() and len(frame) == 28
        assert frame["context_precision_status"].notna().all()
        columns = columns or [c for c in frame.columns if c != "evidence"]
        assert [c for c in frame.columns if c != "evidence"] == columns, fmt
        said = f"run {run_id} is interrupted: 28 of 84 judge results stored"
        assert said in cap.err.splitlines(), cap.err
        assert cap.out.strip().splitlines()[-1] == f"wrote {out_path}"


def test_export_of_a_finished_run_says_nothing_more(tmp_path, capsys):
    store = str(tmp_path / "runs.sqlite")
    with open_store(store) as st:
        run_sweep(config(), store=st, components=parts(), testset=make_testset())
    code, out = run_cli(
        ["runs", "export", "latest", "-f", "csv", "-o", str(tmp_path / "x.csv"), "--store", store],
        capsys,
    )
    assert code == 0 and out.strip() == f"wrote {tmp_path / 'x.csv'}", out
