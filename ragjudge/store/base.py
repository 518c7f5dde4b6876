"""The run store seam: the ``RunStore`` Protocol every part of ragjudge reads and writes runs
through, and the rows it holds. Which database stands behind it is known only to
``ragjudge.store`` (``open_store`` chooses; ``ragjudge.store.sql`` is the one implementation,
SQLite or PostgreSQL through SQLAlchemy).

Contract (stable; the sweep, the regression report, calibration, export, the Ray driver and the
web UI all rely on it):

- A run is identified by ``run_id``; its ``RunManifest`` is stored whole. A run stored as
  ``running`` whose writer holds no lease any more reads as ``interrupted``: it was killed, and
  can be resumed (on any machine sharing the store).
- Items are keyed ``(case_id, k)``; the item id of a judged answer is ``item_id(case_id, k)`` =
  ``f"{case_id}@k{k}"``.
- Every ``put_*`` call is one transaction: a process killed at any point leaves whole batches
  only, and writing a row that already exists replaces it (keys: answers ``(run, case, k)``,
  judge results ``(run, case, k, judge)``, rankings and cases ``(run, case)``, retrieval metrics
  ``(run, case, k, metric)``), so a resumed run never duplicates a row.
- The ledger is append-only, numbered per run; tags are ``(run, tag) -> value``.
- Human labels are rows of their own (``StoredLabel``): several labelers of one case are all
  kept, each row with its labeler, time and the judge version it was compared with.
- A run's summary (``put_summary``) is kept with the status it was computed at, as JSON the
  store does not read (``ragjudge.sweep.digest`` is its one reader); any write to the run's
  rows, ledger or manifest (``set_status`` too: a resume, a status change) drops it.
- ``lease(run_id)`` holds the run's single-writer lease for a block: a second live writer gets
  ``RunLockedError`` naming the holder; a writer that dies (``kill -9``, a lost machine) loses
  it, so its run can be resumed. A live writer can lose it too (PostgreSQL: the server restarted
  and ended its session); it finds out before its next write to the run, and takes the lease
  again if no one else did (the write goes on), else that write and every later one of the run
  until the lease's block ends raise ``LeaseLostError`` and write nothing.
- ``resolve("latest")`` is the newest run of any status (what ``sweep --resume latest``
  continues); ``resolve("latest", finished=True)`` the newest finished run (what a report
  compares and ``runs tag latest`` accepts), and without one a ``ConfigError`` naming the
  newest run and its status.
- ``location`` names the store in messages, with any password replaced by ``***``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterable
from contextlib import AbstractContextManager
from types import TracebackType
from typing import NamedTuple, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from ragjudge.errors import RagjudgeError, StateFileError
from ragjudge.llm.ledger import LedgerEntry
from ragjudge.schema import Answer, JudgeResult, Ranking, RunManifest, TestCase
from ragjudge.store.rows import CorruptRowError as CorruptRowError  # beside its parser
from ragjudge.store.rows import JudgeResults


def item_id(case_id: str, k: int) -> str:
    """The id of the item ``case_id`` answered from the top ``k`` contexts."""
    return f"{case_id}@k{k}"


def parse_item_id(value: str) -> tuple[str, int]:
    """Inverse of ``item_id``: ``"q1@k3"`` -> ``("q1", 3)``."""
    case_id, sep, k = value.rpartition("@k")
    if not sep or not k.isdigit():
        raise ValueError(f"not an item id of the form CASE@kK: {value!r}")
    return case_id, int(k)


def now(timespec: str = "seconds") -> str:
    """UTC time stamp used in manifests and labels (ISO 8601, to ``timespec``). A run's start
    is stamped to the microsecond: runs are ordered by it, and two started in the same second
    must still list (and resolve ``latest``) in the order they began."""
    return dt.datetime.now(dt.UTC).isoformat(timespec=timespec)


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


class StoredLabel(BaseModel):
    """One human label of one judged item, as the run store keeps it.

    ``value`` is in the native units of ``calibrate.labels`` (binary 0/1, ordinal 1..5,
    continuous [0, 1], pairwise +1/-1/0); ``raw`` is the label as given (``"yes"``, ``"4"``).
    ``judge`` is the judge dimension labelled; ``judge_version`` the version of that judge in the
    labelled run, whose result for this item the label is compared with (the labeler is not
    shown it, so as not to anchor them); None when unknown (a label imported from a CSV).
    ``id`` is given by the store."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    case_id: str
    k: int
    judge: str
    value: float
    raw: str = ""
    scale: str | None = None
    note: str = ""
    labeler: str
    created_at: str = ""
    judge_version: str | None = None
    id: int | None = None

    @property
    def item_id(self) -> str:
        return item_id(self.case_id, self.k)


class CaseQuery(BaseModel):
    """A page of a run's cases at one k (``RunStore.find_cases``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    k: int
    judge: str
    """The focus judge: the status and score filters and the move are of its results."""
    text: str = ""
    """Case-insensitive text in the case id, the question or the answer at k."""
    status: str = ""
    """The focus judge's status (``missing``: no result at k)."""
    lo: float | None = None
    hi: float | None = None
    baseline: str | None = None
    """A run to order by the move against (current - baseline score of the focus judge)."""
    offset: int = 0
    limit: int = 50


class CaseHit(BaseModel):
    """One case of a page: every judge's status and score at the page's k."""

    case_id: str
    moved: float | None = None
    statuses: dict[str, str]
    scores: dict[str, float | None]


class StoreLockedError(RagjudgeError):
    """The store is locked by another process for longer than the busy timeout."""


class StoreWaitWarning(UserWarning):
    """A write waits for another process writing the same SQLite store."""


class StoreFullError(StateFileError):
    """The disk (or the database server's disk) is full: the write failed whole, nothing
    stored before it was lost."""


