"""Whole-store maintenance: ``copy_store`` moves a history from one store to another (a laptop's
SQLite into the team's PostgreSQL), ``check_store`` verifies a store (``ragjudge store copy``,
``ragjudge store check``).

``copy_store`` merges: it never loses what the target holds. A run the target lacks is copied
whole. A run both hold is merged by one rule, *the run further along wins*: ``finished`` is
further along than ``running``, ``interrupted``, ``failed`` and ``stopped_budget``, which rank
alike. When the source's run is further along (finished, the target's not), its manifest
(status, finish time) is taken and its rows replace the target's rows of the same key; else the
target keeps its manifest and every row it has, and gets only the rows whose keys it lacks
(rows are keyed as ``RunStore`` writes them: answers by case and k, judge results by case, k and
judge, retrieval metrics by case, k and metric, rankings and test cases by case). Either way
the target keeps the rows only it has. Tags are the union; a tag both hold with different
values keeps the target's value, and the copy's ``notes`` say so. The ledger gets the source's
lines the target does not hold (compared whole, so a run resumed on both sides keeps both
sides' calls); a label is added only when the target has no label with the same item, judge,
labeler, time and value. A run's kept summary (``put_summary``) goes across only when the
target's run is now the source's (copied whole, or taken over with nothing of the target's
own left in it); otherwise the store's next reader computes it again.

A run new to the target is created as ``interrupted`` and takes the source's manifest only once
its rows are in, so a copy killed midway leaves a resumable run that copying again completes.
Copying twice leaves the target as copying once did.

``check_store`` reads every run through the one reader (every row of every table parsed) and
reports each problem on one line: a schema not at the newest migration, a SQLite file failing
``PRAGMA quick_check``, and every row that does not parse, naming the run, the table and the
row's key (at most ``LISTED`` lines per run, then one line counting the rest).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel

from ragjudge.errors import ConfigError, RagjudgeError
from ragjudge.llm.ledger import LedgerEntry
from ragjudge.schema import Answer, Ranking, RunManifest, TestCase
from ragjudge.store import migrate
from ragjudge.store import tables as t
from ragjudge.store.base import RetrievalMetric, RunStore, StoredJudgeResult
from ragjudge.store.rows import CorruptRowError, RowSource, parse_row
from ragjudge.store.sql import SqlRunStore
from ragjudge.store.view import RunView

LISTED = 20
"""Corrupt rows listed per run by ``check_store``; the rest are counted on one line."""


@dataclass
class CopyReport:
    runs: int = 0
    new: int = 0
    """Runs the target did not hold (the others were merged)."""
    rows: int = 0
    """Rows written to the target (cases, rankings, answers, judge results, retrieval metrics,
    ledger lines and labels)."""
    kept: int = 0
    """Rows of the source not written: the target holds them (its own row of that key kept,
    a ledger line or label it already has)."""
    labels: int = 0
    """Labels added."""
    notes: list[str] = field(default_factory=list)
    """One line per merge decision a user should know of: whose status a run kept when the two
    differed, a tag whose value the target kept over the source's."""


def _further_along(status: str, other: str) -> bool:
    """True when a run at ``status`` is further along than one at ``other`` (module docstring:
    ``finished`` beats every other status, the others rank alike)."""
    return status == "finished" and other != "finished"


def copy_store(source: RunStore, target: RunStore) -> CopyReport:
    """Merge every run of ``source`` into ``target`` (module docstring)."""
    out = CopyReport()
    for manifest in source.list_runs():
        _copy_run(source, target, manifest, out)
        out.runs += 1
    return out


def _copy_run(source: RunStore, target: RunStore, src: RunManifest, out: CopyReport) -> None:
    """Merge the run ``src`` of ``source`` into ``target``, adding to ``out``."""
    run_id = src.run_id
    try:
        dst: RunManifest | None = target.manifest(run_id)
    except ConfigError:
        dst = None
    if dst is None:
        out.new += 1
        target.create_run(src.model_copy(update={"status": "interrupted", "finished_at": None}))
        take, held_tags = True, dict(src.tags)
    else:
        take, held_tags = _further_along(src.status, dst.status), dst.tags
        if src.status != dst.status:
            out.notes.append(
                f"run {run_id}: the source's is {src.status}, the target's {dst.status}: "
                + (
                    "took the source's status and its rows"
                    if take
                    else "kept the target's status and rows, added the rows it lacked"
                )
            )
    tags = _merge_tags(run_id, held_tags, src.tags, out.notes)
    view = RunView.read(source, run_id)
    held = RunView.read(target, run_id) if dst is not None else None
    written, kept, extra = _merge_rows(target, view, held, replace=take)
    ledger = source.ledger(run_id)
    have = Counter(e.model_dump_json() for e in target.ledger(run_id))
    lines = []
    for entry in ledger:
        line = entry.model_dump_json()
        if have[line]:
            have[line] -= 1
        else:
            lines.append(entry)
    target.append_ledger(run_id, lines)
    offered = source.labels(run_id)
    labelled = {_label_key(x) for x in target.labels(run_id)}
    labels = [x for x in offered if _label_key(x) not in labelled]
    target.add_labels(x.model_copy(update={"id": None}) for x in labels)
    if take:
        target.update_manifest(src.model_copy(update={"tags": tags}))
        if not extra and not have.total():
            for status, summary in source.summaries([run_id]).values():
                target.put_summary(run_id, status, summary)
    else:
        for tag in tags.keys() - held_tags.keys():
            target.tag(run_id, tag, tags[tag])
    out.rows += written + len(lines) + len(labels)
    out.kept += kept + len(ledger) - len(lines) + len(offered) - len(labels)
    out.labels += len(labels)


