"""A run's digest: what the ``ui`` run page, history and runs list show of a run (the sweep
summary with its intervals and choice of k, every judge's statuses and coverage, the cost),
computed once and kept in the run store (``RunStore.put_summary``). This module is the one
reader and writer of stored summaries.

A digest is computed from the whole run (``RunView``, ``analyse`` with the run's own config):
the sweep keeps one when a run ends (``keep``); ``digests`` reads the kept one when it was made
at the run's current status and with this ``VERSION``, else computes it once and keeps it,
except for a ``running`` run (its rows still change) or on a read-only store. The store drops
a run's digest on any write to the run, so a resumed run or a status change recomputes it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from pydantic import BaseModel, ValidationError

from ragjudge.store import RunStore
from ragjudge.store.view import RunView
from ragjudge.sweep.analysis import SweepSummary, analyse
from ragjudge.sweep.config import SweepConfig, stored_config

VERSION = 1
"""Bumped when ``RunDigest`` or the analysis changes: older kept digests are recomputed."""


class RunDigest(BaseModel):
    """A run's digest (module docstring); ``summary.manifest`` is not kept (read it fresh)."""

    version: int = VERSION
    status: str
    summary: SweepSummary
    statuses: dict[str, dict[str, int]]
    """judge -> status -> count over every stored result."""
    results: int
    scored: int
    """Judge results with a score."""
    cost_usd: float
    """Sum of the run's ledger."""

    @property
    def coverage(self) -> float | None:
        """scored / results (None without results)."""
        return self.scored / self.results if self.results else None


def summarise(view: RunView, config: SweepConfig | None = None) -> SweepSummary:
    """The sweep summary of a stored run, with its own config unless ``config`` is given
    (``ragjudge runs show``)."""
    assert view.manifest is not None  # RunView.read always sets it
    cfg = config or stored_config(view.manifest)
    return analyse(view, ks=cfg.ks, judges=cfg.judges.names, objective=cfg.objective, seed=cfg.seed)


def compute(
    store: RunStore,
    view: RunView,
    summary: SweepSummary | None = None,
    config: SweepConfig | None = None,
) -> RunDigest:
    """The digest of ``view``. ``summary`` (made with ``config``) is used when ``config``
    analyses as the run's own does (same ks, judges, objective and seed), else the run is
    analysed again."""
    assert view.manifest is not None
    if summary is not None and config is not None:
        own = stored_config(view.manifest)
        if _analysis(own) != _analysis(config):
            summary = None
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for (judge, _, _), status in view.results.statuses.items():
        counts[judge][status.value] += 1
    return RunDigest(
        status=view.manifest.status,
        summary=(summary or summarise(view)).model_copy(update={"manifest": None}),
        statuses={j: dict(c) for j, c in sorted(counts.items())},
        results=len(view.results),
        scored=sum(score is not None for score in view.results.scores.values()),
        cost_usd=sum(e.cost_usd for e in store.ledger(view.run_id)),
    )


def _analysis(cfg: SweepConfig) -> tuple[object, ...]:
    """What ``analyse`` reads of a config (the judges: every one that runs, criteria too)."""
    judges = list(dict.fromkeys([*cfg.judges.names, *cfg.judges.criteria]))
    return (sorted(cfg.ks), judges, cfg.objective, cfg.seed)


def keep(store: RunStore, digest: RunDigest) -> None:
    """Store ``digest`` as its run's (not for a running run, nor on a read-only store)."""
    if digest.status != "running" and not store.read_only:
        store.put_summary(digest.summary.run_id, digest.status, digest.model_dump_json())


def digests(store: RunStore, run_ids: Iterable[str]) -> dict[str, RunDigest]:
    """run id -> its digest, kept or computed (module docstring)."""
    ids = list(run_ids)
    few = len(ids) <= 3  # a run page: no need to read every manifest
    manifests = [store.manifest(r) for r in ids] if few else store.list_runs()
    status = {m.run_id: m.status for m in manifests}
    stored = store.summaries(ids)
    out: dict[str, RunDigest] = {}
    for run_id in ids:
        kept = stored.get(run_id)
        if kept is not None and kept[0] == status.get(run_id):
            try:
                found = RunDigest.model_validate_json(kept[1])
            except ValidationError:
                found = None  # written by another version: computed again below
            if found is not None and found.version == VERSION:
                out[run_id] = found
                continue
        made = compute(store, RunView.read(store, run_id))
        keep(store, made)
        out[run_id] = made
    return out


def digest(store: RunStore, run_id: str) -> RunDigest:
    """One run's digest (``digests``)."""
    return digests(store, [run_id])[run_id]
