"""The ``ragjudge ui`` app over a real SQLite run store, through HTTP (Starlette's client):
token and host checks, CSRF, read-only, labels stored with who/when/version, two labelers kept,
export to the CSV ``ragjudge agree`` reads and import from it."""

from __future__ import annotations

import csv
import io
import subprocess
import sys

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from ragjudge.cli import app as cli
from ragjudge.store import RunStore, open_store
from ragjudge.store.view import RunView
from ragjudge.sweep.run import run_sweep
from ragjudge.ui.app import create_app
from ragjudge.ui.pages import Pages
from ragjudge.ui.serve import is_loopback
from tests.test_sweep_run import config, make_testset, parts

LOCAL = "http://127.0.0.1"


@pytest.fixture
def stored(store_url) -> tuple[RunStore, str]:
    """A finished run in a SQLite store, then in a PostgreSQL one (``store_url``)."""
    store = open_store(store_url)
    out = run_sweep(config(), store=store, components=parts(), testset=make_testset())
    return store, out.run_id


def _label(client: TestClient, csrf: str, run_id: str, labeler: str) -> str:
    """Label the first item of ``labeler``'s queue yes on every dimension; its item id."""
    page = client.get(f"/label?run={run_id}&labeler={labeler}").text
    item = page.split('name="item_id" value="')[1].split('"')[0]
    dims = {"dim:answer_relevancy": "1", "dim:faithfulness": "1", "dim:context_precision": "0"}
    res = client.post(
        "/label",
        data={"csrf": csrf, "run": run_id, "labeler": labeler, "item_id": item, **dims},
        follow_redirects=False,
    )
    assert res.status_code == 303
    return item


def test_every_page_answers_and_a_foreign_host_is_refused(stored):
    store, run_id = stored
    client = TestClient(create_app(store), base_url=LOCAL)
    for path in (
        "/",
        f"/runs/{run_id}",
        f"/runs/{run_id}/cases",
        f"/runs/{run_id}/cases/q-copper",
        f"/compare?run={run_id}&baseline={run_id}",
        "/history",
        f"/label?run={run_id}",
        f"/agreement?run={run_id}",
    ):
        res = client.get(path)
        assert res.status_code == 200, path
        assert "script-src 'self'" in res.headers["content-security-policy"]
    assert client.get("/", headers={"host": "evil.example"}).status_code == 400
    assert client.get("/runs/nope").status_code == 404
    manifest = store.manifest(run_id)  # its start is stamped to the microsecond; shown to the s
    assert manifest.started_at[19] == "." and manifest.finished_at is not None
    page = client.get(f"/runs/{run_id}").text
    shown = [f"{t[:10]} {t[11:19]} UTC" for t in (manifest.started_at, manifest.finished_at)]
    assert f"started {shown[0]}, finished {shown[1]}," in page


def test_token_is_required_off_loopback(stored, store_url):
    store, _ = stored
    client = TestClient(create_app(store, token="s3cret", allowed_hosts=["*"]), base_url=LOCAL)
    assert client.get("/").status_code == 401
    assert client.get("/?token=wrong").status_code == 401
    assert client.get("/?token=s3cret").status_code == 200
    assert client.get("/").status_code == 200  # the cookie carries it now
    assert is_loopback("127.0.0.1") and is_loopback("::1") and not is_loopback("0.0.0.0")
    argv = [sys.executable, "-m", "ragjudge", "ui", "--store", store_url]
    argv += ["--host", "0.0.0.0", "--no-token", "--no-browser"]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "needs a token" in res.stderr
    assert "Traceback" not in res.stderr


def test_csrf_and_read_only(stored):
    store, run_id = stored
    app = create_app(store)
    client = TestClient(app, base_url=LOCAL)
    res = client.post(f"/runs/{run_id}/tag", data={"tag": "baseline"})
    assert res.status_code == 403 and store.find_by_tag("baseline") == []
    res = client.post(
        f"/runs/{run_id}/tag",
        data={"tag": "baseline", "csrf": app.state.csrf},
        follow_redirects=False,
    )
    assert res.status_code == 303 and [m.run_id for m in store.find_by_tag("baseline")] == [run_id]
    ro = create_app(store, read_only=True)
    res = TestClient(ro, base_url=LOCAL).post(
        f"/runs/{run_id}/tag", data={"tag": "x", "csrf": ro.state.csrf}
    )
    assert res.status_code == 403 and store.find_by_tag("x") == []


