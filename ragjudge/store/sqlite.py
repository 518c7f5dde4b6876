"""The run store: every run of a project in one SQLite file (WAL), durable and queryable.

Contract (stable; the regression report and calibration read runs through it):

- ``RunStore(path=None)`` opens ``state_path("runs.sqlite")`` unless given a path.
- A run is identified by ``run_id``; its ``RunManifest`` is stored as JSON. A run stored as
  ``running`` whose writer holds no lock any more (``ragjudge.store.lock``) reads as
  ``interrupted``: it was killed, and can be resumed.
- Items are keyed ``(case_id, k)``; the item id of a judged answer is ``item_id(case_id, k)``
  = ``f"{case_id}@k{k}"``.
- Every write is one transaction: a process killed at any point leaves whole rows only, and a
  write of a row that already exists replaces it (so a resumed run never duplicates a row).
- Rows: ``answers (run, case, k)``, ``judge_results (run, case, k, judge)``,
  ``rankings (run, case)`` (the ranking at the largest k), ``retrieval_metrics
  (run, case, k, metric)``, ``cases (run, case)`` (the test case: question, reference,
  qrels), ``ledger (run, seq)`` (one line per LLM call), ``tags (run, tag)``.

A store file another process keeps locked past ``busy_timeout`` seconds raises
``StoreLockedError`` naming the file, never a raw ``sqlite3`` error; a corrupt or truncated file
raises ``StateFileError`` naming it. In a read-only folder the store opens read-only
(``immutable``; an absent file reads as an empty store): reading commands work, and the first
write raises ``StateFileError`` naming the file.
"""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from ragjudge.errors import ConfigError, DataError, RagjudgeError, sqlite_file_error
from ragjudge.home import state_path
from ragjudge.llm.ledger import LedgerEntry
from ragjudge.schema import Answer, JudgeResult, Ranking, RunManifest, TestCase
from ragjudge.store.lock import writer_alive

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    manifest TEXT NOT NULL,
    status TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    dataset_hash TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT
);
CREATE TABLE IF NOT EXISTS tags (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    tag TEXT NOT NULL,
    value TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, tag)
);
CREATE TABLE IF NOT EXISTS answers (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    case_id TEXT NOT NULL,
    k INTEGER NOT NULL,
    answer TEXT NOT NULL,
    PRIMARY KEY (run_id, case_id, k)
);
CREATE TABLE IF NOT EXISTS judge_results (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    case_id TEXT NOT NULL,
    k INTEGER NOT NULL,
    judge TEXT NOT NULL,
    status TEXT NOT NULL,
    score REAL,
    result TEXT NOT NULL,
    PRIMARY KEY (run_id, case_id, k, judge)
);
CREATE TABLE IF NOT EXISTS rankings (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    case_id TEXT NOT NULL,
    ranking TEXT NOT NULL,
    PRIMARY KEY (run_id, case_id)
);
CREATE TABLE IF NOT EXISTS retrieval_metrics (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    case_id TEXT NOT NULL,
    k INTEGER NOT NULL,
    metric TEXT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (run_id, case_id, k, metric)
);
CREATE TABLE IF NOT EXISTS cases (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    case_id TEXT NOT NULL,
    testcase TEXT NOT NULL,
    PRIMARY KEY (run_id, case_id)
);
CREATE TABLE IF NOT EXISTS ledger (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    entry TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"""


def item_id(case_id: str, k: int) -> str:
    """The id of the item ``case_id`` answered from the top ``k`` contexts."""
    return f"{case_id}@k{k}"


def parse_item_id(value: str) -> tuple[str, int]:
    """Inverse of ``item_id``: ``"q1@k3"`` -> ``("q1", 3)``."""
    case_id, sep, k = value.rpartition("@k")
    if not sep or not k.isdigit():
        raise ValueError(f"not an item id of the form CASE@kK: {value!r}")
    return case_id, int(k)


class StoredJudgeResult(NamedTuple):
    case_id: str
    k: int
    judge: str
    result: JudgeResult


class RetrievalMetric(NamedTuple):
    case_id: str
    k: int
    metric: str
    value: float


class StoreLockedError(RagjudgeError):
    """The store file is locked by another process for longer than the busy timeout."""


def now() -> str:
    """UTC time stamp used in manifests (ISO 8601, seconds)."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class RunStore:
    """One SQLite file holding every run of a project. See the module docstring."""

    def __init__(self, path: str | Path | None = None, *, busy_timeout: float = 10.0) -> None:
        self.path = Path(path) if path is not None else state_path("runs.sqlite")
        if self.path.is_dir():
            raise ConfigError(f"{self.path}: a folder, not a run store file")
        self.busy_timeout = busy_timeout
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.read_only = not os.access(self.path.parent, os.W_OK) or (
            self.path.exists() and not os.access(self.path, os.W_OK)
        )
        self._conn = self._open_read_only() if self.read_only else self._open()

    @classmethod
    def existing(cls, path: str | Path | None = None) -> RunStore:
        """The store at ``path`` to read runs from (``--store``): a path given must be a run
        store file that exists (``DataError``: opening it would create an empty one); None is
        the home's store."""
        if path is not None and not Path(path).is_file():
            raise DataError("no run store file here", path=Path(path))
        return cls(path)

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
        )
        self._conn = conn
        with self._locked():
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            with self._tx() as cur:
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        cur.execute(stmt)
                cur.execute(
                    "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
        return conn

    def _open_read_only(self) -> sqlite3.Connection:
        """The store of a read-only folder: the file opened ``immutable`` (no -wal/-shm
        written), or, when there is no file, an empty in-memory store; writes are refused."""
        if self.path.exists():
            conn = sqlite3.connect(
                f"{self.path.resolve().as_uri()}?immutable=1",
                uri=True,
                isolation_level=None,
                check_same_thread=False,
            )
        else:
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            conn.executescript(_SCHEMA)
        conn.execute("PRAGMA query_only=ON")
        self._conn = conn
        self._query("SELECT COUNT(*) FROM runs")  # a corrupt file fails here, named
        return conn

    # ------------------------------------------------------------------ plumbing

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.DatabaseError as exc:
            msg = str(exc)
            if "locked" in msg or "busy" in msg:
                raise StoreLockedError(
                    f"run store {self.path} is locked by another process (waited "
                    f"{self.busy_timeout:g} s); wait for it to finish or use another "
                    "RAGJUDGE_HOME"
                ) from exc
            if self.read_only and ("readonly" in msg or "query_only" in msg):
                raise sqlite_file_error(self.path, sqlite3.OperationalError("readonly")) from None
            raise sqlite_file_error(self.path, exc) from None

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Cursor]:
        """One write transaction (BEGIN IMMEDIATE .. COMMIT; rolled back on any error)."""
        with self._locked():
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._locked():
            return list(self._conn.execute(sql, params).fetchall())

    # ------------------------------------------------------------------ runs

    def create_run(self, manifest: RunManifest) -> None:
        with self._tx() as cur:
            exists = cur.execute(
                "SELECT 1 FROM runs WHERE run_id = ?", (manifest.run_id,)
            ).fetchone()
            if exists:
                raise ConfigError(f"run {manifest.run_id!r} already exists in {self.path}")
            self._write_manifest(cur, manifest, insert=True)

    def update_manifest(self, manifest: RunManifest) -> None:
        with self._tx() as cur:
            self._write_manifest(cur, manifest, insert=False)

    def _write_manifest(self, cur: sqlite3.Cursor, m: RunManifest, *, insert: bool) -> None:
        row = (
            m.model_dump_json(),
            m.status,
            m.config_hash,
            m.dataset_hash,
            m.started_at,
            m.finished_at,
            m.run_id,
        )
        if insert:
            cur.execute(
                "INSERT INTO runs(manifest, status, config_hash, dataset_hash, started_at, "
                "finished_at, run_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
                row,
            )
        else:
            cur.execute(
                "UPDATE runs SET manifest = ?, status = ?, config_hash = ?, dataset_hash = ?, "
                "started_at = ?, finished_at = ? WHERE run_id = ?",
                row,
            )
        cur.execute("DELETE FROM tags WHERE run_id = ?", (m.run_id,))
        cur.executemany(
            "INSERT INTO tags(run_id, tag, value) VALUES (?, ?, ?)",
            [(m.run_id, t, v) for t, v in m.tags.items()],
        )

    def set_status(self, run_id: str, status: str, *, finished: bool = False) -> RunManifest:
        """Set the run's status; ``finished`` stamps ``finished_at`` (else it is cleared)."""
        data = self.manifest(run_id).model_dump()
        data.update(status=status, finished_at=now() if finished else None)
        m = RunManifest.model_validate(data)
        self.update_manifest(m)
        return m

    def manifest(self, run_id: str) -> RunManifest:
        rows = self._query("SELECT manifest FROM runs WHERE run_id = ?", (run_id,))
        if not rows:
            known = [r[0] for r in self._query("SELECT run_id FROM runs ORDER BY started_at")]
            hint = f"; known runs: {', '.join(known[-5:])}" if known else "; the store is empty"
            raise ConfigError(f"no run {run_id!r} in {self.path}{hint}")
        m = RunManifest.model_validate_json(rows[0][0])
        update: dict[str, Any] = {"tags": self._tags(run_id)}
        if m.status == "running" and not writer_alive(self.path, run_id):
            update["status"] = "interrupted"  # its writer died (kill -9, power loss)
        return m.model_copy(update=update)

    def _tags(self, run_id: str) -> dict[str, str]:
        return dict(self._query("SELECT tag, value FROM tags WHERE run_id = ?", (run_id,)))

    def list_runs(self) -> list[RunManifest]:
        """Every run, oldest first."""
        rows = self._query("SELECT run_id FROM runs ORDER BY started_at, rowid")
        return [self.manifest(r[0]) for r in rows]

    def resolve(self, ref: str) -> str:
        """A run id from a full id, a unique prefix of one, or ``latest``."""
        if ref == "latest":
            rows = self._query("SELECT run_id FROM runs ORDER BY started_at DESC, rowid DESC")
            if not rows:
                raise ConfigError(f"the run store {self.path} has no runs yet")
            return str(rows[0][0])
        rows = self._query("SELECT run_id FROM runs WHERE run_id LIKE ? || '%'", (ref,))
        ids = [r[0] for r in rows]
        if ref in ids:
            return ref
        if len(ids) == 1:
            return str(ids[0])
        if len(ids) > 1:
            raise ConfigError(f"run reference {ref!r} is ambiguous: {', '.join(ids[:5])}")
        self.manifest(ref)  # raises with the known runs listed
        return ref

    def tag(self, run_id: str, tag: str, value: str = "") -> None:
        """Attach ``tag`` (optionally with a value) to a run; tagging again overwrites. A blank
        tag is a ``ConfigError``: nothing could find it."""
        if not tag.strip():
            raise ConfigError(f"a tag needs a name (got {tag!r})")
        self.manifest(run_id)
        with self._tx() as cur:
            cur.execute(
                "INSERT OR REPLACE INTO tags(run_id, tag, value) VALUES (?, ?, ?)",
                (run_id, tag, value),
            )

    def find_by_tag(self, tag: str) -> list[RunManifest]:
        """Runs carrying ``tag``, newest first."""
        rows = self._query(
            "SELECT r.run_id FROM runs r JOIN tags t ON r.run_id = t.run_id WHERE t.tag = ? "
            "ORDER BY r.started_at DESC, r.rowid DESC",
            (tag,),
        )
        return [self.manifest(r[0]) for r in rows]

    def delete_run(self, run_id: str) -> None:
        with self._tx() as cur:
            cur.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))

    # ------------------------------------------------------------------ items

    def put_answers(self, run_id: str, answers: Iterable[Answer]) -> None:
        with self._tx() as cur:
            cur.executemany(
                "INSERT OR REPLACE INTO answers(run_id, case_id, k, answer) VALUES (?, ?, ?, ?)",
                [(run_id, a.case_id, a.k, a.model_dump_json()) for a in answers],
            )

    def answers(self, run_id: str) -> list[Answer]:
        rows = self._query(
            "SELECT answer FROM answers WHERE run_id = ? ORDER BY case_id, k", (run_id,)
        )
        return [Answer.model_validate_json(r[0]) for r in rows]

    def put_judge_results(self, run_id: str, results: Iterable[StoredJudgeResult]) -> None:
        with self._tx() as cur:
            cur.executemany(
                "INSERT OR REPLACE INTO judge_results(run_id, case_id, k, judge, status, score, "
                "result) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        run_id,
                        r.case_id,
                        r.k,
                        r.judge,
                        r.result.status.value,
                        r.result.score,
                        r.result.model_dump_json(),
                    )
                    for r in results
                ],
            )

    def judge_results(self, run_id: str) -> list[StoredJudgeResult]:
        rows = self._query(
            "SELECT case_id, k, judge, result FROM judge_results WHERE run_id = ? "
            "ORDER BY judge, case_id, k",
            (run_id,),
        )
        return [
            StoredJudgeResult(c, int(k), j, JudgeResult.model_validate_json(res))
            for c, k, j, res in rows
        ]

    def put_rankings(self, run_id: str, rankings: Iterable[Ranking]) -> None:
        with self._tx() as cur:
            cur.executemany(
                "INSERT OR REPLACE INTO rankings(run_id, case_id, ranking) VALUES (?, ?, ?)",
                [(run_id, r.query_id, r.model_dump_json()) for r in rankings],
            )

    def rankings(self, run_id: str) -> dict[str, Ranking]:
        """Case id -> the ranking at the run's largest k (retrieval at k is its prefix)."""
        rows = self._query(
            "SELECT case_id, ranking FROM rankings WHERE run_id = ? ORDER BY case_id", (run_id,)
        )
        return {c: Ranking.model_validate_json(r) for c, r in rows}

    def put_cases(self, run_id: str, cases: Iterable[TestCase]) -> None:
        with self._tx() as cur:
            cur.executemany(
                "INSERT OR REPLACE INTO cases(run_id, case_id, testcase) VALUES (?, ?, ?)",
                [(run_id, c.id, c.model_dump_json()) for c in cases],
            )

    def cases(self, run_id: str) -> dict[str, TestCase]:
        """Case id -> the test case the run was asked (empty for a run stored before test
        cases were, or in a read-only file of that age)."""
        if not self._query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'cases'"):
            return {}
        rows = self._query(
            "SELECT case_id, testcase FROM cases WHERE run_id = ? ORDER BY case_id", (run_id,)
        )
        return {c: TestCase.model_validate_json(t) for c, t in rows}

    def put_retrieval_metrics(self, run_id: str, rows: Iterable[RetrievalMetric]) -> None:
        with self._tx() as cur:
            cur.executemany(
                "INSERT OR REPLACE INTO retrieval_metrics(run_id, case_id, k, metric, value) "
                "VALUES (?, ?, ?, ?, ?)",
                [(run_id, r.case_id, r.k, r.metric, float(r.value)) for r in rows],
            )

    def retrieval_metrics(self, run_id: str) -> list[RetrievalMetric]:
        rows = self._query(
            "SELECT case_id, k, metric, value FROM retrieval_metrics WHERE run_id = ? "
            "ORDER BY metric, case_id, k",
            (run_id,),
        )
        return [RetrievalMetric(c, int(k), m, float(v)) for c, k, m, v in rows]

    def append_ledger(self, run_id: str, entries: Iterable[LedgerEntry]) -> None:
        """Append ledger entries after the run's last one."""
        with self._tx() as cur:
            (last,) = cur.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM ledger WHERE run_id = ?", (run_id,)
            ).fetchone()
            cur.executemany(
                "INSERT INTO ledger(run_id, seq, entry) VALUES (?, ?, ?)",
                [(run_id, last + i, e.model_dump_json()) for i, e in enumerate(entries, start=1)],
            )

    def ledger(self, run_id: str) -> list[LedgerEntry]:
        """The run's ledger entries (``LedgerEntry``: calls and HTTP attempts) in the order they
        were written."""
        rows = self._query("SELECT entry FROM ledger WHERE run_id = ? ORDER BY seq", (run_id,))
        return [LedgerEntry.model_validate_json(r[0]) for r in rows]

    def counts(self, run_id: str) -> dict[str, int]:
        """Row counts per table for one run (``runs show``, tests of resumption)."""
        out = {}
        for table in ("answers", "judge_results", "rankings", "retrieval_metrics", "ledger"):
            (n,) = self._query(f"SELECT COUNT(*) FROM {table} WHERE run_id = ?", (run_id,))[0]
            out[table] = int(n)
        return out
