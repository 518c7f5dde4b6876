"""The ``ragjudge ui`` app and ``ragjudge ui`` given bad input: every refusal is one line with
the HTTP status that says what went wrong (400 naming the field, 404 for a missing run or
case, 500/503 for the store), nothing is stored by a refused request, and a label is never
stored twice; the command line binds before it prints its URL and says in one line (exit 2)
why it cannot serve."""

from __future__ import annotations

import csv
import io
import socket
import subprocess
import sys
import urllib.request

import pytest
from starlette.testclient import TestClient

from ragjudge.errors import StateFileError
from ragjudge.store import RunStore, open_store
from ragjudge.store.base import StoreLockedError
from ragjudge.sweep.run import run_sweep
from ragjudge.ui.app import create_app
from tests.test_sweep_run import config, make_testset, parts

LOCAL = "http://127.0.0.1"
DIMS = {"dim:answer_relevancy": "1", "dim:faithfulness": "1", "dim:context_precision": "0"}


@pytest.fixture
def stored(tmp_path) -> tuple[RunStore, str]:
    """A finished run in a SQLite store."""
    store = open_store(tmp_path / "runs.sqlite")
    out = run_sweep(config(), store=store, components=parts(), testset=make_testset())
    return store, out.run_id


def _client(store: RunStore) -> tuple[TestClient, str]:
    app = create_app(store)
    return TestClient(app, base_url=LOCAL, raise_server_exceptions=False), app.state.csrf


def _first_item(client: TestClient, run_id: str, labeler: str = "ana") -> str:
    page = client.get(f"/label?run={run_id}&labeler={labeler}").text
    return page.split('name="item_id" value="')[1].split('"')[0]


def _one_line(res, status: int, *needles: str) -> None:
    assert res.status_code == status, (res.status_code, res.text)
    assert res.text.startswith(f"{status}: ") and "\n" not in res.text.strip(), res.text
    assert "Traceback" not in res.text and "KeyError" not in res.text
    for needle in needles:
        assert needle in res.text, (needle, res.text)


def test_a_label_of_no_judged_item_or_of_no_dimension_is_refused(stored):
    store, run_id = stored
    client, csrf = _client(store)
    form = {"csrf": csrf, "run": run_id, "labeler": "ana"}
    for item in ("q-nothing@k1", "q-copper@k99", "garbage"):
        res = client.post("/label", data={**form, "item_id": item, **DIMS})
        _one_line(res, 400, "item_id", repr(item), "no judged item")
    item = _first_item(client, run_id)
    res = client.post("/label", data={**form, "item_id": item})  # no dimension chosen
    _one_line(res, 400, "dim:answer_relevancy, dim:context_precision, dim:faithfulness")
    res = client.post("/label", data={**form, "item_id": item, "dim:faithfulness": "7"})
    _one_line(res, 400, "dim:faithfulness", "'7'", "binary")
    assert store.labels(run_id) == []
    # agree still reads the run: nothing stored names an item it does not hold
    res = client.post("/label", data={**form, "item_id": item, **DIMS}, follow_redirects=False)
    assert res.status_code == 303 and len(store.labels(run_id)) == 3


def test_a_label_posted_twice_is_stored_once_and_never_changed(stored):
    store, run_id = stored
    client, csrf = _client(store)
    item = _first_item(client, run_id)
    form = {"csrf": csrf, "run": run_id, "labeler": "ana", "item_id": item}
    for _ in range(2):  # a double submit
        res = client.post("/label", data={**form, **DIMS}, follow_redirects=False)
        assert res.status_code == 303
    assert len(store.labels(run_id)) == 3
    res = client.post("/label", data={**form, "dim:faithfulness": "0"})
    _one_line(res, 400, f"ana labelled faithfulness of item {item} '1' already, '0' here")
    assert len(store.labels(run_id)) == 3


