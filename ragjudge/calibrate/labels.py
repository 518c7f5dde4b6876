"""Human labels in: CSV or JSONL rows of ``item_id, dimension, label[, annotator][, scale]``.

- ``item_id``: the judged item, ``f"{case_id}@k{k}"`` in a run (``case_id`` + ``k`` columns are
  accepted instead); a pairwise label names two items as ``"<item a>|<item b>"``.
- ``dimension``: the judge name (``faithfulness``, ``answer_relevancy``, ...).
- ``label``: binary (``1/0``, ``yes/no``, ``true/false``), ordinal ``1..5``, continuous in
  ``[0, 1]``, or a pairwise preference ``a`` / ``b`` / ``tie``. A blank label is a row not
  labelled yet (a spot-check sheet being filled in) and is skipped, and counted.
- ``scale`` (optional): ``binary | ordinal | continuous | pairwise``; without it the scale of
  each dimension is inferred from all its labels (pairwise if any a/b/tie; binary if all are
  0/1/yes/no; ordinal if all are integers and one is in 2..5; else continuous).
- ``annotator`` (optional): several annotators may label the same item.
- ``answer`` (optional, as in a filled ``ragjudge spot-check`` sheet): the answer text that was
  labelled; joined to a run, it must equal the run's answer for the item (whitespace aside).

Errors (``DataError`` with file and line): a missing column, a label that is out of the scale of
its dimension, and a duplicate (same item, dimension and annotator).

Values are stored in native units: binary 0/1, ordinal 1..5, continuous [0, 1], pairwise
+1 (a) / -1 (b) / 0 (tie). ``normalise`` maps them to [0, 1]; ``is_yes`` is the human decision
(binary 1, ordinal >= 4, continuous >= 0.5).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, cast, get_args

from pydantic import BaseModel, ConfigDict

from ragjudge.errors import DataError
from ragjudge.io.rows import label_rows
from ragjudge.store.base import StoredLabel

Scale = Literal["binary", "ordinal", "continuous", "pairwise"]
SCALES: tuple[str, ...] = get_args(Scale)

_BINARY = {"1": 1.0, "0": 0.0, "yes": 1.0, "no": 0.0, "true": 1.0, "false": 0.0, "y": 1.0, "n": 0.0}
_PAIRWISE = {"a": 1.0, "b": -1.0, "tie": 0.0}
ORDINAL_MIN, ORDINAL_MAX = 1, 5
PAIR_SEPARATOR = "|"


class HumanLabel(BaseModel):
    """One human judgement, with where it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    item_id: str
    dimension: str
    value: float
    raw: str
    annotator: str | None = None
    answer: str | None = None
    """The answer text the annotator saw, when the file has an ``answer`` column (a filled
    spot-check sheet): the join then checks it is the run's answer for that item."""
    path: str
    line: int

    @property
    def pair(self) -> tuple[str, str] | None:
        """The two item ids of a pairwise label (``"a|b"``), else None."""
        if PAIR_SEPARATOR not in self.item_id:
            return None
        first, second = self.item_id.split(PAIR_SEPARATOR, 1)
        return first.strip(), second.strip()


class LabelSet(BaseModel):
    """Every label of one file, with each dimension's scale."""

    model_config = ConfigDict(extra="forbid")

    path: str
    labels: list[HumanLabel]
    scales: dict[str, Scale]
    skipped_blank: int = 0

    def dimensions(self) -> list[str]:
        return sorted(self.scales)


def normalise(value: float, scale: Scale) -> float:
    """Native label value -> [0, 1] (pairwise: a = 1, tie = 0.5, b = 0)."""
    if scale == "ordinal":
        return (value - ORDINAL_MIN) / (ORDINAL_MAX - ORDINAL_MIN)
    if scale == "pairwise":
        return (value + 1.0) / 2.0
    return value


def is_yes(value: float, scale: Scale) -> bool:
    """The human decision behind a label: binary 1, ordinal >= 4, continuous >= 0.5."""
    if scale == "ordinal":
        return value >= 4
    if scale == "pairwise":
        raise ValueError("a pairwise preference has no yes/no decision")
    return value >= 0.5