def _merge_tags(
    run_id: str, held: Mapping[str, str], offered: Mapping[str, str], notes: list[str]
) -> dict[str, str]:
    """The union of the target's tags ``held`` and the source's ``offered``, the target's value
    kept where both hold a tag (each such conflict noted)."""
    for tag, value in offered.items():
        if tag in held and held[tag] != value:
            notes.append(
                f"run {run_id}: tag {tag}: kept the target's value {held[tag]!r} "
                f"(the source has {value!r})"
            )
    return dict(offered) | dict(held)


def _merge_rows(
    target: RunStore, src: RunView, held: RunView | None, *, replace: bool
) -> tuple[int, int, bool]:
    """Write ``src``'s keyed rows into ``target``: every row when ``replace``, else only the keys
    the target's run ``held`` lacks (``None``: the target has no rows). Returns the rows written,
    the rows not written (the target's kept), and whether the target holds keys ``src`` lacks."""
    run_id = src.run_id
    tables: list[tuple[Mapping[Any, Any], Callable[[list[Any]], None]]] = [
        (src.testcases, lambda ks: target.put_cases(run_id, [src.testcases[k] for k in ks])),
        (src.rankings, lambda ks: target.put_rankings(run_id, [src.rankings[k] for k in ks])),
        (src.answers, lambda ks: target.put_answers(run_id, [src.answers[k] for k in ks])),
        (
            src.results,
            lambda ks: target.put_judge_results(
                run_id, [StoredJudgeResult(c, k, j, src.results[(j, k, c)]) for j, k, c in ks]
            ),
        ),
        (
            src.retrieval,
            lambda ks: target.put_retrieval_metrics(
                run_id, [RetrievalMetric(c, k, m, src.retrieval[(m, k, c)]) for m, k, c in ks]
            ),
        ),
    ]
    theirs: list[Collection[Any]] = (
        [held.testcases, held.rankings, held.answers, held.results, held.retrieval]
        if held is not None
        else [(), (), (), (), ()]
    )
    written = kept = 0
    extra = False
    for (rows, put), have in zip(tables, theirs, strict=True):
        keys = [k for k in rows if replace or k not in have]
        put(keys)
        written += len(keys)
        kept += len(rows) - len(keys)
        extra = extra or any(k not in rows for k in have)
    return written, kept, extra


def _label_key(x: object) -> tuple[object, ...]:
    d = x.model_dump(exclude={"id"})  # type: ignore[attr-defined]
    return tuple(sorted(d.items()))


@dataclass
class CheckReport:
    runs: int = 0
    revision: str | None = None
    head: str = ""
    problems: list[str] = field(default_factory=list)
    """The lines to show (at most ``LISTED`` corrupt rows per run, then a count of the rest)."""
    found: int = 0
    """Every problem found, the corrupt rows not listed too."""


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
    out.found = len(out.problems)
    for m in store.list_runs():
        out.runs += 1
        try:
            _validated_view(store, m.run_id)
            store.ledger(m.run_id)
        except (RagjudgeError, sa.exc.SQLAlchemyError) as exc:
            bad = _corrupt_rows(store, m.run_id) or [str(exc)]
            out.found += len(bad)
            out.problems += bad[:LISTED]
            if len(bad) > LISTED:
                out.problems.append(
                    f"{store.location}: run {m.run_id}: {len(bad) - LISTED} more corrupt rows "
                    f"not listed (the first {LISTED} are)"
                )
        try:
            store.labels(m.run_id)
        except (RagjudgeError, sa.exc.SQLAlchemyError) as exc:
            out.found += 1
            out.problems.append(str(exc))
    return out


def _validated_view(store: SqlRunStore, run_id: str) -> RunView:
    """The run read whole with every judge result parsed (a corrupt row raises)."""
    view = RunView.read(store, run_id)
    view.validate()
    return view


_JSON_ROWS: dict[sa.Table, tuple[str, type[BaseModel], Callable[[Any], str]]] = {
    t.answers: ("answer", Answer, lambda r: f"{r.case_id}@k{r.k}"),
    t.rankings: ("ranking", Ranking, lambda r: r.case_id),
    t.cases: ("testcase", TestCase, lambda r: r.case_id),
    t.ledger: ("entry", LedgerEntry, lambda r: f"line {r.seq}"),
}
"""The tables of a run's rows stored as JSON (judge results aside): the column, its model, and
the row's key as the store's readers name it in a ``CorruptRowError``."""


def _corrupt_rows(store: SqlRunStore, run_id: str) -> list[str]:
    """One line per row of the run that does not parse, table by table (answers, judge
    results, rankings, cases, ledger): every row parsed one by one with the store's one parser,
    ``parse_row`` (judge results through ``judge_result_rows``)."""
    out = _unparsed(store, run_id, t.answers)
    results = store.judge_result_rows(run_id)
    for key in results:
        try:
            results[key]
        except CorruptRowError as exc:
            out.append(str(exc))
    for table in (t.rankings, t.cases, t.ledger):
        out += _unparsed(store, run_id, table)
    return out


def _unparsed(store: SqlRunStore, run_id: str, table: sa.Table) -> list[str]:
    """One line per row of ``run_id`` in ``table`` (one of ``_JSON_ROWS``) that does not parse."""
    column, model, name = _JSON_ROWS[table]
    keys = [c for c in table.primary_key.columns if c.name != "run_id"]
    stmt = sa.select(*keys, table.c[column]).where(table.c.run_id == run_id).order_by(*keys)
    with store.connection(write=False) as conn:
        rows = conn.execute(stmt).all()
    source = RowSource(store.location, run_id)
    out = []
    for row in rows:
        try:
            parse_row(model, row[-1], source, table.name, name(row))
        except CorruptRowError as exc:
            out.append(str(exc))
    return out