def test_importing_a_csv_twice_adds_nothing_and_keeps_notes_versions_and_times(store_url, tmp_path):
    from typer.testing import CliRunner

    from ragjudge.cli import app as cli

    store = open_store(store_url)
    run_id = run_sweep(config(), store=store, components=parts(), testset=make_testset()).run_id
    client, csrf = _client(store)
    item = _first_item(client, run_id)
    form = {"csrf": csrf, "run": run_id, "labeler": "ana", "item_id": item, "note": "ctx 2"}
    client.post("/label", data={**form, **DIMS})
    exported = client.get(f"/labels.csv?run={run_id}").text

    def upload(body: str, name: str = "mine.csv", run: str = run_id):
        return client.post(
            "/labels/import",
            data={"csrf": csrf, "run": run},
            files={"file": (name, body.encode(), "text/csv")},
            follow_redirects=False,
        )

    for _ in range(2):
        assert upload(exported).status_code == 303
    assert len(store.labels(run_id)) == 3  # nothing added: every row is stored already
    again = client.get(f"/labels.csv?run={run_id}").text
    path = tmp_path / "labels.csv"
    path.write_text(again, encoding="utf-8")
    argv = ["agree", "--labels", str(path), "--run", run_id, "--store", store_url]
    res = CliRunner().invoke(cli, argv)
    assert res.exit_code == 0, res.output  # no duplicates for agree to refuse

    other = run_sweep(
        config(), store=store, components=parts(), testset=make_testset(), new=True
    ).run_id
    assert upload(exported, run=other).status_code == 303
    old = {(s.item_id, s.judge): s for s in store.labels(run_id)}
    for lab in store.labels(other):
        was = old[(lab.item_id, lab.judge)]
        assert (lab.note, lab.judge_version, lab.created_at) == (
            "ctx 2",
            was.judge_version,
            was.created_at,
        )
        assert lab.judge_version == "1"

    rows = list(csv.DictReader(io.StringIO(exported)))
    changed = dict(rows[0], label="0" if rows[0]["label"] == "1" else "1")
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerow(changed)
    res = upload(buf.getvalue())
    _one_line(res, 400, "mine.csv:2: ana labelled", "a stored label is not changed")
    res = upload("item_id,dimension,label\nq01,faithfulness,1\n", name="sheet.csv")
    _one_line(res, 400, "sheet.csv:2: item id 'q01' matches no judged item")
    assert "/tmp" not in res.text and "labels.csv" not in res.text
    res = upload(f"item_id,dimension,label\n{item},kindness,1\n")
    _one_line(res, 400, "mine.csv:2: dimension 'kindness' is no judge", "faithfulness")
    res = upload(f"item_id,dimension,label,labelled_at\n{item},faithfulness,1,yesterday\n")
    _one_line(res, 400, "mine.csv:2: labelled_at 'yesterday'")
    assert len(store.labels(run_id)) == 3


def test_a_run_resumed_with_a_judge_more_is_read_again(stored):
    store, run_id = stored
    client, csrf = _client(store)
    assert "completeness" not in client.get(f"/label?run={run_id}&labeler=ana").text
    # a resume adds a judge: running, its results written, finished again
    store.set_status(run_id, "running")
    extra = [
        r._replace(
            judge="completeness", result=r.result.model_copy(update={"judge": "completeness"})
        )
        for r in store.judge_results(run_id)
        if r.judge == "faithfulness"
    ]
    store.put_judge_results(run_id, extra)
    store.set_status(run_id, "finished")
    assert "dim:completeness" in client.get(f"/label?run={run_id}&labeler=ana").text
    item = _first_item(client, run_id)
    form = {"csrf": csrf, "run": run_id, "labeler": "ana", "item_id": item}
    res = client.post("/label", data={**form, "dim:completeness": "1"}, follow_redirects=False)
    assert res.status_code == 303
    assert [lab.judge for lab in store.labels(run_id)] == ["completeness"]


def test_a_malformed_request_is_400_naming_the_field(stored):
    store, run_id = stored
    client, csrf = _client(store)
    _one_line(client.get("/labels.csv"), 400, "'run'")
    _one_line(client.post("/label", data={"csrf": csrf, "labeler": "ana"}), 400, "'run'")
    res = client.post("/label", data={"csrf": csrf, "run": run_id, "labeler": "ana"})
    _one_line(res, 400, "'item_id'")
    res = client.post(
        "/labels/import",
        data={"csrf": csrf},
        files={"file": ("mine.csv", b"item_id,dimension,label\n", "text/csv")},
    )
    _one_line(res, 400, "'run'")
    for query, field in (("page=x", "'page'"), ("k=1.5", "'k'"), ("min=high", "'min'")):
        _one_line(client.get(f"/runs/{run_id}/cases?{query}"), 400, field)
    _one_line(client.get("/?page=2x"), 400, "'page'")
    huge = "9" * 20
    last = client.get(f"/runs/{run_id}/cases?page={huge}")  # past the end: the last page
    assert last.status_code == 200 and "q-copper" in last.text
    assert client.get(f"/runs/{run_id}/cases?k={huge}&page=-{huge}").status_code == 200
    assert client.get(f"/?page={huge}").status_code == 200