def consensus(values: Sequence[float], scale: Scale | None = None) -> float:
    """One value for an item labelled by several annotators.

    The most frequent label; a tie goes to the tied value closest to the mean, then to the
    lower one (so a 1-1 binary split is "no"). For pairwise labels a tie between ``a`` and
    ``b`` is ``tie``. Continuous labels that all differ give the one closest to the mean.
    """
    counts: dict[float, int] = defaultdict(int)
    for v in values:
        counts[v] += 1
    top = max(counts.values())
    tied = sorted(v for v, c in counts.items() if c == top)
    if scale == "pairwise" and 1.0 in tied and -1.0 in tied:
        return 0.0
    mean = sum(values) / len(values)
    return min(tied, key=lambda v: (abs(v - mean), v))


# ----------------------------------------------------------------------------- reading


def _text(row: dict[str, Any], key: str) -> str:
    value = row.get(key)
    return "" if value is None else str(value).strip()


def _item_id(row: dict[str, Any], path: Path, line: int) -> str:
    item = _text(row, "item_id") or _text(row, "id")
    if item:
        return item
    case, k = _text(row, "case_id"), _text(row, "k")
    if case and k:
        return f"{case}@k{k}"
    raise DataError("missing 'item_id' (or 'case_id' and 'k')", path=path, line=line)


def _token(raw: str) -> str:
    return raw.strip().lower()


def _number(raw: str) -> float | None:
    try:
        return float(raw)
    except ValueError:
        return None


def infer_scale(raws: Sequence[str]) -> Scale:
    """The scale of a dimension from all its raw labels (see the module docstring)."""
    tokens = [_token(r) for r in raws]
    if any(t in _PAIRWISE for t in tokens):
        return "pairwise"
    if all(t in _BINARY for t in tokens) or all(_number(t) in (0.0, 1.0) for t in tokens):
        return "binary"
    nums = [_number(t) for t in tokens]
    if all(n is not None and float(n).is_integer() for n in nums) and any(
        n is not None and 2 <= n <= ORDINAL_MAX for n in nums
    ):
        return "ordinal"
    return "continuous"


def parse_label(raw: str, scale: Scale) -> float | None:
    """Native value of ``raw`` on ``scale``; None when it is out of that scale."""
    token = _token(raw)
    if scale == "pairwise":
        return _PAIRWISE.get(token)
    if scale == "binary":
        if token in _BINARY:
            return _BINARY[token]
        num = _number(token)
        return num if num in (0.0, 1.0) else None
    num = _number(token)
    if num is None or num != num:  # NaN
        return None
    if scale == "ordinal":
        ok = num.is_integer() and ORDINAL_MIN <= num <= ORDINAL_MAX
        return num if ok else None
    return num if 0.0 <= num <= 1.0 else None


def _odd_label(rows: Sequence[tuple[int, str]]) -> tuple[int, str] | None:
    """(line, message) of the first label of one dimension that is on no scale at all
    ("maybe"), else of the first that is off the scale most of its labels are on (0.5 among
    1..5; ties go to the scales in inference order); None when no scale holds a majority."""
    for line, raw in rows:
        token = _token(raw)
        if token not in _BINARY and token not in _PAIRWISE and _number(token) is None:
            return line, f"label {raw!r} is on no scale (1/0, yes/no, 1..5, [0, 1], a/b/tie)"
    fits = {s: [parse_label(raw, cast(Scale, s)) is not None for _, raw in rows] for s in SCALES}
    best = max(SCALES, key=lambda s: (sum(fits[s]), -SCALES.index(s)))
    if 2 * sum(fits[best]) <= len(rows):
        return None
    line, raw = next(r for r, ok in zip(rows, fits[best], strict=True) if not ok)
    n = sum(fits[best])
    return line, f"label {raw!r} is off the {_SCALE_TEXT[best]} scale the other {n} labels are on"


_SCALE_TEXT = {
    "binary": "binary (1/0, yes/no, true/false)",
    "ordinal": "ordinal 1..5 (integers)",
    "continuous": "continuous [0, 1]",
    "pairwise": "pairwise (a, b, tie)",
}


def listed_items(path: str | Path) -> set[str]:
    """Every item id of a label file, labelled or not: the items a sheet hands out (one not
    yet filled in still holds them)."""
    p = Path(path)
    return {_item_id(row, p, line) for line, row in label_rows(p)}


