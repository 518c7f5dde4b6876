"""A PostgreSQL restart under a live writer: the restart ends the session holding the run's
advisory lock, while the store's own writes reconnect by themselves. The writer must find out
before its next write: it takes the lease again when no one else did, else it stops with one
line and writes nothing more of the run (a second process resuming it meanwhile paid the LLM
calls twice and both wrote the ledger)."""

from __future__ import annotations

import threading

import pytest

from ragjudge.schema import Answer, RunManifest
from ragjudge.store import RunLockedError, open_store
from ragjudge.store.sql import SqlRunStore
from tests.fixtures.postgres import PgServer
from tests.test_latest_run import manifest


def running(run_id: str) -> RunManifest:
    return manifest(run_id, "1", "running")


def answer(case_id: str) -> Answer:
    return Answer(case_id=case_id, k=1, text="x", context_ids=[], contexts=[], generator="g")


def two_stores(postgres: PgServer) -> tuple[SqlRunStore, SqlRunStore]:
    """A writer's store holding run r1 (not yet leased) and a second process's store."""
    url = postgres.fresh_url()
    writer, other = open_store(url), open_store(url)
    assert isinstance(writer, SqlRunStore) and isinstance(other, SqlRunStore)
    writer.create_run(running("r1"))
    return writer, other


def test_a_lease_lost_to_a_restart_is_taken_again_when_no_one_took_it(postgres: PgServer):
    writer, other = two_stores(postgres)
    with writer.lease("r1"):
        writer.put_answers("r1", [answer("q1")])
        postgres.restart()
        writer.put_answers("r1", [answer("q2")])  # the next write takes the lease again
        with pytest.raises(RunLockedError, match="being written by another process"):
            other.lease("r1").__enter__()
        assert other.writer_alive("r1") and other.manifest("r1").status == "running"
    assert sorted(a.case_id for a in other.answers("r1")) == ["q1", "q2"]
    with other.lease("r1"):  # released at the end of the block
        pass


def test_a_lease_lost_while_the_server_is_still_down_is_taken_once_it_is_back(
    postgres: PgServer,
):
    writer, other = two_stores(postgres)
    with writer.lease("r1"):
        postgres.stop("immediate")
        back = threading.Timer(0.5, postgres.start)
        back.start()
        try:
            writer.put_answers("r1", [answer("q1")])  # retried until the server is back
        finally:
            back.join()
        with pytest.raises(RunLockedError, match="being written by another process"):
            other.lease("r1").__enter__()
    assert [a.case_id for a in other.answers("r1")] == ["q1"]


def test_a_writer_whose_lease_another_process_took_after_a_restart_stops_before_writing(
    postgres: PgServer,
):
    writer, other = two_stores(postgres)
    with writer.lease("r1"):
        postgres.restart()
        with other.lease("r1"):  # the run reads as interrupted: a second process resumes it
            with pytest.raises(RunLockedError, match="lost the lease on run r1") as lost:
                writer.put_answers("r1", [answer("q1")])
            message = str(lost.value)
            assert type(lost.value).__name__ == "LeaseLostError" and "\n" not in message
            assert "another process took it over" in message and "run the same command" in message
            assert other.answers("r1") == []
            with pytest.raises(RunLockedError, match="lost the lease on run r1"):
                writer.set_status("r1", "failed")  # every later write too: the run is not its
            assert other.manifest("r1").status == "running"
            writer.create_run(running("r2"))  # a run it never leased is not its lease's
            other.put_answers("r1", [answer("q2")])
        with pytest.raises(RunLockedError, match="lost the lease on run r1"):
            writer.put_answers("r1", [answer("q3")])  # free again, but not retaken
    assert [a.case_id for a in other.answers("r1")] == ["q2"]
