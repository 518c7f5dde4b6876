"""Stored rows kept as the store holds them and parsed on first access: the one parser of a
stored row, and the judge results of a run as a mapping that reads scores and statuses from
their own columns and parses a result (evidence, usage) only when a caller asks for it.

Contract: ``parse_row`` turns one stored JSON value into its model or raises
``CorruptRowError`` on one line naming the store, the run, the table and the row's key.
``JudgeResults`` is a read-only ``Mapping`` ``(judge, k, case id) -> JudgeResult`` iterated in
``(judge, case id, k)`` order; ``score(key)`` / ``status(key)`` and the ``scores`` / ``statuses``
mappings answer from the columns without parsing, and ``usage(key)`` parses that one field; a
corrupt row is found when that row is parsed (``validate()`` parses every row: ``store check``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragjudge.errors import StateFileError, first_problem
from ragjudge.schema import JudgeResult, JudgeStatus, TokenUsage

M = TypeVar("M", bound=BaseModel)
Key = tuple[str, int, str]
"""(judge, k, case id)."""
_STATUS, _SCORE, _RAW = 3, 4, 5
"""Positions in a stored judge-result row."""


class _Usage(BaseModel):
    """The one field ``JudgeResults.usage`` reads of a stored result (the rest is skipped)."""

    model_config = ConfigDict(extra="ignore")
    usage: TokenUsage = Field(default_factory=TokenUsage)


class _Backend(BaseModel):
    """The one field ``JudgeResults.backend`` reads of a stored result (the rest is skipped)."""

    model_config = ConfigDict(extra="ignore")
    backend: str = "custom"


class CorruptRowError(StateFileError):
    """A stored row that does not parse as what its table holds."""


@dataclass(frozen=True)
class RowSource:
    """Where stored rows came from, for the corrupt-row message."""

    location: str
    run_id: str


def parse_row(model: type[M], raw: str, source: RowSource, table: str, key: str) -> M:
    """``raw`` (a stored JSON value) as ``model``; ``CorruptRowError`` on one line otherwise."""
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise corrupt(source, table, key, first_problem(exc)) from None


def corrupt(source: RowSource, table: str, key: str, problem: str) -> CorruptRowError:
    """The one-line error for the row ``key`` of ``table`` that does not hold what it should."""
    return CorruptRowError(
        f"{source.location}: run {source.run_id}: a corrupt row in table {table} ({key}): "
        f"{problem}; the run's other rows are intact"
    )


class JudgeResults(Mapping[Key, JudgeResult]):
    """A run's judge results (module docstring). ``rows`` maps each key to its stored row
    ``(judge, k, case id, status, score, result JSON)`` (the driver's row as fetched, no copy);
    ``parsed`` holds results already parsed (or given)."""

    def __init__(
        self,
        rows: Mapping[Key, Sequence[Any]],
        source: RowSource,
        *,
        parsed: dict[Key, JudgeResult] | None = None,
    ) -> None:
        self._rows = rows
        self._source = source
        self._parsed = parsed if parsed is not None else {}
        self._order: list[Key] | None = None

    @classmethod
    def of(cls, results: Mapping[Key, JudgeResult], run_id: str = "") -> JudgeResults:
        """Results already parsed (``RunView.from_rows``), kept in the order given."""
        parsed = dict(results)
        rows = {key: (*key, r.status.value, r.score, "") for key, r in parsed.items()}
        out = cls(rows, RowSource("", run_id), parsed=parsed)
        out._order = list(parsed)
        return out

    def __getitem__(self, key: Key) -> JudgeResult:
        got = self._parsed.get(key)
        if got is None:
            raw = self._rows[key][_RAW]
            got = parse_row(JudgeResult, raw, self._source, "judge_results", _name(key))
            self._parsed[key] = got
        return got

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[Key]:
        if self._order is None:
            self._order = sorted(self._rows, key=itemgetter(0, 2, 1))
        return iter(self._order)

    def score(self, key: Key) -> float | None:
        """The stored score of ``key`` (its column; nothing parsed)."""
        return self._rows[key][_SCORE]

    def usage(self, key: Key) -> TokenUsage:
        """The usage of ``key``'s result, parsing only that field of a result not yet parsed
        (a corrupt row is still found: the stored value must be a JSON object)."""
        got = self._parsed.get(key)
        if got is not None:
            return got.usage
        raw = self._rows[key][_RAW]
        return parse_row(_Usage, raw, self._source, "judge_results", _name(key)).usage

    def backend(self, key: Key) -> str:
        """The backend that decided ``key``'s result, parsing only that field of a result
        not yet parsed."""
        got = self._parsed.get(key)
        if got is not None:
            return got.backend
        raw = self._rows[key][_RAW]
        return parse_row(_Backend, raw, self._source, "judge_results", _name(key)).backend

    def status(self, key: Key) -> JudgeStatus:
        """The stored status of ``key`` (its column; nothing parsed)."""
        value = self._rows[key][_STATUS]
        try:
            return JudgeStatus(value)
        except ValueError:
            problem = f"status {value!r} is not a judge status"
            raise corrupt(self._source, "judge_results", _name(key), problem) from None

    @property
    def scores(self) -> dict[Key, float | None]:
        """Key -> score, from the score column, in this mapping's order."""
        return {key: self._rows[key][_SCORE] for key in self}

    @property
    def statuses(self) -> dict[Key, JudgeStatus]:
        """Key -> status, from the status column, in this mapping's order."""
        known = {s.value: s for s in JudgeStatus}
        return {key: known.get(self._rows[key][_STATUS]) or self.status(key) for key in self}

    def validate(self) -> None:
        """Parse every result (``CorruptRowError`` at the first that does not parse)."""
        for key in self._rows:
            self[key]


def _name(key: Key) -> str:
    """``judge case@kK``: a judge result's key in messages."""
    judge, k, case_id = key
    return f"{judge} {case_id}@k{k}"
