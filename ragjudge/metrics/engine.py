"""Vectorised evaluation of all retrieval metrics over all queries at once.

Conventions (those of trec_eval, so that ``P_k``, ``recall_k``, ``recip_rank``, ``map``,
``map_cut_k``, ``ndcg_cut_k`` and ``Rprec`` equal pytrec_eval's per query):

- The evaluated queries are the queries of the qrels. A judged query without a ranking (or with
  an empty one) scores 0 on every metric; run queries that are not in the qrels are ignored.
  Both are reported with a counted ``DataWarning`` and counted in the report.
- A ``Run`` is ordered as trec_eval orders it: score descending, ties by document id
  descending. ``evaluate_rankings`` keeps the rankings' own order exactly.
- Unjudged documents have grade 0. Binary metrics count grade >= ``relevance_threshold``
  (trec_eval's ``relevance_level``, default 1); R is the number of judged documents at or above
  it. NDCG uses the grades as gains (grades <= 0 gain nothing).

The per-query functions in the sibling modules state each formula; this module computes the
same values with numpy over flat arrays (one entry per retrieved document) and, for the
cut-off metrics, over a (queries x max k) matrix whose rows are summed left to right, so the
summation order is trec_eval's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain, repeat

import numpy as np

from ragjudge.errors import ConfigError, DataError
from ragjudge.io.diagnostics import warn_counted
from ragjudge.schema import Qrels, Ranking, Run

from .report import MetricsReport, bootstrap_columns

DEFAULT_KS = (1, 3, 5, 10, 20, 100)
CUTOFF_FAMILIES = ("precision", "recall", "f1", "hit_rate", "mrr", "map", "ndcg", "ndcg_linear")
UNCUT_FAMILIES = ("mrr", "map")


def metric_keys(ks: Sequence[int]) -> list[str]:
    """Report keys in display order: each family uncut (mrr, map) then @k, then r_precision."""
    keys: list[str] = []
    for family in CUTOFF_FAMILIES:
        if family in UNCUT_FAMILIES:
            keys.append(family)
        keys.extend(f"{family}@{k}" for k in ks)
    keys.append("r_precision")
    return keys


def check_ks(ks: Iterable[int]) -> list[int]:
    out = sorted(set(ks))
    if not out or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in out):
        raise ConfigError(f"cut-offs must be positive integers, got {list(ks)!r}")
    return out


def check_threshold(threshold: int) -> int:
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
        raise ConfigError(
            f"relevance threshold must be an integer >= 1 (unjudged documents have grade 0), "
            f"got {threshold!r}"
        )
    return threshold


def _score_order(lengths: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Flat indices ordering each query's documents by score descending (ties in any order).

    Rows are sorted separately in a (queries x longest run) matrix padded with -inf when that
    matrix is not much larger than the run (the usual fixed-depth run), else by one lexsort.
    """
    n_q, width = lengths.size, int(lengths.max(initial=0))
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    if n_q * width <= 2 * scores.size + 1024:
        filled = np.arange(width) < lengths[:, None]
        mat = np.full((n_q, width), np.inf)
        mat[filled] = -scores
        rows = np.argsort(mat, axis=1)
        return (starts[:, None] + rows)[filled]
    return np.lexsort((-scores, np.repeat(np.arange(n_q), lengths)))


def _trec_sort(
    lengths: np.ndarray,
    scores: np.ndarray,
    grades: np.ndarray,
    id_at: Callable[[np.ndarray], list[str]],
) -> np.ndarray:
    """Indices ordering the flat run by query, then score descending, then id descending.

    The id tie-break only moves documents within a group of equal scores, so it is applied
    only to the tie groups holding a document of positive grade (elsewhere every order gives
    the same metric values): a per-query score sort, then an id sort of the documents in those
    groups (numpy compares ids by code point, which is strcmp's order on their UTF-8 bytes).
    ``id_at`` gives the document ids at flat positions.
    """
    if scores.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = _score_order(lengths, scores)
    s = scores[order]
    qpos = np.repeat(np.arange(lengths.size), lengths)
    starts_group = np.ones(s.size, dtype=bool)
    starts_group[1:] = (s[1:] != s[:-1]) | (qpos[1:] != qpos[:-1])
    group = np.cumsum(starts_group) - 1
    size = np.bincount(group)
    positive = np.bincount(group, weights=grades[order] > 0) > 0
    fix = np.flatnonzero((positive & (size > 1))[group])
    if fix.size:
        sub_ids = np.array(id_at(order[fix]))
        _, id_rank = np.unique(sub_ids, return_inverse=True)
        resort = np.lexsort((-id_rank.ravel(), group[fix]))
        order[fix] = order[fix][resort]
    return order