def test_labels_two_labelers_export_agree_and_import(stored, store_url, tmp_path):
    store, run_id = stored
    app = create_app(store)
    client = TestClient(app, base_url=LOCAL)
    first = _label(client, app.state.csrf, run_id, "ana")
    assert _label(client, app.state.csrf, run_id, "ana") != first  # the queue moves on
    assert _label(client, app.state.csrf, run_id, "bo") == first  # bo's queue starts the same
    # what is left to label, not the size of the queue page (it said 20 whatever was left)
    judged = {r.item_id for r in Pages(store).run_data(run_id).results}
    page = " ".join(client.get(f"/label?run={run_id}&labeler=ana").text.split())
    assert f"ana · 2 labelled · {len(judged) - 2} not labelled yet" in page
    stored_labels = store.labels(run_id)
    assert len(stored_labels) == 9
    on_first = [s for s in stored_labels if f"{s.case_id}@k{s.k}" == first]
    assert {s.labeler for s in on_first} == {"ana", "bo"}  # both kept
    assert all(s.created_at and s.judge_version == "1" for s in stored_labels)

    page = client.get(f"/agreement?run={run_id}").text
    assert "9 labels in the run store (2 labelers)" in page
    exported = client.get(f"/labels.csv?run={run_id}").text
    rows = list(csv.DictReader(io.StringIO(exported)))
    assert len(rows) == 9 and {r["annotator"] for r in rows} == {"ana", "bo"}
    path = tmp_path / "labels.csv"
    path.write_text(exported, encoding="utf-8")
    res = CliRunner().invoke(
        cli,
        ["agree", "--labels", str(path), "--run", run_id, "--store", store_url],
    )
    assert res.exit_code == 0, res.output
    assert "faithfulness" in res.output

    other = open_store(tmp_path / "other.sqlite")
    out = run_sweep(config(), store=other, components=parts(), testset=make_testset())
    app2 = create_app(other)
    res = TestClient(app2, base_url=LOCAL).post(
        "/labels/import",
        data={"csrf": app2.state.csrf, "run": out.run_id},
        files={"file": ("labels.csv", exported.encode(), "text/csv")},
        follow_redirects=False,
    )
    assert res.status_code == 303
    imported = other.labels(out.run_id)
    assert sorted((s.case_id, s.k, s.judge, s.labeler, s.raw) for s in imported) == sorted(
        (s.case_id, s.k, s.judge, s.labeler, s.raw) for s in stored_labels
    )


def test_case_explorer_filters_and_moved_most(stored, tmp_path):

    store, run_id = stored
    # a second run whose faithfulness dropped on q-tin only
    other = run_sweep(config(), store=store, components=parts(), testset=make_testset(), new=True)
    rows = store.judge_results(other.run_id)
    worse = [
        r._replace(result=r.result.model_copy(update={"score": 0.0}))
        for r in rows
        if r.judge == "faithfulness" and r.case_id == "q-tin"
    ]
    store.put_judge_results(other.run_id, worse)
    pages = Pages(store)
    e = pages.explorer(other.run_id, k=2, judge="faithfulness", baseline=run_id)
    assert e.rows[0].case_id == "q-tin" and e.rows[0].moved is not None and e.rows[0].moved < 0
    found = pages.explorer(other.run_id, k=2, q="COPPER").rows  # question or answer text
    view = RunView.read(store, other.run_id)
    answers = {c: a.text for (c, k), a in view.answers.items() if k == 2}
    assert "q-copper" in {r.case_id for r in found} and len(found) < 7
    assert all("copper" in (r.question + answers[r.case_id]).lower() for r in found)
    assert all(
        r.scores["faithfulness"] is not None and r.scores["faithfulness"] >= 0.5
        for r in pages.explorer(other.run_id, k=2, judge="faithfulness", lo=0.5).rows
    )
    ok = pages.explorer(other.run_id, k=2, judge="context_precision", status="ok").rows
    assert ok and all(r.statuses["context_precision"] == "ok" for r in ok)
    client = TestClient(create_app(store), base_url=LOCAL)
    page = client.get(f"/runs/{other.run_id}/cases?k=2&judge=faithfulness&baseline={run_id}")
    assert page.text.index("q-tin") < page.text.index("q-copper")
    # the filter offers every judge status and nothing else: "failed" matched no row at all
    assert "<option>judge_error</option>" in page.text and "<option>timeout</option>" in page.text
    assert "<option>failed</option>" not in page.text
    bad = client.get(f"/runs/{other.run_id}/cases?k=2&status=failed")
    assert bad.status_code == 400 and "status: 'failed' is none of ok," in bad.text, bad.text


