"""TREC qrels and run files (read and write), as trec_eval reads them.

- qrels: ``qid iter docid rel`` per line (whitespace separated, ``iter`` ignored); a BEIR
  ``query-id<TAB>corpus-id<TAB>score`` file (with or without that header) is read as well.
- run: ``qid Q0 docid rank score tag`` per line. As in trec_eval, the ``rank`` column is not
  used for ordering: documents are ordered by score descending, ties by document id descending
  (``trec_order``), which is what ``pytrec_eval`` reproduces too.

Blank lines and lines starting with ``#`` are skipped. A malformed line, a non-numeric or
non-finite score, a non-integer grade and a repeated (query, document) pair are ``DataError``s
naming file and line.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path

from ragjudge.errors import DataError
from ragjudge.schema import Qrels, Ranking, Run

from .rows import existing_file, iter_lines

BEIR_HEADER = ("query-id", "corpus-id", "score")


def trec_order(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """``(doc_id, score)`` pairs in trec_eval's order: score descending, then id descending."""
    return sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)


def _data_lines(path: Path) -> Iterable[tuple[int, list[str]]]:
    split_tabs = path.name.removesuffix(".gz").endswith(".tsv")
    for line_no, text in iter_lines(path):
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        cols = [c.strip() for c in text.split("\t")] if split_tabs else text.split()
        yield line_no, cols


def _int(value: str, *, what: str, path: Path, line: int) -> int:
    try:
        return int(value)
    except ValueError:
        raise DataError(f"{what} must be an integer, got {value!r}", path=path, line=line) from None


def read_trec_qrels(path: str | Path) -> Qrels:
    """Query id -> document id -> integer grade from a TREC (4 columns) or BEIR (3) qrels file."""
    p = existing_file(path)
    qrels: Qrels = {}
    first_line: dict[tuple[str, str], int] = {}
    width: int | None = None
    for line_no, cols in _data_lines(p):
        if width is None and tuple(c.lower() for c in cols) == BEIR_HEADER:
            width = 3
            continue
        if width is None:
            if len(cols) not in (3, 4):
                raise DataError(
                    f"expected 'qid iter docid rel' (4 columns) or 'qid docid rel' (3), got "
                    f"{len(cols)} columns",
                    path=p,
                    line=line_no,
                )
            width = len(cols)
        if len(cols) != width:
            raise DataError(f"expected {width} columns, got {len(cols)}", path=p, line=line_no)
        qid, doc_id, grade = (cols[0], cols[2], cols[3]) if width == 4 else tuple(cols)
        rel = _int(grade, what="relevance", path=p, line=line_no)
        key = (qid, doc_id)
        if key in first_line:
            raise DataError(
                f"query {qid!r} judges document {doc_id!r} twice (first at line {first_line[key]})",
                path=p,
                line=line_no,
            )
        first_line[key] = line_no
        qrels.setdefault(qid, {})[doc_id] = rel
    return qrels


def read_trec_run(path: str | Path) -> Run:
    """Query id -> document id -> score from a 6-column TREC run file."""
    p = existing_file(path)
    run: Run = {}
    first_line: dict[tuple[str, str], int] = {}
    for line_no, cols in _data_lines(p):
        if len(cols) != 6:
            raise DataError(
                f"expected 6 columns 'qid Q0 docid rank score tag', got {len(cols)}",
                path=p,
                line=line_no,
            )
        qid, _, doc_id, rank, score_text, _ = cols
        _int(rank, what="rank", path=p, line=line_no)
        try:
            score = float(score_text)
        except ValueError:
            raise DataError(
                f"score must be a number, got {score_text!r}", path=p, line=line_no
            ) from None
        if not math.isfinite(score):
            raise DataError(f"score must be finite, got {score_text!r}", path=p, line=line_no)
        key = (qid, doc_id)
        if key in first_line:
            raise DataError(
                f"query {qid!r} lists document {doc_id!r} twice (first at line {first_line[key]})",
                path=p,
                line=line_no,
            )
        first_line[key] = line_no
        run.setdefault(qid, {})[doc_id] = score
    return run


def _check_token(value: str, what: str, path: Path) -> str:
    if not value or any(c.isspace() for c in value):
        raise DataError(
            f"{what} {value!r} is empty or contains whitespace; TREC files cannot hold it",
            path=path,
        )
    return value


def write_trec_qrels(qrels: Qrels, path: str | Path) -> None:
    """Write ``qid 0 docid rel`` lines (queries and documents in the mapping's order)."""
    p = Path(path)
    lines = [
        f"{_check_token(q, 'query id', p)} 0 {_check_token(d, 'document id', p)} {int(g)}\n"
        for q, docs in qrels.items()
        for d, g in docs.items()
    ]
    p.write_text("".join(lines), encoding="utf-8")


def write_trec_run(
    run_or_rankings: Run | Mapping[str, Ranking] | Iterable[Ranking],
    path: str | Path,
    tag: str = "ragjudge",
) -> None:
    """Write a 6-column TREC run.

    A ``Run`` is written in ``trec_order``. Rankings are written in their own order with ranks
    1..n and their scores as given; if their scores tie or do not decrease, trec_eval (and
    ``read_trec_run`` + ``evaluate_run``) will reorder them by score, so evaluate rankings whose
    order matters with ``evaluate_rankings`` instead.
    """
    p = Path(path)
    _check_token(tag, "run tag", p)
    if isinstance(run_or_rankings, Mapping):
        items = list(run_or_rankings.items())
        rows: list[tuple[str, list[tuple[str, float]]]] = []
        for qid, value in items:
            if isinstance(value, Ranking):
                rows.append((qid, [(d.doc_id, d.score) for d in value.docs]))
            else:
                rows.append((qid, trec_order(value)))
    else:
        rows = [(r.query_id, [(d.doc_id, d.score) for d in r.docs]) for r in run_or_rankings]
    out: list[str] = []
    for qid, docs in rows:
        _check_token(qid, "query id", p)
        for rank, (doc_id, score) in enumerate(docs, start=1):
            out.append(
                f"{qid} Q0 {_check_token(doc_id, 'document id', p)} {rank} {float(score)!r} {tag}\n"
            )
    p.write_text("".join(out), encoding="utf-8")