def _padded_cumsum(
    values: np.ndarray, qpos: np.ndarray, pos: np.ndarray, shape: tuple[int, int]
) -> np.ndarray:
    """Row-wise running sums of ``values`` placed at (qpos, pos), for pos < shape[1]."""
    mat = np.zeros(shape)
    keep = pos < shape[1]
    mat[qpos[keep], pos[keep]] = values[keep]
    return np.cumsum(mat, axis=1)


def _gains(grades: np.ndarray, top: np.ndarray) -> np.ndarray:
    """Exponential gains 2^g - 1 scaled by 2^-top (0 for a grade <= 0)."""
    return np.where(grades > 0, np.exp2(grades - top) - np.exp2(-top), 0.0)


def _at(cum: np.ndarray, k: int) -> np.ndarray:
    """Column k-1 of row-wise running sums (the last column when k exceeds the width)."""
    if cum.shape[1] == 0:
        return np.zeros(cum.shape[0])
    return cum[:, min(k, cum.shape[1]) - 1]


def _compute(
    qrels: Qrels,
    qids: list[str],
    grades: np.ndarray,
    lengths: np.ndarray,
    ks: list[int],
    threshold: int,
) -> np.ndarray:
    """The (queries x metric_keys(ks)) matrix for ranked grades laid out query after query."""
    nq = len(qids)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    qpos = np.repeat(np.arange(nq), lengths)
    pos = np.arange(grades.size) - np.repeat(starts, lengths)
    rel = grades >= threshold

    n_rel = np.array(
        [sum(1 for g in qrels[q].values() if g >= threshold) for q in qids], dtype=float
    )
    safe_r = np.where(n_rel > 0, n_rel, 1.0)

    # Ideal ordering of the judged grades (for IDCG), laid out the same way.
    ideal = [sorted((g for g in qrels[q].values() if g > 0), reverse=True) for q in qids]
    ideal_len = np.array([len(x) for x in ideal], dtype=np.int64)
    ideal_grades = np.fromiter(
        (g for x in ideal for g in x), dtype=float, count=int(ideal_len.sum())
    )
    ideal_q = np.repeat(np.arange(nq), ideal_len)
    ideal_pos = np.arange(ideal_grades.size) - np.repeat(
        np.concatenate(([0], np.cumsum(ideal_len)[:-1])).astype(np.int64), ideal_len
    )

    width = min(max(ks), int(max(lengths.max(initial=0), ideal_len.max(initial=0))))
    shape = (nq, width)
    hits = _padded_cumsum(rel.astype(float), qpos, pos, shape)
    disc = 1.0 / np.log2(pos + 2.0)
    ideal_disc = 1.0 / np.log2(ideal_pos + 2.0)
    lin = np.maximum(grades, 0).astype(float)
    # Exponential gains scaled by 2^-m, m the query's highest grade: the same NDCG, finite for
    # any grade (2^g overflows past g = 1023).
    top = np.array([x[0] if x else 0 for x in ideal], dtype=float)
    dcg = {
        "ndcg_linear": _padded_cumsum(lin * disc, qpos, pos, shape),
        "ndcg": _padded_cumsum(_gains(lin, top[qpos]) * disc, qpos, pos, shape),
    }
    idcg = {
        "ndcg_linear": _padded_cumsum(ideal_grades * ideal_disc, ideal_q, ideal_pos, shape),
        "ndcg": _padded_cumsum(
            _gains(ideal_grades, top[ideal_q]) * ideal_disc, ideal_q, ideal_pos, shape
        ),
    }

    # Reciprocal rank and average precision from the relevant retrieved documents.
    rel_idx = np.flatnonzero(rel)
    rel_q, rel_pos = qpos[rel_idx], pos[rel_idx]
    # Running count of relevant documents within each query at each relevant document.
    cs = np.cumsum(rel)
    base = np.concatenate(([0], cs))[starts]
    rank_among_rel: np.ndarray = cs[rel_idx] - base[rel_q]
    prec_at_rel = rank_among_rel / (rel_pos + 1.0)
    first_q, first_at = np.unique(rel_q, return_index=True)
    first_pos = np.full(nq, np.iinfo(np.int64).max)
    first_pos[first_q] = rel_pos[first_at]
    rr = np.where(first_pos < np.iinfo(np.int64).max, 1.0 / (first_pos + 1.0), 0.0)

    def ap(mask: np.ndarray | None) -> np.ndarray:
        q, w = (rel_q, prec_at_rel) if mask is None else (rel_q[mask], prec_at_rel[mask])
        return np.where(n_rel > 0, np.bincount(q, weights=w, minlength=nq) / safe_r, 0.0)

    columns: dict[str, np.ndarray] = {"mrr": rr, "map": ap(None)}
    for k in ks:
        h = _at(hits, k)
        p = h / k
        r = np.where(n_rel > 0, h / safe_r, 0.0)
        columns[f"precision@{k}"] = p
        columns[f"recall@{k}"] = r
        columns[f"f1@{k}"] = np.where(p + r > 0, 2 * p * r / np.where(p + r > 0, p + r, 1.0), 0.0)
        columns[f"hit_rate@{k}"] = (h > 0).astype(float)
        columns[f"mrr@{k}"] = np.where(first_pos < k, rr, 0.0)
        columns[f"map@{k}"] = ap(rel_pos < k)
        for family in ("ndcg", "ndcg_linear"):
            num, den = _at(dcg[family], k), _at(idcg[family], k)
            columns[f"{family}@{k}"] = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)

    # R-precision: relevant documents in the top R, over R.
    depth = np.minimum(n_rel.astype(np.int64), lengths)
    cs_pad = np.concatenate(([0], cs))
    in_top_r = cs_pad[starts + depth] - cs_pad[starts]
    columns["r_precision"] = np.where(n_rel > 0, in_top_r / safe_r, 0.0)

    keys = metric_keys(ks)
    return np.column_stack([columns[k] for k in keys]) if nq else np.zeros((0, len(keys)))


