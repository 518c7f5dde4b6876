"""A sweep's ledger in the run store: every entry stored, in order, one transaction per request
sent (not per entry), and a sweep's ledger hooks leave with it when its components are reused
(real client over HTTP to the local test server, real SQLite store)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ragjudge.llm.ledger import LedgerEntry
from ragjudge.store import open_store
from ragjudge.store.sql import SqlRunStore
from ragjudge.sweep.run import run_sweep
from tests.test_sweep_budget import llm_parts, sweep_config
from tests.test_sweep_run import make_testset


class CountingStore(SqlRunStore):
    """The SQLite store, counting the transactions that append to a ledger."""

    appends = 0

    def append_ledger(self, run_id: str, entries: Iterable[LedgerEntry]) -> None:
        CountingStore.appends += 1
        super().append_ledger(run_id, entries)


def counting_store(path: Path) -> SqlRunStore:
    store = open_store(path)
    assert isinstance(store, SqlRunStore)
    store.__class__ = CountingStore
    CountingStore.appends = 0
    return store


def test_the_ledger_is_stored_whole_in_one_transaction_per_request(llm_env, tmp_path):
    store = counting_store(tmp_path / "runs.sqlite")
    parts = llm_parts(["faithfulness", "answer_relevancy"])
    out = run_sweep(
        sweep_config(["faithfulness", "answer_relevancy"]),
        store=store,
        components=parts,
        testset=make_testset(),
    )
    assert out.status == "finished"
    assert parts.llm is not None
    recorded = parts.llm.ledger.entries
    stored = store.ledger(out.run_id)
    assert [e.call_id for e in stored] == [e.call_id for e in recorded]
    assert [e.kind for e in stored] == [e.kind for e in recorded]
    sent = sum(e.kind == "sent" for e in recorded)
    assert sent == len(llm_env.chat_requests()) + 1 > 10  # + the pre-flight call
    assert len(recorded) >= 3 * sent - 1  # sent, attempt, and (but the pre-flight's) call
    # one commit per request (with what waited before it) and one at the end
    assert CountingStore.appends <= sent + 1


def test_components_reused_by_a_second_sweep_leave_the_first_runs_ledger_alone(llm_env, tmp_path):
    store = open_store(tmp_path / "runs.sqlite")
    parts = llm_parts(["answer_relevancy"])
    first = run_sweep(
        sweep_config(["answer_relevancy"]), store=store, components=parts, testset=make_testset()
    )
    before = len(store.ledger(first.run_id))
    second = run_sweep(
        sweep_config(["answer_relevancy"]),
        store=store,
        components=parts,
        testset=make_testset(),
        new=True,
    )
    assert second.run_id != first.run_id
    assert len(store.ledger(first.run_id)) == before
    assert len(store.ledger(second.run_id)) > 0
