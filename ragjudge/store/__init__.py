"""The run store: every run, answer, judge result and ledger line in one SQLite file (WAL).

See ``ragjudge.store.sqlite`` for the contract and docs/sweep.md for the API.
"""

from ragjudge.store.lock import RunLock, RunLockedError
from ragjudge.store.sqlite import (
    RetrievalMetric,
    RunStore,
    StoredJudgeResult,
    StoreLockedError,
    item_id,
    parse_item_id,
)

__all__ = [
    "RetrievalMetric",
    "RunLock",
    "RunLockedError",
    "RunStore",
    "StoreLockedError",
    "StoredJudgeResult",
    "item_id",
    "parse_item_id",
]