def _judged_qids(
    qrels: Qrels, run_qids: Iterable[str], threshold: int
) -> tuple[list[str], int, int]:
    """The evaluated queries (the qrels' order), warning about the ones that need a word."""
    qids = list(qrels)
    if not qids:
        raise DataError("no judged queries to evaluate: the qrels are empty")
    run_set = set(run_qids)
    ignored = [q for q in run_set if q not in qrels]
    missing = [q for q in qids if q not in run_set]
    no_rel = [q for q in qids if not any(g >= threshold for g in qrels[q].values())]
    warn_counted("run queries are not in the qrels and were ignored", sorted(ignored))
    warn_counted("judged queries have no ranking and score 0", missing)
    warn_counted(f"judged queries have no document of grade >= {threshold} and score 0", no_rel)
    return qids, len(missing), len(ignored)


def _report(
    matrix: np.ndarray,
    qids: list[str],
    ks: list[int],
    threshold: int,
    missing: int,
    ignored: int,
    ci: bool,
    seed: int,
) -> MetricsReport:
    keys = metric_keys(ks)
    means = matrix.mean(axis=0)
    intervals = (
        bootstrap_columns(matrix, seed=seed) if ci else [(float(m), float(m)) for m in means]
    )
    rows = matrix.tolist()
    return MetricsReport(
        mean={k: float(v) for k, v in zip(keys, means, strict=True)},
        ci=dict(zip(keys, intervals, strict=True)),
        per_query={q: dict(zip(keys, row, strict=True)) for q, row in zip(qids, rows, strict=True)},
        n_queries=len(qids),
        ks=ks,
        relevance_threshold=threshold,
        queries_without_ranking=missing,
        ignored_run_queries=ignored,
    )


