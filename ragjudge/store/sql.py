"""The run store on a SQL database through SQLAlchemy Core: an embedded SQLite file (WAL) or a
PostgreSQL server (psycopg 3). ``ragjudge.store.open_store`` builds the engine and chooses the
lease; this class holds the one copy of every query (contract: ``ragjudge.store.base``).

Writes are transactions of whole batches (SQLite: ``BEGIN IMMEDIATE``, one writer at a time,
readers never blocked under WAL); an existing key is replaced (``INSERT .. ON CONFLICT DO
UPDATE``, the construct both dialects offer). On PostgreSQL a lost connection (the server
restarted) is retried with backoff (``tenacity``, at most ``RETRIES`` attempts over about 30 s),
which is safe because every batch is idempotent; after that one line says the server stopped
answering and that the run resumes from its last whole batch. A write to a run whose lease was
taken through this store checks the lease first (``Leases.check``), inside the retried attempt:
a writer whose lease was lost (the restart ended its session) takes it again, or stops with
``LeaseLostError`` before it writes.

Errors are one line naming the store: a full disk (``StoreFullError``: nothing stored is lost),
a lock held past the busy timeout (``StoreLockedError``), a corrupt file, and a row that does
not parse (``CorruptRowError`` naming the run and the table).
"""

from __future__ import annotations

import errno
import functools
import shutil
import time
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

import sqlalchemy as sa
from pydantic import BaseModel
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from ragjudge.errors import (
    ConfigError,
    RagjudgeError,
    StateFileError,
    sqlite_file_error,
)
from ragjudge.llm.ledger import LedgerEntry
from ragjudge.llm.settings import redact
from ragjudge.schema import Answer, Ranking, RunManifest, TestCase
from ragjudge.store import tables as t
from ragjudge.store.base import (
    CaseHit,
    CaseQuery,
    RetrievalMetric,
    StoredJudgeResult,
    StoredLabel,
    StoreFullError,
    StoreLockedError,
    StoreWaitWarning,
    now,
)
from ragjudge.store.rows import JudgeResults, RowSource, parse_row

RETRIES = 6
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
_INSERT = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}
"""The dialect's INSERT with ``on_conflict_do_update`` (the same method on both)."""
_COUNTED = ("answers", "judge_results", "rankings", "retrieval_metrics", "ledger")
_IDS_PER_STATEMENT = 5000
"""Run ids bound in one ``run_counts`` statement (each counted table binds them once): within
SQLite's 32,766 and psycopg's 65,535 parameters per statement."""


