"""The cost ledger: one entry per logical call and one per HTTP attempt, with tags.

Tags are what the caller passes (``run``, ``judge``, ``k``, ``item`` ...). Cost of an entry is
``prompt_tokens * input_price + completion_tokens * output_price`` from a ``PriceTable``
(USD per million tokens); cache hits cost nothing. ``on_entry`` callbacks let a run store
persist entries as they are made.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragjudge.errors import ConfigError, DataError, first_problem
from ragjudge.schema import TokenUsage

EntryKind = Literal["call", "attempt", "sent"]


class Price(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    input: float = Field(0.0, ge=0.0)
    """USD per million prompt tokens."""
    output: float = Field(0.0, ge=0.0)
    """USD per million completion tokens."""


DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o-mini": Price(input=0.15, output=0.60),
    "gpt-4o": Price(input=2.50, output=10.00),
    "gpt-4.1": Price(input=2.00, output=8.00),
    "gpt-4.1-mini": Price(input=0.40, output=1.60),
    "gpt-4.1-nano": Price(input=0.10, output=0.40),
    "o4-mini": Price(input=1.10, output=4.40),
}
"""List prices (USD per million tokens) of common OpenAI models; local models cost 0."""


class PriceTable(BaseModel):
    """Model -> price. A model is matched exactly, then by the longest known prefix
    (``gpt-4o-mini-2024-07-18`` -> ``gpt-4o-mini``); unknown models cost 0."""

    model_config = ConfigDict(frozen=True)

    prices: dict[str, Price] = Field(default_factory=lambda: dict(DEFAULT_PRICES))

    @classmethod
    def from_file(cls, path: str | Path) -> PriceTable:
        """A JSON or YAML mapping ``{model: {input: usd_per_m, output: usd_per_m}}``, merged
        over the defaults; YAML is read as every config file is (``io.yamlfile``: a key given
        twice is an error at its line)."""
        p = Path(path)
        try:
            if p.suffix in (".yaml", ".yml"):
                from ragjudge.io.yamlfile import load_yaml

                raw, _ = load_yaml(p, "price table")
            else:
                raw = json.loads(p.read_text(encoding="utf-8"))
            if not isinstance(raw, dict):
                raise ConfigError(
                    f"price table {p}: expected a mapping of model to "
                    "{input: usd_per_million, output: usd_per_million}"
                )
            extra = {}
            for model, value in raw.items():
                try:
                    extra[str(model)] = Price.model_validate(value)
                except ValidationError as exc:
                    why = first_problem(exc)
                    raise ConfigError(f"price table {p}: {model}: {why}") from None
        except (OSError, ValueError, TypeError) as exc:
            raise ConfigError(f"price table {p}: {exc}") from None
        return cls(prices={**DEFAULT_PRICES, **extra})

    def price(self, model: str) -> Price | None:
        if model in self.prices:
            return self.prices[model]
        best = max((m for m in self.prices if model.startswith(m)), key=len, default=None)
        return self.prices[best] if best else None

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> float:
        p = self.price(model)
        if p is None:
            return 0.0
        return (prompt_tokens * p.input + completion_tokens * p.output) / 1e6


class LedgerEntry(BaseModel):
    """One logical call (``kind="call"``), one HTTP attempt when its answer (or failure) came
    (``kind="attempt"``), or one HTTP attempt as it is sent (``kind="sent"``, recorded before
    the request leaves: a run killed while requests were in flight still has them)."""

    model_config = ConfigDict(frozen=True)

    kind: EntryKind
    call_id: str
    tags: dict[str, str] = Field(default_factory=dict)
    prompt: str = ""
    """``name@version`` of the prompt template."""
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False
    cached: bool = False
    attempts: int = 0
    """HTTP attempts (call entries: all of the call's attempts, repair included)."""
    repair: bool = False
    """Attempt entries: part of the repair call. Call entries: a repair call was made."""
    cost_usd: float = 0.0
    latency_s: float = 0.0
    error_kind: str | None = None
    status: int | None = None
    """HTTP status of an attempt (None for connection failures and timeouts)."""
    mode: str | None = None
    """Call entries of structured calls: the structured-output mode used (``auto``'s choice,
    ``ragjudge.llm.modes``), kept with the run's ledger."""


_SUMMED = ("prompt_tokens", "completion_tokens", "cost_usd")


@runtime_checkable
class DurableHook(Protocol):
    """A ledger hook that keeps entries elsewhere (a run store) and can be waited for:
    ``settle()`` returns once every entry it was given is kept. The client settles the ledger
    after a request's ``sent`` entry and before sending it, so a run killed at any point has
    every request the endpoint received in its stored ledger."""

    def __call__(self, entry: LedgerEntry) -> None: ...

    async def settle(self) -> None: ...


class Ledger:
    """Thread-safe, in-memory list of entries with grouping; ``on_entry`` hooks see each one."""

    def __init__(
        self,
        prices: PriceTable | None = None,
        *,
        on_entry: Callable[[LedgerEntry], None] | None = None,
    ) -> None:
        self.prices = prices or PriceTable()
        self._entries: list[LedgerEntry] = []
        self._lock = threading.Lock()
        self._hooks: list[Callable[[LedgerEntry], None]] = []
        self._durable: list[DurableHook] = []
        """The hooks ``settle`` waits for, sorted out once when subscribed: a Protocol check
        costs ~18 us, and ``settle`` runs before every request."""
        if on_entry is not None:
            self.subscribe(on_entry)

    def subscribe(self, hook: Callable[[LedgerEntry], None]) -> None:
        """Call ``hook(entry)`` for every later entry (and wait for it in ``settle`` when it is
        a ``DurableHook``)."""
        self._hooks.append(hook)
        if isinstance(hook, DurableHook):
            self._durable.append(hook)

    def unsubscribe(self, hook: Callable[[LedgerEntry], None]) -> None:
        """Stop calling ``hook`` (a hook not subscribed is ignored)."""
        if hook in self._hooks:
            self._hooks.remove(hook)
        if hook in self._durable:
            self._durable.remove(hook)

    async def settle(self) -> None:
        """Return once every ``DurableHook`` has kept the entries it was given."""
        for hook in list(self._durable):
            await hook.settle()

    def record(self, entry: LedgerEntry) -> None:
        with self._lock:
            self._entries.append(entry)
        for hook in self._hooks:
            hook(entry)

    @property
    def entries(self) -> list[LedgerEntry]:
        with self._lock:
            return list(self._entries)

    def calls(self) -> list[LedgerEntry]:
        return [e for e in self.entries if e.kind == "call"]

    def attempts(self) -> list[LedgerEntry]:
        return [e for e in self.entries if e.kind == "attempt"]

    def total(self, **tags: Any) -> TokenUsage:
        """Usage over the call entries whose tags include ``tags``: ``calls`` counts model
        calls made (a repair call counts as one more), ``cached_calls`` cache hits."""
        want = {k: str(v) for k, v in tags.items()}
        out = TokenUsage()
        for e in self.calls():
            if any(e.tags.get(k) != v for k, v in want.items()):
                continue
            out = out + TokenUsage(
                prompt_tokens=e.prompt_tokens,
                completion_tokens=e.completion_tokens,
                calls=0 if e.cached else 1 + int(e.repair),
                cached_calls=int(e.cached),
                cost_usd=e.cost_usd,
                estimated=e.estimated,
            )
        return out

    def summary(self, by: Iterable[str] = ("judge",)) -> list[dict[str, Any]]:
        """One row per distinct value of the ``by`` tags (missing tags read as ``""``):
        ``prompt`` and ``model`` group by the entry's own fields. Per row:
        logical calls, cache hits, repairs, HTTP attempts, failed attempts, unanswered
        attempts (sent, no answer recorded: in flight when the process was killed; 0 for
        ledgers without ``sent`` entries), errors (calls that ended in an error), tokens and
        cost; sorted by the key."""
        keys = tuple(by)
        rows: dict[tuple[str, ...], dict[str, Any]] = {}
        sent: dict[tuple[str, ...], int] = {}
        for e in self.entries:
            key = tuple(_field(e, k) for k in keys)
            row = rows.get(key)
            if row is None:
                row = dict(zip(keys, key, strict=True))
                row.update(
                    calls=0,
                    cached=0,
                    repairs=0,
                    attempts=0,
                    failed_attempts=0,
                    unanswered=0,
                    errors=0,
                    prompt_tokens=0,
                    completion_tokens=0,
                    cost_usd=0.0,
                    latency_s=0.0,
                )
                rows[key] = row
            if e.kind == "sent":
                sent[key] = sent.get(key, 0) + 1
                continue
            if e.kind == "attempt":
                row["attempts"] += 1
                row["failed_attempts"] += int(e.error_kind is not None)
                continue
            row["calls"] += 1
            row["cached"] += int(e.cached)
            row["repairs"] += int(e.repair)
            row["errors"] += int(e.error_kind is not None)
            row["latency_s"] += e.latency_s
            for f in _SUMMED:
                row[f] += getattr(e, f)
        for key, n in sent.items():
            rows[key]["unanswered"] = max(0, n - rows[key]["attempts"])
        return [rows[k] for k in sorted(rows)]

    def to_jsonl(self, path: str | Path) -> None:
        """Write every entry as one JSON line."""
        with Path(path).open("w", encoding="utf-8") as fh:
            for e in self.entries:
                fh.write(e.model_dump_json() + "\n")

    @staticmethod
    def read_jsonl(path: str | Path) -> list[LedgerEntry]:
        """The entries of a ``to_jsonl`` file (blank lines skipped); an unreadable file or a
        line that is not an entry is a ``DataError`` naming the file, the line and the field."""
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise DataError(f"cannot read the ledger: {exc}", path=path) from None
        entries = []
        for i, text in enumerate(lines, start=1):
            if text.strip():
                try:
                    entries.append(LedgerEntry.model_validate_json(text))
                except ValidationError as exc:
                    what = first_problem(exc)
                    raise DataError(f"not a ledger entry ({what})", path=path, line=i) from None
        return entries


def _field(entry: LedgerEntry, key: str) -> str:
    if key in entry.tags:
        return entry.tags[key]
    if key in ("prompt", "model"):
        return str(getattr(entry, key))
    return ""


def str_tags(tags: Mapping[str, Any] | None) -> dict[str, str]:
    """Tags as strings (``k=3`` -> ``"3"``)."""
    return {str(k): str(v) for k, v in (tags or {}).items()}