def evaluate_run(
    qrels: Qrels,
    run: Run,
    *,
    ks: Sequence[int] = DEFAULT_KS,
    relevance_threshold: int = 1,
    ci: bool = True,
    seed: int = 0,
) -> MetricsReport:
    """All metrics for a TREC-style run (scores), ordered as trec_eval orders it.

    ``ci=False`` skips the bootstrap and reports zero-width intervals at the mean.
    """
    ks_ = check_ks(ks)
    threshold = check_threshold(relevance_threshold)
    qids, missing, ignored = _judged_qids(qrels, run, threshold)
    empty: dict[str, float] = {}
    docs_of = [run.get(q) or empty for q in qids]
    lengths = np.fromiter(map(len, docs_of), dtype=np.int64, count=len(qids))
    n = int(lengths.sum())
    score_arr = np.fromiter(chain.from_iterable(d.values() for d in docs_of), dtype=float, count=n)
    if not np.isfinite(score_arr).all():
        raise DataError("the run has a non-finite score (NaN or infinity)")
    grades = np.fromiter(
        chain.from_iterable(
            map(qrels[q].get, d, repeat(0)) for q, d in zip(qids, docs_of, strict=True)
        ),
        dtype=np.int64,
        count=n,
    )
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)

    def id_at(flat: np.ndarray) -> list[str]:
        qpos = np.searchsorted(starts, flat, side="right") - 1
        lists: dict[int, list[str]] = {}
        out = []
        for qi, i in zip(qpos.tolist(), (flat - starts[qpos]).tolist(), strict=True):
            ids = lists.get(qi)
            if ids is None:
                ids = lists[qi] = list(docs_of[qi])
            out.append(ids[i])
        return out

    grades = grades[_trec_sort(lengths, score_arr, grades, id_at)]
    matrix = _compute(qrels, qids, grades, lengths, ks_, threshold)
    return _report(matrix, qids, ks_, threshold, missing, ignored, ci, seed)


def evaluate_rankings(
    qrels: Qrels,
    rankings: Mapping[str, Ranking] | Iterable[Ranking],
    *,
    ks: Sequence[int] = DEFAULT_KS,
    relevance_threshold: int = 1,
    ci: bool = True,
    seed: int = 0,
) -> MetricsReport:
    """All metrics for rankings (keyed by query id, or a list keyed by their ``query_id``), in
    exactly the order given (scores unused)."""
    if not isinstance(rankings, Mapping):
        rankings = {r.query_id: r for r in rankings}
    ks_ = check_ks(ks)
    threshold = check_threshold(relevance_threshold)
    qids, missing, ignored = _judged_qids(qrels, rankings, threshold)
    lengths = np.zeros(len(qids), dtype=np.int64)
    grade_list: list[int] = []
    for i, q in enumerate(qids):
        ranking = rankings.get(q)
        if ranking is None:
            continue
        doc_ids = ranking.doc_ids
        if len(set(doc_ids)) != len(doc_ids):
            dup = next(d for d in doc_ids if doc_ids.count(d) > 1)
            raise DataError(f"the ranking of query {q!r} lists document {dup!r} more than once")
        grade_list.extend(map(qrels[q].get, doc_ids, repeat(0)))
        lengths[i] = len(doc_ids)
    grades = np.asarray(grade_list, dtype=np.int64)
    matrix = _compute(qrels, qids, grades, lengths, ks_, threshold)
    return _report(matrix, qids, ks_, threshold, missing, ignored, ci, seed)


def rankings_to_run(rankings: Mapping[str, Ranking] | Iterable[Ranking]) -> Run:
    """Rankings as a Run (query -> document -> score). Order then follows the scores only."""
    items = rankings.values() if isinstance(rankings, Mapping) else rankings
    run: Run = {}
    for r in items:
        scores: dict[str, float] = {}
        for d in r.docs:
            if d.doc_id in scores:
                raise DataError(
                    f"the ranking of query {r.query_id!r} lists document {d.doc_id!r} twice"
                )
            scores[d.doc_id] = d.score
        run[r.query_id] = scores
    return run