def test_each_error_has_its_status(stored, monkeypatch):
    store, run_id = stored
    client, _ = _client(store)
    _one_line(client.get("/runs/nope"), 404, "no run 'nope'")
    _one_line(client.get("/label?run=x&labeler=a"), 404, "no run 'x'")
    res = client.get(f"/runs/{run_id}/cases/doesnotexist")
    _one_line(res, 404, f"no case 'doesnotexist' in run {run_id}")
    _one_line(client.get(f"/compare?run={run_id}&baseline=nope"), 404, "no run 'nope'")

    def broken(*args, **kwargs):
        raise StateFileError("runs.sqlite: not a readable SQLite database (disk I/O error)")

    monkeypatch.setattr(store, "labels", broken)
    _one_line(client.get(f"/labels.csv?run={run_id}"), 500, "runs.sqlite: not a readable")

    def locked(*args, **kwargs):
        raise StoreLockedError("run store runs.sqlite is locked by another process")

    monkeypatch.setattr(store, "labels", locked)
    _one_line(client.get(f"/labels.csv?run={run_id}"), 503, "locked by another process")


def test_a_bug_is_one_line_without_a_traceback(stored, monkeypatch, capfd):
    """An error that is no ragjudge error gave Starlette's 500 and a traceback on the server's
    console: now one redacted line in both."""
    store, run_id = stored
    client = TestClient(create_app(store), base_url=LOCAL)  # raises what the app lets out

    def bug(*args, **kwargs):
        raise TypeError("unsupported operand")

    monkeypatch.setattr(store, "labels", bug)
    _one_line(client.get(f"/labels.csv?run={run_id}"), 500, "internal error TypeError")
    err = capfd.readouterr().err
    assert "Traceback" not in err and "internal error TypeError: unsupported operand" in err


def test_a_tag_redirects_only_to_a_path_of_this_server(stored):
    store, run_id = stored
    client, csrf = _client(store)
    for target in ("https://evil.example/", "//evil.example/", "/\\evil.example/", "runs"):
        res = client.post(
            f"/runs/{run_id}/tag",
            data={"csrf": csrf, "tag": "baseline", "next": target},
            follow_redirects=False,
        )
        _one_line(res, 400, "'next'", "not a path on this server")
    assert store.find_by_tag("baseline") == []
    res = client.post(
        f"/runs/{run_id}/tag",
        data={"csrf": csrf, "tag": "baseline", "next": f"/runs/{run_id}"},
        follow_redirects=False,
    )
    assert res.status_code == 303 and res.headers["location"] == f"/runs/{run_id}"


def _ui(store: str, *args: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "ragjudge", "ui", "--store", store, "--no-browser", *args]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("host", ["127.0.0.2", "::1"])
def test_ui_prints_and_accepts_the_address_it_serves(stored, tmp_path, host):
    proc = _ui(str(tmp_path / "runs.sqlite"), "--host", host)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        shown = f"[{host}]" if ":" in host else host
        assert line.startswith(f"ragjudge ui: http://{shown}:"), line
        url = line.split()[2]
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with direct.open(url, timeout=30) as res:  # the Host it was given is served
            assert res.status == 200
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_ui_that_cannot_serve_says_why_in_one_line_and_exits_2(stored, tmp_path):
    store = str(tmp_path / "runs.sqlite")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cases = [
            (["--port", str(port)], f"--port {port}: in use on 127.0.0.1"),
            (["--port", "99999"], "'--port'"),
            (["--host", "nosuch.invalid"], "--host nosuch.invalid: no such address"),
            (["--host", "192.0.2.1"], "--host 192.0.2.1: cannot serve there"),
        ]
        for args, needle in cases:
            proc = _ui(store, *args)
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 2, (args, proc.returncode, err)
            assert "http://" not in out, (args, out)  # no URL announced
            assert needle in err and len(err.strip().splitlines()) == 1, (args, err)
            assert "Traceback" not in err and "internal error" not in err
