"""Whole-store maintenance: ``copy_store`` moves a history from one store to another (a laptop's
SQLite into the team's PostgreSQL), ``check_store`` verifies a store (``ragjudge store copy``,
``ragjudge store check``).

``copy_store`` is idempotent: a run already in the target is updated to the source's manifest,
its rows written again replace themselves (the keys of ``RunStore``), the ledger gets only the
lines the target lacks, a label is added only when the target has no label with the same
item, judge, labeler, time and value, and a run's kept summary (``put_summary``) goes across
after its rows, which would otherwise drop it. Copying twice leaves the target as copying once
did.

``check_store`` reads every run through the one reader (every row of every table parsed) and
reports each problem on one line: a schema not at the newest migration, a run whose rows do not
parse (naming the run and the table), a SQLite file failing ``PRAGMA quick_check``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlalchemy as sa

from ragjudge.errors import ConfigError, RagjudgeError
from ragjudge.store import migrate
from ragjudge.store.base import RunStore
from ragjudge.store.sql import SqlRunStore
from ragjudge.store.view import RunView


@dataclass
class CopyReport:
    runs: int = 0
    rows: int = 0
    """Rows written to the target (answers, judge results, metrics, rankings, cases, ledger
    lines and labels; rewritten rows count again)."""
    labels: int = 0
    """Labels added (labels already there are not)."""


def copy_store(source: RunStore, target: RunStore) -> CopyReport:
    """Copy every run of ``source`` into ``target`` (module docstring)."""
    out = CopyReport()
    for manifest in source.list_runs():
        run_id = manifest.run_id
        try:
            target.manifest(run_id)
            target.update_manifest(manifest)
        except ConfigError:
            target.create_run(manifest)
        view = RunView.read(source, run_id)
        target.put_cases(run_id, view.testcases.values())
        target.put_rankings(run_id, view.rankings.values())
        target.put_answers(run_id, view.answers.values())
        target.put_judge_results(run_id, source.judge_results(run_id))
        target.put_retrieval_metrics(run_id, source.retrieval_metrics(run_id))
        ledger = source.ledger(run_id)
        missing = ledger[len(target.ledger(run_id)) :]
        target.append_ledger(run_id, missing)
        have = {_label_key(x) for x in target.labels(run_id)}
        new = [x for x in source.labels(run_id) if _label_key(x) not in have]
        target.add_labels(x.model_copy(update={"id": None}) for x in new)
        for status, summary in source.summaries([run_id]).values():
            target.put_summary(run_id, status, summary)
        out.runs += 1
        out.labels += len(new)
        out.rows += (
            len(view.testcases)
            + len(view.rankings)
            + len(view.answers)
            + len(view.results)
            + len(view.retrieval)
            + len(missing)
            + len(new)
        )
    return out


def _label_key(x: object) -> tuple[object, ...]:
    d = x.model_dump(exclude={"id"})  # type: ignore[attr-defined]
    return tuple(sorted(d.items()))


@dataclass
class CheckReport:
    runs: int = 0
    revision: str | None = None
    head: str = ""
    problems: list[str] = field(default_factory=list)


def check_store(store: SqlRunStore) -> CheckReport:
    """Verify ``store`` (module docstring); the problems found, one line each."""
    out = CheckReport(head=migrate.head())
    with store.connection(write=False) as conn:
        out.revision = migrate.revision(conn)
        if store.dialect == "sqlite":
            verdict = [r[0] for r in conn.exec_driver_sql("PRAGMA quick_check")]
            if verdict != ["ok"]:
                out.problems.append(f"{store.location}: quick_check: {'; '.join(verdict[:5])}")
    if out.revision != out.head:
        out.problems.append(
            f"{store.location}: schema at revision {out.revision}, this ragjudge expects "
            f"{out.head} (opening it read-write migrates it)"
        )
    for m in store.list_runs():
        out.runs += 1
        for read in (_validated_view, lambda s, r: s.ledger(r), lambda s, r: s.labels(r)):
            try:
                read(store, m.run_id)
            except (RagjudgeError, sa.exc.SQLAlchemyError) as exc:
                out.problems.append(str(exc))
    return out


def _validated_view(store: SqlRunStore, run_id: str) -> RunView:
    """The run read whole with every judge result parsed (a corrupt row raises)."""
    view = RunView.read(store, run_id)
    view.validate()
    return view