class Lease:
    """A run's single-writer lease: ``acquire`` (``RunLockedError`` when held) and
    ``release``; ``with lease:`` holds it for the block."""

    def acquire(self) -> None:
        raise NotImplementedError

    def release(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


class Leases:
    """How a backend hands out run leases (``lock.FileLeases``, ``pglease.AdvisoryLeases``)."""

    def lease(self, run_id: str) -> Lease:
        raise NotImplementedError

    def writer_alive(self, run_id: str) -> bool:
        raise NotImplementedError

    def writers_alive(self, run_ids: Iterable[str]) -> set[str]:
        """The runs among ``run_ids`` whose writer is alive (``list_runs``: one question)."""
        return {r for r in run_ids if self.writer_alive(r)}

    def check(self, run_ids: Iterable[str]) -> None:
        """Called before every write to ``run_ids``: each lease among them held through this
        object is still held, or is taken again when it was lost and no one else took it; else
        ``LeaseLostError`` (and again on every later call while the lease is held). A run not
        leased here is not checked. This base: a lease lasts as long as its process (a
        ``flock``), so there is nothing to check."""


class SqlRunStore:
    """A ``RunStore`` (``ragjudge.store.base``) on a SQLAlchemy engine."""

    def __init__(
        self,
        engine: sa.Engine,
        *,
        location: str,
        leases: Leases,
        read_only: bool = False,
        file: Path | None = None,
        busy_timeout: float = 10.0,
    ) -> None:
        self._engine = engine
        self._location = location
        self._leases = leases
        self._read_only = read_only
        self.file = file
        """The SQLite file (None on a server)."""
        self.busy_timeout = busy_timeout

    @property
    def location(self) -> str:
        return self._location

    @property
    def read_only(self) -> bool:
        return self._read_only

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._engine.dialect.name

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> SqlRunStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ plumbing

    def error(self, exc: BaseException) -> RagjudgeError:
        """The one-line error for a database failure on this store (module docstring)."""
        orig = exc.orig if isinstance(exc, DBAPIError) else exc
        msg = redact(str(orig).strip().splitlines()[0] if str(orig).strip() else repr(orig))
        full = "database or disk is full" in msg or getattr(orig, "sqlstate", None) == "53100"
        if full or (isinstance(orig, OSError) and orig.errno == errno.ENOSPC):
            return StoreFullError(self._full_message(msg))
        if self.file is None:
            return StateFileError(f"{self.location}: {_server_failure(orig, msg)}")
        if "locked" in msg or "busy" in msg:
            return StoreLockedError(
                f"run store {self.location} is locked by another process (waited "
                f"{self.busy_timeout:g} s); wait for it to finish or use another RAGJUDGE_HOME"
            )
        if self.read_only and ("readonly" in msg or "query_only" in msg):
            return sqlite_file_error(self.file, OSError("readonly"))
        return sqlite_file_error(self.file, orig or exc)

    def _full_message(self, msg: str) -> str:
        if self.file is None:
            where = f"the disk of the database server of {self.location}"
        else:
            folder = self.file.parent
            try:
                free = shutil.disk_usage(folder).free
                where = f"{folder} ({free // 1024} KiB free)"
            except OSError:
                where = str(folder)
        return (
            f"{self.location}: the disk is full: {where} ({msg}); this write was rolled back "
            "whole and nothing stored before it was lost: free some space and run the same "
            "command again to resume (do not move the store aside, it is intact)"
        )

    def _transient(self, exc: BaseException) -> bool:
        """A lost server connection (PostgreSQL restarted): worth retrying the batch."""
        return (
            self.file is None
            and isinstance(exc, sa.exc.OperationalError)
            and getattr(exc.orig, "sqlstate", None) != "53100"
        )

    def _run(
        self, fn: Callable[[sa.Connection], T], *, write: bool, runs: Collection[str] = ()
    ) -> T:
        """``fn`` in one transaction; a write names the ``runs`` it writes (their leases are
        checked: ``_attempt``). On SQLite a write waiting for another writer says so once
        (``StoreWaitWarning``) and waits up to ``busy_timeout`` in all, in slices of the
        driver's own timeout (``open_store`` sets it to one second)."""
        if write and self._read_only:
            raise sqlite_file_error(self.file or self.location, OSError("readonly"))
        deadline = time.monotonic() + self.busy_timeout
        warned = False
        while True:
            try:
                return self._attempt(fn, write=write, runs=runs)
            except sa.exc.OperationalError as exc:
                if self.file is None or "locked" not in str(exc.orig):
                    raise self.error(exc) from None
                if not warned:
                    warnings.warn(
                        StoreWaitWarning(
                            f"{self.location}: another process is writing the run store; "
                            f"waiting for it (up to {self.busy_timeout:g} s)"
                        ),
                        stacklevel=3,
                    )
                    warned = True
                if time.monotonic() >= deadline:
                    raise self.error(exc) from None
            except (SQLAlchemyError, OSError) as exc:
                raise self.error(exc) from None

    def _attempt(
        self, fn: Callable[[sa.Connection], T], *, write: bool, runs: Collection[str]
    ) -> T:
        """``fn`` in one transaction, retried on a lost server connection. A write checks the
        leases of ``runs`` after its own connection is open and before its first statement: a
        server restart after the check ends that connection too (the attempt fails, and the
        next one checks again), so a write commits only while its run's lease is held."""
        retry = Retrying(
            stop=stop_after_attempt(RETRIES),
            wait=wait_exponential(multiplier=0.5, max=10),
            retry=retry_if_exception(self._transient),
            reraise=True,
        )
        for attempt in retry:
            with attempt, self._engine.connect() as conn:
                conn.execution_options(ragjudge_write=write)
                with conn.begin():
                    if write:
                        self._leases.check(runs)
                    return fn(conn)
        raise AssertionError("unreachable: Retrying reraises")  # pragma: no cover

    def _write(self, runs: Collection[str], fn: Callable[[sa.Connection], T]) -> T:
        """``fn`` in one write transaction to the runs ``runs``."""
        return self._run(fn, write=True, runs=runs)

    def _read(self, fn: Callable[[sa.Connection], T]) -> T:
        return self._run(fn, write=False)

    def _rows(self, stmt: sa.Executable) -> list[Any]:
        return self._read(lambda c: list(c.execute(stmt)))

    def _upsert(self, table: sa.Table, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        stmt = _upsert_of(self.dialect, table)
        runs = {r["run_id"] for r in rows}

        def upsert(conn: sa.Connection) -> None:
            conn.execute(stmt, rows)
            if table.name in _COUNTED or table is t.cases:
                _drop_summaries(conn, runs)

        self._write(runs, upsert)

    def _parse(self, model: type[M], raw: str, run_id: str, table: str, key: str) -> M:
        return parse_row(model, raw, RowSource(self.location, run_id), table, key)

    # ------------------------------------------------------------------ runs

    def create_run(self, manifest: RunManifest) -> None:
        def create(conn: sa.Connection) -> None:
            exists = conn.execute(
                sa.select(t.runs.c.run_id).where(t.runs.c.run_id == manifest.run_id)
            ).first()
            if exists:
                raise ConfigError(f"run {manifest.run_id!r} already exists in {self.location}")
            conn.execute(t.runs.insert(), _run_row(manifest))
            _write_tags(conn, manifest)

        self._write([manifest.run_id], create)

    def update_manifest(self, manifest: RunManifest) -> None:
        def update(conn: sa.Connection) -> None:
            row = _run_row(manifest)
            conn.execute(t.runs.update().where(t.runs.c.run_id == manifest.run_id), row)
            _write_tags(conn, manifest)
            _drop_summaries(conn, {manifest.run_id})

        self._write([manifest.run_id], update)

    def set_status(self, run_id: str, status: str, *, finished: bool = False) -> RunManifest:
        data = self.manifest(run_id).model_dump()
        data.update(status=status, finished_at=now() if finished else None)
        m = RunManifest.model_validate(data)
        self.update_manifest(m)
        return m

    def _manifests(self, where: Any, order: Iterable[Any]) -> list[RunManifest]:
        def read(conn: sa.Connection) -> tuple[list[Any], list[Any]]:
            runs = list(conn.execute(sa.select(t.runs.c.run_id, t.runs.c.manifest).where(where)))
            tags = list(conn.execute(sa.select(t.tags.c.run_id, t.tags.c.tag, t.tags.c.value)))
            return runs, tags

        runs, tag_rows = self._read(read)
        by_run: dict[str, dict[str, str]] = {}
        for run_id, tag, value in tag_rows:
            by_run.setdefault(run_id, {})[tag] = value
        parsed = [self._parse(RunManifest, raw, r, "runs", "its manifest") for r, raw in runs]
        alive = self._leases.writers_alive(m.run_id for m in parsed if m.status == "running")
        out = []
        for m in parsed:
            update: dict[str, Any] = {"tags": by_run.get(m.run_id, {})}
            if m.status == "running" and m.run_id not in alive:
                update["status"] = "interrupted"  # its writer died (kill -9, power loss)
            out.append(m.model_copy(update=update))
        keys = list(order)
        return sorted(out, key=lambda m: tuple(f(m) for f in keys))

    def manifest(self, run_id: str) -> RunManifest:
        found = self._manifests(t.runs.c.run_id == run_id, ())
        if not found:
            known = [m.run_id for m in self.list_runs()]
            hint = f"; known runs: {', '.join(known[-5:])}" if known else "; the store is empty"
            raise ConfigError(f"no run {run_id!r} in {self.location}{hint}")
        return found[0]

    def list_runs(self) -> list[RunManifest]:
        """Every run, oldest first (ties by run id)."""
        return self._manifests(sa.true(), (lambda m: m.started_at, lambda m: m.run_id))

    def resolve(self, ref: str, *, finished: bool = False) -> str:
        """``RunStore.resolve``; ``latest`` is the run started last (ties: the greatest run
        id), of any status, or with ``finished`` of those stored as finished."""
        if ref == "latest":
            return self._latest(finished=finished)
        ids = [
            r[0]
            for r in self._rows(
                sa.select(t.runs.c.run_id).where(t.runs.c.run_id.startswith(ref, autoescape=True))
            )
        ]
        if ref in ids:
            return ref
        if len(ids) == 1:
            return str(ids[0])
        if len(ids) > 1:
            raise ConfigError(f"run reference {ref!r} is ambiguous: {', '.join(sorted(ids)[:5])}")
        self.manifest(ref)  # raises with the known runs listed
        return ref

    def _latest(self, *, finished: bool) -> str:
        """The ``latest`` of ``resolve``; a ``ConfigError`` for an empty store, and with
        ``finished`` one naming the newest run and its status when none finished."""
        runs = t.runs
        stmt = sa.select(runs.c.run_id).order_by(runs.c.started_at.desc(), runs.c.run_id.desc())
        if finished:
            stmt = stmt.where(runs.c.status == "finished")
        rows = self._rows(stmt.limit(1))
        if rows:
            return str(rows[0][0])
        every = self.list_runs()
        if not every:
            raise ConfigError(f"the run store {self.location} has no runs yet")
        newest = every[-1]
        raise ConfigError(
            f"no finished run in {self.location} (latest is the newest finished run; the newest "
            f"run, {newest.run_id}, is {newest.status}): name a run by its id to use one that "
            "did not finish"
        )

    def tag(self, run_id: str, tag: str, value: str = "") -> None:
        """A blank tag is a ``ConfigError``: nothing could find it."""
        if not tag.strip():
            raise ConfigError(f"a tag needs a name (got {tag!r})")
        self.manifest(run_id)
        self._upsert(t.tags, [{"run_id": run_id, "tag": tag, "value": value}])

    def find_by_tag(self, tag: str) -> list[RunManifest]:
        tagged = sa.select(t.tags.c.run_id).where(t.tags.c.tag == tag)
        runs = self._manifests(t.runs.c.run_id.in_(tagged), ())
        return sorted(runs, key=lambda m: (m.started_at, m.run_id), reverse=True)

    def delete_run(self, run_id: str) -> None:
        def delete(conn: sa.Connection) -> None:
            for table in (*t.ROW_TABLES, t.tags, t.labels, t.run_summaries):
                conn.execute(table.delete().where(table.c.run_id == run_id))
            conn.execute(t.runs.delete().where(t.runs.c.run_id == run_id))

        self._write([run_id], delete)

    # ------------------------------------------------------------------ items

    def put_answers(self, run_id: str, answers: Iterable[Answer]) -> None:
        self._upsert(
            t.answers,
            [
                {"run_id": run_id, "case_id": a.case_id, "k": a.k, "answer": a.model_dump_json()}
                for a in answers
            ],
        )

    def answers(self, run_id: str, *, case_ids: Collection[str] | None = None) -> list[Answer]:
        rows = self._rows(
            sa.select(t.answers.c.case_id, t.answers.c.k, t.answers.c.answer)
            .where(*_of(t.answers, run_id, case_ids))
            .order_by(t.answers.c.case_id, t.answers.c.k)
        )
        return [self._parse(Answer, a, run_id, "answers", f"{c}@k{k}") for c, k, a in rows]

    def put_judge_results(self, run_id: str, results: Iterable[StoredJudgeResult]) -> None:
        self._upsert(
            t.judge_results,
            [
                {
                    "run_id": run_id,
                    "case_id": r.case_id,
                    "k": r.k,
                    "judge": r.judge,
                    "status": r.result.status.value,
                    "score": r.result.score,
                    "result": r.result.model_dump_json(),
                }
                for r in results
            ],
        )

    def judge_result_rows(
        self, run_id: str, *, case_ids: Collection[str] | None = None
    ) -> JudgeResults:
        """One query for the key, status, score and JSON columns, fetched whole by the driver
        (measured faster than ``yield_per`` partitions on both backends; bench_store.py), each
        row kept as fetched, no sort (``JudgeResults`` orders on iteration); nothing parsed."""
        j = t.judge_results
        stmt = sa.select(j.c.judge, j.c.k, j.c.case_id, j.c.status, j.c.score, j.c.result).where(
            *_of(j, run_id, case_ids)
        )

        def fetch(conn: sa.Connection) -> dict[tuple[str, int, str], Any]:
            return {(r[0], r[1], r[2]): r for r in conn.execute(stmt).all()}

        return JudgeResults(self._read(fetch), RowSource(self.location, run_id))

    def judge_results(
        self, run_id: str, *, case_ids: Collection[str] | None = None
    ) -> list[StoredJudgeResult]:
        rows = self.judge_result_rows(run_id, case_ids=case_ids)
        return [StoredJudgeResult(c, k, j, rows[(j, k, c)]) for j, k, c in rows]

    def put_rankings(self, run_id: str, rankings: Iterable[Ranking]) -> None:
        self._upsert(
            t.rankings,
            [
                {"run_id": run_id, "case_id": r.query_id, "ranking": r.model_dump_json()}
                for r in rankings
            ],
        )

    def _by_case(
        self,
        table: sa.Table,
        column: str,
        model: type[M],
        run_id: str,
        case_ids: Collection[str] | None,
    ) -> dict[str, M]:
        """``table``'s rows of ``run_id`` (of ``case_ids``, when given) by case id, ``column``
        parsed as ``model``."""
        rows = self._rows(
            sa.select(table.c.case_id, table.c[column])
            .where(*_of(table, run_id, case_ids))
            .order_by(table.c.case_id)
        )
        return {c: self._parse(model, raw, run_id, table.name, c) for c, raw in rows}

    def rankings(
        self, run_id: str, *, case_ids: Collection[str] | None = None
    ) -> dict[str, Ranking]:
        return self._by_case(t.rankings, "ranking", Ranking, run_id, case_ids)

    def put_cases(self, run_id: str, cases: Iterable[TestCase]) -> None:
        self._upsert(
            t.cases,
            [{"run_id": run_id, "case_id": c.id, "testcase": c.model_dump_json()} for c in cases],
        )

    def cases(self, run_id: str, *, case_ids: Collection[str] | None = None) -> dict[str, TestCase]:
        return self._by_case(t.cases, "testcase", TestCase, run_id, case_ids)

    def put_retrieval_metrics(self, run_id: str, rows: Iterable[RetrievalMetric]) -> None:
        self._upsert(
            t.retrieval_metrics,
            [
                {
                    "run_id": run_id,
                    "case_id": r.case_id,
                    "k": r.k,
                    "metric": r.metric,
                    "value": float(r.value),
                }
                for r in rows
            ],
        )

    def retrieval_metrics(
        self, run_id: str, *, case_ids: Collection[str] | None = None
    ) -> list[RetrievalMetric]:
        m = t.retrieval_metrics
        rows = self._rows(
            sa.select(m.c.case_id, m.c.k, m.c.metric, m.c.value)
            .where(*_of(m, run_id, case_ids))
            .order_by(m.c.metric, m.c.case_id, m.c.k)
        )
        return [RetrievalMetric(c, int(k), name, float(v)) for c, k, name, v in rows]

    def append_ledger(self, run_id: str, entries: Iterable[LedgerEntry]) -> None:
        batch = list(entries)
        if not batch:
            return

        def append(conn: sa.Connection) -> None:
            last = conn.execute(_LAST_SEQ, {"run_id": run_id}).scalar_one()
            conn.execute(
                t.ledger.insert(),
                [
                    {"run_id": run_id, "seq": last + i, "entry": e.model_dump_json()}
                    for i, e in enumerate(batch, start=1)
                ],
            )
            _drop_summaries(conn, {run_id})

        self._write([run_id], append)

    def ledger(self, run_id: str) -> list[LedgerEntry]:
        rows = self._rows(
            sa.select(t.ledger.c.seq, t.ledger.c.entry)
            .where(t.ledger.c.run_id == run_id)
            .order_by(t.ledger.c.seq)
        )
        return [self._parse(LedgerEntry, e, run_id, "ledger", f"line {s}") for s, e in rows]

    def counts(self, run_id: str) -> dict[str, int]:
        return self.run_counts([run_id])[run_id]

    def run_counts(self, run_ids: Collection[str]) -> dict[str, dict[str, int]]:
        """One statement per ``_IDS_PER_STATEMENT`` runs: the union of one ``GROUP BY run_id``
        count per counted table over those runs."""
        ids = list(dict.fromkeys(run_ids))

        def count(conn: sa.Connection) -> dict[str, dict[str, int]]:
            out = {r: dict.fromkeys(_COUNTED, 0) for r in ids}
            for start in range(0, len(ids), _IDS_PER_STATEMENT):
                part = ids[start : start + _IDS_PER_STATEMENT]
                per_table = [
                    sa.select(sa.literal(tb.name, sa.Text), tb.c.run_id, sa.func.count())
                    .where(tb.c.run_id.in_(part))
                    .group_by(tb.c.run_id)
                    for tb in (t.metadata.tables[name] for name in _COUNTED)
                ]
                for name, run_id, n in conn.execute(sa.union_all(*per_table)):
                    out[run_id][name] = int(n)
            return out

        return self._read(count)

    def find_cases(self, run_id: str, query: CaseQuery) -> tuple[int, list[CaseHit]]:
        """The cases answered or judged at ``query.k`` that match ``query`` (text in the case
        id, question or answer at k; the focus judge's status and score range), ordered by case
        id, or with a baseline by how far the focus judge moved (current - baseline, largest
        drop first, cases without both scores last): how many match, and the page
        ``[offset, offset + limit)`` with each case's scores and statuses at k."""
        j, a, c = t.judge_results, t.answers, t.cases
        k = query.k
        base = sa.union(
            sa.select(a.c.case_id).where(a.c.run_id == run_id, a.c.k == k),
            sa.select(j.c.case_id).where(
                j.c.run_id == run_id, j.c.k == k, j.c.judge == query.judge
            ),
        ).subquery("base")
        focus = j.alias("focus")
        stmt = sa.select(base.c.case_id).select_from(
            base.outerjoin(
                focus,
                sa.and_(
                    focus.c.run_id == run_id,
                    focus.c.case_id == base.c.case_id,
                    focus.c.k == k,
                    focus.c.judge == query.judge,
                ),
            )
        )
        if query.text:
            ans = a.alias("ans")
            stmt = stmt.outerjoin(
                ans, sa.and_(ans.c.run_id == run_id, ans.c.case_id == base.c.case_id, ans.c.k == k)
            ).outerjoin(c, sa.and_(c.c.run_id == run_id, c.c.case_id == base.c.case_id))
            stmt = stmt.where(
                sa.or_(
                    base.c.case_id.icontains(query.text, autoescape=True),
                    self._json_text(c.c.testcase, "question").icontains(
                        query.text, autoescape=True
                    ),
                    self._json_text(ans.c.answer, "text").icontains(query.text, autoescape=True),
                )
            )
        if query.status == "missing":
            stmt = stmt.where(focus.c.status.is_(None))
        elif query.status:
            stmt = stmt.where(focus.c.status == query.status)
        if query.lo is not None:
            stmt = stmt.where(focus.c.score >= query.lo)
        if query.hi is not None:
            stmt = stmt.where(focus.c.score <= query.hi)
        moved: Any = sa.null()
        order: list[Any] = [base.c.case_id]
        if query.baseline is not None:
            b = j.alias("before")
            stmt = stmt.outerjoin(
                b,
                sa.and_(
                    b.c.run_id == query.baseline,
                    b.c.case_id == base.c.case_id,
                    b.c.k == k,
                    b.c.judge == query.judge,
                ),
            )
            moved = focus.c.score - b.c.score
            order = [sa.case((moved.is_(None), 1), else_=0), moved, base.c.case_id]
        page = stmt.add_columns(moved.label("moved")).order_by(*order)
        page = page.offset(query.offset).limit(query.limit)

        def read(conn: sa.Connection) -> tuple[int, list[Any], list[Any]]:
            total = conn.execute(sa.select(sa.func.count()).select_from(stmt.subquery())).scalar()
            hits = list(conn.execute(page))
            ids = [h[0] for h in hits]
            scores = list(
                conn.execute(
                    sa.select(j.c.case_id, j.c.judge, j.c.status, j.c.score).where(
                        j.c.run_id == run_id, j.c.k == k, j.c.case_id.in_(ids)
                    )
                )
            )
            return int(total or 0), hits, scores

        total, hits, score_rows = self._read(read)
        by_case: dict[str, dict[str, tuple[str, float | None]]] = {}
        for case_id, judge, status, score in score_rows:
            by_case.setdefault(case_id, {})[judge] = (status, score)
        return total, [
            CaseHit(
                case_id=case_id,
                moved=float(m) if m is not None else None,
                statuses={jn: st for jn, (st, _) in by_case.get(case_id, {}).items()},
                scores={jn: sc for jn, (_, sc) in by_case.get(case_id, {}).items()},
            )
            for case_id, m in hits
        ]

    def _json_text(self, column: Any, key: str) -> Any:
        """The text of top-level ``key`` of the JSON in ``column`` (each dialect's own
        function)."""
        if self.dialect == "postgresql":
            return sa.func.json_extract_path_text(sa.cast(column, postgresql.JSON), key)
        return sa.func.json_extract(column, f"$.{key}")

    # ------------------------------------------------------------------ summaries

    def put_summary(self, run_id: str, status: str, summary: str) -> None:
        self._upsert(t.run_summaries, [{"run_id": run_id, "status": status, "summary": summary}])

    def summaries(self, run_ids: Collection[str]) -> dict[str, tuple[str, str]]:
        if self._read_only and not self._read(lambda c: sa.inspect(c).has_table("run_summaries")):
            return {}  # a read-only store written before summaries were stored
        s = t.run_summaries
        rows = self._rows(
            sa.select(s.c.run_id, s.c.status, s.c.summary).where(s.c.run_id.in_(list(run_ids)))
        )
        return {r: (st, text) for r, st, text in rows}

    # ------------------------------------------------------------------ labels

    def add_labels(self, labels: Iterable[StoredLabel]) -> list[int]:
        rows = [
            label.model_dump(exclude={"id"}) | {"created_at": label.created_at or now()}
            for label in labels
        ]

        def add(conn: sa.Connection) -> list[int]:
            return [
                int(conn.execute(t.labels.insert().values(row)).inserted_primary_key[0])  # type: ignore[index]
                for row in rows
            ]

        return self._write({r["run_id"] for r in rows}, add) if rows else []

    def labels(
        self, run_id: str, *, case_id: str | None = None, judge: str | None = None
    ) -> list[StoredLabel]:
        if self._read_only and not self._read(lambda c: sa.inspect(c).has_table("labels")):
            return []  # a read-only store written before labels were stored
        cond = [t.labels.c.run_id == run_id]
        if case_id is not None:
            cond.append(t.labels.c.case_id == case_id)
        if judge is not None:
            cond.append(t.labels.c.judge == judge)
        rows = self._rows(
            sa.select(t.labels).where(*cond).order_by(t.labels.c.created_at, t.labels.c.id)
        )
        return [StoredLabel.model_validate(dict(r._mapping)) for r in rows]

    # ------------------------------------------------------------------ ownership

    def lease(self, run_id: str) -> AbstractContextManager[object]:
        return self._leases.lease(run_id)

    def writer_alive(self, run_id: str) -> bool:
        return self._leases.writer_alive(run_id)

    # ------------------------------------------------------------------ maintenance

    @contextmanager
    def connection(self, *, write: bool) -> Iterator[sa.Connection]:
        """A transaction on the store (migrations, ``ragjudge.store.maintain``)."""
        try:
            with self._engine.connect() as conn:
                conn.execution_options(ragjudge_write=write)
                with conn.begin():
                    yield conn
        except (SQLAlchemyError, OSError) as exc:
            raise self.error(exc) from None


_LOGIN_STATES = ("28000", "28P01")
"""SQLSTATEs of a login the server refused (no such role, a wrong password)."""


def _server_failure(orig: BaseException | None, msg: str) -> str:
    """What went wrong with a database server, and what fixes it: a refused login or a missing
    database (the URL), a server that cannot be reached (the server), else a failure in the
    middle of work (run the command again: what was committed is kept)."""
    state = getattr(orig, "sqlstate", None)
    low = msg.lower()
    if state in _LOGIN_STATES or "password authentication failed" in low:
        return f"the server refused the login ({msg}); check the user and password of the URL"
    if state == "3D000" or ("database" in low and "does not exist" in low):
        return f"no such database ({msg}); create it (createdb NAME) or fix the URL"
    if state is None and ("connection refused" in low or "could not connect" in low):
        return f"cannot reach the database server ({msg}); is it running at that address?"
    return (
        f"the database server failed ({msg}); what was committed before is kept: run the "
        "same command again to resume"
    )


def _run_row(m: RunManifest) -> dict[str, Any]:
    return {
        "run_id": m.run_id,
        "manifest": m.model_dump_json(),
        "status": m.status,
        "config_hash": m.config_hash,
        "dataset_hash": m.dataset_hash,
        "started_at": m.started_at,
        "finished_at": m.finished_at,
    }


def _of(table: sa.Table, run_id: str, case_ids: Collection[str] | None) -> list[Any]:
    """The WHERE conditions: ``run_id``'s rows, of ``case_ids`` when given."""
    cond = [table.c.run_id == run_id]
    if case_ids is not None:
        cond.append(table.c.case_id.in_(list(case_ids)))
    return cond


@functools.cache
def _upsert_of(dialect: str, table: sa.Table) -> Any:
    """``INSERT ... ON CONFLICT (primary key) DO UPDATE SET`` every other column to the value
    offered, built once per dialect and table: building it (its ``excluded`` columns) was about
    half the CPU of writing one row."""
    keys = [c.name for c in table.primary_key.columns]
    stmt: Any = _INSERT[dialect](table)
    return stmt.on_conflict_do_update(
        index_elements=keys,
        set_={c.name: stmt.excluded[c.name] for c in table.columns if c.name not in keys},
    )


_LAST_SEQ = sa.select(sa.func.coalesce(sa.func.max(t.ledger.c.seq), 0)).where(
    t.ledger.c.run_id == sa.bindparam("run_id")
)
"""The last sequence number of a run's ledger (0 when empty)."""

_DROP_SUMMARIES = t.run_summaries.delete().where(
    t.run_summaries.c.run_id.in_(sa.bindparam("run_ids", expanding=True))
)


def _drop_summaries(conn: sa.Connection, run_ids: set[str]) -> None:
    """A write to a run makes its stored summary stale: drop it (``ragjudge.sweep.digest``
    computes it again)."""
    conn.execute(_DROP_SUMMARIES, {"run_ids": sorted(run_ids)})


def _write_tags(conn: sa.Connection, m: RunManifest) -> None:
    conn.execute(t.tags.delete().where(t.tags.c.run_id == m.run_id))
    if m.tags:
        conn.execute(
            t.tags.insert(), [{"run_id": m.run_id, "tag": k, "value": v} for k, v in m.tags.items()]
        )