def test_a_run_summary_is_kept_when_the_run_ends_and_dropped_by_any_write(stored):
    from ragjudge.sweep.digest import RunDigest, digest

    store, run_id = stored
    ((status, text),) = store.summaries([run_id]).values()  # kept by the sweep as it ended
    kept = RunDigest.model_validate_json(text)
    assert status == "finished" and kept.status == "finished" and kept.summary.choice.best_k
    # the run page reads the kept summary: a planted one (best k 97) is what it shows
    planted = kept.model_copy(
        update={"summary": kept.summary.model_copy(update={"ks": [*kept.summary.ks, 97]})}
    )
    store.put_summary(run_id, "finished", planted.model_dump_json())
    page = TestClient(create_app(store), base_url=LOCAL).get(f"/runs/{run_id}").text
    assert "<th>97</th>" in page or ">97<" in page
    # any write to the run drops it; the next read computes it once and keeps it again
    store.put_judge_results(run_id, store.judge_results(run_id)[:1])
    assert store.summaries([run_id]) == {}
    assert digest(store, run_id).summary.ks == kept.summary.ks
    assert run_id in store.summaries([run_id])
    store.set_status(run_id, "running")  # a resume
    assert store.summaries([run_id]) == {}
    with store.lease(run_id):  # a live writer: its summary is computed, never kept
        assert digest(store, run_id).status == "running"
        assert store.summaries([run_id]) == {}