def load_labels(path: str | Path, scales: dict[str, Scale] | None = None) -> LabelSet:
    """Read and validate a label file; ``scales`` fixes the scale of chosen dimensions."""
    p = Path(path)
    fixed: dict[str, Scale] = dict(scales or {})
    raw_rows: list[tuple[int, str, str, str, str | None, str | None]] = []
    skipped = 0
    for line, row in label_rows(p):
        raw = _text(row, "label")
        if "label" not in row:
            raise DataError("missing column 'label'", path=p, line=line)
        dim = _text(row, "dimension")
        if not dim:
            raise DataError("missing 'dimension' (the judge name)", path=p, line=line)
        item = _item_id(row, p, line)
        if not raw:
            skipped += 1
            continue
        scale_text = _token(_text(row, "scale"))
        if scale_text:
            if scale_text not in SCALES:
                raise DataError(
                    f"unknown scale {scale_text!r}; use one of {', '.join(SCALES)}",
                    path=p,
                    line=line,
                )
            if dim in fixed and fixed[dim] != scale_text:
                raise DataError(
                    f"dimension {dim!r} has scale {fixed[dim]!r} elsewhere, {scale_text!r} here",
                    path=p,
                    line=line,
                )
            fixed[dim] = scale_text  # type: ignore[assignment]
        answer = row.get("answer")
        raw_rows.append(
            (
                line,
                item,
                dim,
                raw,
                _text(row, "annotator") or None,
                str(answer) if answer else None,
            )
        )

    by_dim: dict[str, list[str]] = defaultdict(list)
    for _, _, dim, raw, _, _ in raw_rows:
        by_dim[dim].append(raw)
    resolved: dict[str, Scale] = {
        dim: fixed.get(dim) or infer_scale(raws) for dim, raws in by_dim.items()
    }

    labels: list[HumanLabel] = []
    seen: dict[tuple[str, str, str | None], int] = {}
    for line, item, dim, raw, annotator, answer in raw_rows:
        scale = resolved[dim]
        value = parse_label(raw, scale)
        if value is None and dim not in fixed:
            # an inferred scale: blame the label that kept the others off their scale
            odd = _odd_label([(ln, r) for ln, _, d, r, _, _ in raw_rows if d == dim])
            if odd is not None:
                raise DataError(odd[1], path=p, line=odd[0])
        if value is None:
            how = "set" if dim in fixed else "inferred"
            raise DataError(
                f"label {raw!r} is out of the {_SCALE_TEXT[scale]} scale {how} for dimension "
                f"{dim!r} (a 'scale' column chooses the scale)",
                path=p,
                line=line,
            )
        if scale == "pairwise" and PAIR_SEPARATOR not in item:
            raise DataError(
                f"pairwise label for {item!r}: name both items as 'item_a{PAIR_SEPARATOR}item_b'",
                path=p,
                line=line,
            )
        key = (item, dim, annotator)
        if key in seen:
            who = f"annotator {annotator!r}" if annotator else "no annotator"
            raise DataError(
                f"duplicate label for item {item!r}, dimension {dim!r}, {who} "
                f"(first on line {seen[key]})",
                path=p,
                line=line,
            )
        seen[key] = line
        labels.append(
            HumanLabel(
                item_id=item,
                dimension=dim,
                value=value,
                raw=raw,
                annotator=annotator,
                answer=answer,
                path=str(p),
                line=line,
            )
        )
    return LabelSet(path=str(p), labels=labels, scales=resolved, skipped_blank=skipped)


def stored_label_set(labels: Sequence[StoredLabel], source: str) -> LabelSet:
    """The stored labels as the ``LabelSet`` ``agree`` analyses (each dimension's scale
    inferred from its raw values, as for a CSV)."""
    human = [
        HumanLabel(
            item_id=lab.item_id,
            dimension=lab.judge,
            value=lab.value,
            raw=lab.raw,
            annotator=lab.labeler,
            path=source,
            line=i + 1,
        )
        for i, lab in enumerate(labels)
    ]
    dims = sorted({h.dimension for h in human})
    scales = {d: infer_scale([h.raw for h in human if h.dimension == d]) for d in dims}
    return LabelSet(path=source, labels=human, scales=scales)
