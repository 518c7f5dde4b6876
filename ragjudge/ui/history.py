"""The History page: the headline metrics of every run carrying a tag (the nightly), oldest
first, each at the run's chosen k with its 95% interval, read from the runs' stored digests.

A point is marked *regressed* when its interval lies wholly below the previous run's interval
(ci_high < previous ci_low): a drop that the two runs' own intervals cannot explain. The
report (``Compare``, one click away) gives the paired test.
"""

from __future__ import annotations

from pydantic import BaseModel

from ragjudge.store import RunStore
from ragjudge.ui.pages import Pages


class Point(BaseModel):
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    regressed: bool = False


class Night(BaseModel):
    run_id: str
    started_at: str
    status: str
    k: int | None
    points: dict[str, Point]
    previous: str | None


class History(BaseModel):
    tag: str
    metrics: list[str]
    nights: list[Night]


def history(pages: Pages, store: RunStore, tag: str) -> History:
    """The tagged runs' headline metrics (module docstring)."""
    manifests = sorted(store.find_by_tag(tag), key=lambda m: m.started_at)
    kept = pages.digests([m.run_id for m in manifests])
    nights: list[Night] = []
    metrics: list[str] = []
    previous: Night | None = None
    for m in manifests:
        points: dict[str, Point] = {}
        k = None
        d = kept[m.run_id]
        if d.results:
            s = d.summary
            k = s.choice.best_k or (s.ks[-1] if s.ks else None)
            table = s.table()
            for name in [*s.judges, "objective"]:
                a = table.get(name, {}).get(k) if k is not None else None
                if a is None:
                    continue
                before = previous.points.get(name) if previous is not None else None
                drop = (
                    before is not None
                    and before.ci_low is not None
                    and a.ci_high is not None
                    and a.ci_high < before.ci_low
                )
                points[name] = Point(
                    mean=a.mean, ci_low=a.ci_low, ci_high=a.ci_high, regressed=drop
                )
                if name not in metrics:
                    metrics.append(name)
        night = Night(
            run_id=m.run_id,
            started_at=m.started_at,
            status=m.status,
            k=k,
            points=points,
            previous=previous.run_id if previous is not None else None,
        )
        nights.append(night)
        previous = night
    return History(tag=tag, metrics=metrics, nights=nights)