def test_the_case_explorer_reads_its_page_only(stored):
    from ragjudge.store import CaseQuery
    from ragjudge.ui.pages import Pages

    store, run_id = stored
    everything = sorted({r.case_id for r in store.judge_results(run_id)})
    total, first = store.find_cases(run_id, CaseQuery(k=1, judge="faithfulness", limit=3))
    _, rest = store.find_cases(run_id, CaseQuery(k=1, judge="faithfulness", offset=3, limit=99))
    assert total == len(everything) and [h.case_id for h in first + rest] == everything
    assert set(first[0].scores) == {r.judge for r in store.judge_results(run_id)}
    e = Pages(store).explorer(run_id, k=1, per_page=3, page=99)  # past the end: the last page
    assert e.pages == -(-total // 3) and e.page == e.pages and e.rows
    assert [r.case_id for r in e.rows] == everything[(e.pages - 1) * 3 :]


def test_a_case_against_a_baseline_marks_the_claims_that_flipped(stored):
    from ragjudge.schema import ClaimVerdict, Evidence
    from ragjudge.ui.pages import Pages

    store, run_id = stored
    other = run_sweep(config(), store=store, components=parts(), testset=make_testset(), new=True)
    (r,) = [
        r
        for r in store.judge_results(other.run_id)
        if (r.judge, r.case_id, r.k) == ("faithfulness", "q-tin", 2)
    ]
    flipped = ClaimVerdict(claim="Tin melts at 232 degrees.", verdict="unsupported")
    kept = ClaimVerdict(claim="Tin is a metal.", verdict="supported")
    for rid, verdict in ((run_id, "supported"), (other.run_id, "unsupported")):
        ev = Evidence(claims=[flipped.model_copy(update={"verdict": verdict}), kept])
        store.put_judge_results(
            rid, [r._replace(result=r.result.model_copy(update={"evidence": ev}))]
        )
    cell = next(
        j
        for col in Pages(store).case(other.run_id, "q-tin", baseline=run_id).columns
        if col.k == 2
        for j in col.judges
        if j.judge == "faithfulness"
    )
    assert [(c.claim, c.before) for c in cell.claims] == [
        ("Tin melts at 232 degrees.", "supported"),
        ("Tin is a metal.", None),
    ]
    page = TestClient(create_app(store), base_url=LOCAL).get(
        f"/runs/{other.run_id}/cases/q-tin?baseline={run_id}"
    )
    assert page.text.count('class="claim unsupported flipped"') == 1


def test_graded_labels_made_in_the_page_feed_agree_with_no_file(stored, store_url):
    store, run_id = stored
    app = create_app(store)
    client = TestClient(app, base_url=LOCAL)
    agree = [sys.executable, "-m", "ragjudge", "agree", "--run", run_id, "--store", store_url]
    bare = subprocess.run(agree, capture_output=True, text=True, timeout=300)
    assert bare.returncode == 2 and "has no stored labels" in bare.stderr
    assert "Traceback" not in bare.stderr
    page = client.get(f"/label?run={run_id}&labeler=ana&scale=ordinal").text
    assert 'value="5"' in page and 'name="scale" value="ordinal"' in page
    for grade in ("2", "4", "5", "1", "3"):
        page = client.get(f"/label?run={run_id}&labeler=ana&scale=ordinal").text
        item = page.split('name="item_id" value="')[1].split('"')[0]
        res = client.post(
            "/label",
            data={
                "csrf": app.state.csrf,
                "run": run_id,
                "labeler": "ana",
                "item_id": item,
                "scale": "ordinal",
                "dim:faithfulness": grade,
            },
            follow_redirects=False,
        )
        assert res.status_code == 303 and "scale=ordinal" in res.headers["location"]
    labels = store.labels(run_id, judge="faithfulness")
    assert sorted(lab.raw for lab in labels) == ["1", "2", "3", "4", "5"]
    assert {lab.scale for lab in labels} == {"ordinal"}
    # one dimension, one scale: a yes/no label of it now is refused, saying why
    refused = client.post(
        "/label",
        data={
            "csrf": app.state.csrf,
            "run": run_id,
            "labeler": "bo",
            "item_id": labels[0].item_id,
            "dim:faithfulness": "1",
        },
    )
    assert refused.status_code == 400 and "ordinal scale" in refused.text
    res = CliRunner().invoke(cli, ["agree", "--run", run_id, "--store", store_url])
    assert res.exit_code == 0, res.output
    assert "faithfulness (ordinal): 5/5 labelled" in res.output


def test_the_runs_list_counts_every_run_in_one_query(stored):
    import sqlalchemy as sa

    from ragjudge.schema import Answer
    from ragjudge.ui.pages import Pages

    store, run_id = stored
    base = store.manifest(run_id)
    for i in range(5):  # running runs: the list shows their counts only
        store.create_run(base.model_copy(update={"run_id": f"live{i}", "status": "running"}))
    store.put_answers(
        "live3",
        [
            Answer(case_id=f"c{i}", k=1, text="x", context_ids=[], contexts=[], generator="g")
            for i in range(4)
        ],
    )
    seen: list[str] = []
    sa.event.listen(store._engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    rows = {r.run_id: r for r in Pages(store).runs()}
    counting = [s for s in seen if "count(" in s.lower()]
    assert len(counting) == 1, counting
    for rid in (run_id, "live0", "live3"):
        n = store.counts(rid)
        assert (rows[rid].answers, rows[rid].judged) == (n["answers"], n["judge_results"])
    assert rows["live3"].answers == 4 and rows["live0"].answers == 0
    assert rows[run_id].judged == len(store.judge_results(run_id)) > 0
