"""The run store: every run, answer, judge result, ledger line and human label, in an embedded
SQLite file (the default) or a PostgreSQL server a team shares.

``open_store(url)`` opens one (``ragjudge.store.open``); everything else reads and writes
through the ``RunStore`` Protocol (``ragjudge.store.base``, the contract) and reads a run whole
as a ``RunView`` (``ragjudge.store.view``). docs/store.md describes the backends.
"""

from ragjudge.store.base import (
    CaseHit,
    CaseQuery,
    CorruptRowError,
    LeaseLostError,
    RetrievalMetric,
    RunLockedError,
    RunStore,
    StoredJudgeResult,
    StoredLabel,
    StoreFullError,
    StoreLockedError,
    StoreWaitWarning,
    item_id,
    now,
    parse_item_id,
)
from ragjudge.store.lock import RunLock
from ragjudge.store.open import open_store

__all__ = [
    "CaseHit",
    "CaseQuery",
    "CorruptRowError",
    "LeaseLostError",
    "RetrievalMetric",
    "RunLock",
    "RunLockedError",
    "RunStore",
    "StoreFullError",
    "StoreLockedError",
    "StoreWaitWarning",
    "StoredJudgeResult",
    "StoredLabel",
    "item_id",
    "now",
    "open_store",
    "parse_item_id",
]