class RunLockedError(RagjudgeError):
    """Another live process is writing this run."""


class LeaseLostError(RunLockedError):
    """This process lost its lease on a run while writing it (its database session ended) and
    could not take it again: another process may be writing the run now, so this one stops."""


@runtime_checkable
class RunStore(Protocol):
    """Every run of a project: manifests, cases, rankings, answers, judge results, retrieval
    metrics, the ledger, tags and human labels (module docstring for the contract)."""

    @property
    def location(self) -> str:
        """The store's file path or URL, password replaced by ``***`` (for messages)."""
        ...

    @property
    def read_only(self) -> bool:
        """True when writes are refused (a read-only folder)."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> RunStore: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    # runs
    def create_run(self, manifest: RunManifest) -> None:
        """Store a new run (``ConfigError`` when its id exists)."""
        ...

    def update_manifest(self, manifest: RunManifest) -> None:
        """Replace the run's manifest and its tags with ``manifest``'s."""
        ...

    def set_status(self, run_id: str, status: str, *, finished: bool = False) -> RunManifest:
        """Set the run's status; ``finished`` stamps ``finished_at`` (else it is cleared)."""
        ...

    def manifest(self, run_id: str) -> RunManifest:
        """The run's manifest with its tags; ``ConfigError`` listing known runs if absent."""
        ...

    def list_runs(self) -> list[RunManifest]:
        """Every run, oldest first."""
        ...

    def resolve(self, ref: str, *, finished: bool = False) -> str:
        """A run id from a full id, a unique prefix of one, or ``latest``: the newest run, or
        with ``finished`` the newest finished one (``ConfigError`` naming the newest run and
        its status when none finished)."""
        ...

    def tag(self, run_id: str, tag: str, value: str = "") -> None:
        """Attach ``tag`` (with an optional value) to a run; tagging again overwrites."""
        ...

    def find_by_tag(self, tag: str) -> list[RunManifest]:
        """Runs carrying ``tag``, newest first."""
        ...

    def delete_run(self, run_id: str) -> None:
        """Delete the run and every row of it."""
        ...

    # rows, written in idempotent batches and read back per run
    def put_answers(self, run_id: str, answers: Iterable[Answer]) -> None: ...

    def answers(self, run_id: str, *, case_ids: Collection[str] | None = None) -> list[Answer]:
        """The run's answers (of ``case_ids`` only, when given; the same for every read of
        rows below)."""
        ...

    def put_judge_results(self, run_id: str, results: Iterable[StoredJudgeResult]) -> None: ...

    def judge_results(
        self, run_id: str, *, case_ids: Collection[str] | None = None
    ) -> list[StoredJudgeResult]: ...

    def judge_result_rows(
        self, run_id: str, *, case_ids: Collection[str] | None = None
    ) -> JudgeResults:
        """The run's judge results keyed ``(judge, k, case id)``: scores and statuses read
        from their columns, each result parsed on first access (``ragjudge.store.rows``)."""
        ...

    def put_rankings(self, run_id: str, rankings: Iterable[Ranking]) -> None: ...

    def rankings(
        self, run_id: str, *, case_ids: Collection[str] | None = None
    ) -> dict[str, Ranking]:
        """Case id -> the ranking at the run's largest k."""
        ...

    def put_cases(self, run_id: str, cases: Iterable[TestCase]) -> None: ...

    def cases(self, run_id: str, *, case_ids: Collection[str] | None = None) -> dict[str, TestCase]:
        """Case id -> the test case the run was asked."""
        ...

    def put_retrieval_metrics(self, run_id: str, rows: Iterable[RetrievalMetric]) -> None: ...

    def retrieval_metrics(
        self, run_id: str, *, case_ids: Collection[str] | None = None
    ) -> list[RetrievalMetric]: ...

    def append_ledger(self, run_id: str, entries: Iterable[LedgerEntry]) -> None:
        """Append ledger entries after the run's last one."""
        ...

    def ledger(self, run_id: str) -> list[LedgerEntry]: ...

    def counts(self, run_id: str) -> dict[str, int]:
        """Row counts per table for one run: answers, judge_results, rankings,
        retrieval_metrics, ledger."""
        ...

    def run_counts(self, run_ids: Collection[str]) -> dict[str, dict[str, int]]:
        """run id -> its ``counts``, for every one of ``run_ids`` (zeros for a run without
        rows), read in one grouped query rather than one per run."""
        ...

    def find_cases(self, run_id: str, query: CaseQuery) -> tuple[int, list[CaseHit]]:
        """How many of the run's cases match ``query``, and its page (``SqlRunStore``'s
        docstring gives the order)."""
        ...

    # summaries
    def put_summary(self, run_id: str, status: str, summary: str) -> None:
        """Keep ``summary`` (JSON) as the run's summary at ``status``, replacing any."""
        ...

    def summaries(self, run_ids: Collection[str]) -> dict[str, tuple[str, str]]:
        """run id -> (status, summary JSON) of the runs among ``run_ids`` that have one."""
        ...

    # human labels
    def add_labels(self, labels: Iterable[StoredLabel]) -> list[int]:
        """Store labels (each a new row; ``created_at`` stamped when blank); their ids."""
        ...

    def labels(
        self, run_id: str, *, case_id: str | None = None, judge: str | None = None
    ) -> list[StoredLabel]:
        """The run's labels (optionally of one case and/or judge), oldest first."""
        ...

    # ownership
    def lease(self, run_id: str) -> AbstractContextManager[object]:
        """``with store.lease(run_id):`` holds the run's single-writer lease for the block
        (``RunLockedError`` when a live writer holds it)."""
        ...

    def writer_alive(self, run_id: str) -> bool:
        """True when a live writer holds the run's lease."""
        ...
