"""``latest``: the newest finished run for ``runs tag`` (as for the report), so accepting a
baseline never tags a run killed or failed mid-sweep; the newest run of any status for the
callers that continue one (``sweep --resume latest``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragjudge.errors import ConfigError
from ragjudge.schema import RunManifest
from ragjudge.store import open_store
from tests.test_exit_codes import run_cli


def manifest(run_id: str, started: str, status: str) -> RunManifest:
    return RunManifest(
        run_id=run_id,
        dataset_name="demo",
        dataset_hash="d" * 16,
        config_hash="c" * 16,
        config={"definition": {"ks": [1]}},
        ragjudge_version="0.1.0",
        models={"generator": "extractive@1"},
        started_at=f"2026-01-0{started}T00:00:00+00:00",
        status=status,
    )


def test_runs_tag_latest_tags_the_newest_finished_run(tmp_path: Path, capsys):
    path = tmp_path / "runs.sqlite"
    with open_store(path) as store:
        store.create_run(manifest("r-old", "1", "finished"))
        store.create_run(manifest("r-failed", "2", "failed"))
        store.create_run(manifest("r-new", "3", "running"))  # its writer died: interrupted
    code, out = run_cli(["runs", "tag", "latest", "baseline", "--store", str(path)], capsys)
    assert code == 0 and "tagged r-old with baseline" in out
    with open_store(path) as store:
        assert [m.run_id for m in store.find_by_tag("baseline")] == ["r-old"]


def test_runs_tag_latest_without_a_finished_run_names_the_newest_and_tags_nothing(
    tmp_path: Path, capsys
):
    path = tmp_path / "runs.sqlite"
    with open_store(path) as store:
        store.create_run(manifest("r-failed", "1", "failed"))
        store.create_run(manifest("r-new", "2", "running"))
    code, out = run_cli(["runs", "tag", "latest", "baseline", "--store", str(path)], capsys)
    (line,) = out.strip().splitlines()
    assert code == 2 and "no finished run in" in line
    assert "the newest run, r-new, is interrupted" in line and "by its id" in line
    with open_store(path) as store:
        assert store.find_by_tag("baseline") == []
    code, out = run_cli(["runs", "tag", "r-new", "baseline", "--store", str(path)], capsys)
    assert code == 0 and "tagged r-new with baseline" in out  # by its id: on purpose


def test_latest_of_any_status_and_finished_on_both_backends(store_url):
    store = open_store(store_url)
    with pytest.raises(ConfigError, match="has no runs yet"):
        store.resolve("latest", finished=True)
    store.create_run(manifest("r-old", "1", "finished"))
    store.create_run(manifest("r-new", "2", "interrupted"))
    assert store.resolve("latest") == "r-new"  # what sweep --resume latest continues
    assert store.resolve("latest", finished=True) == "r-old"
