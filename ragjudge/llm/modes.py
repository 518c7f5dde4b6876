"""Which structured-output mode an endpoint does, learned by ``structured_mode: auto`` and
kept per (base URL, model) in ``RAGJUDGE_HOME/llm_modes.json`` so that a later run (or
another process of the same run) starts with the mode that worked instead of finding out again.

A mode is dropped, with the reason, on any sign that the server does not do it: a 4xx to a
request asking for it, a 5xx that repeated for it while a less constrained mode then worked,
or ``PARSE_STREAK`` replies in a row that failed to parse (after their repair call). The file
is one JSON object ``{"<base url>|<model>": {"mode": ..., "dropped": {mode: reason}}}``; the
base URL is the displayed form (no credentials). A file that cannot be read is ignored (the
modes are learned again) and one that cannot be written leaves the memory in this process.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from ragjudge.llm.settings import redact
from ragjudge.llm.structured import MODES

PARSE_STREAK = 3
"""Replies in a row failing to parse (schema or JSON, after the repair call) that drop a mode."""
FILE = "llm_modes.json"


class ModeRecord(BaseModel):
    """What is known about one (endpoint, model)."""

    mode: str = MODES[0]
    """The mode ``auto`` uses now."""
    dropped: dict[str, str] = Field(default_factory=dict)
    """mode -> why it was dropped (one line)."""


class ModeMemory:
    """The learned modes of every endpoint, read from and written to one file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._records = self._read()
        self._streaks: dict[str, int] = {}

    def _read(self) -> dict[str, ModeRecord]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            return {k: ModeRecord.model_validate(v) for k, v in dict(raw).items()}
        except (OSError, ValueError, TypeError, ValidationError):
            return {}

    def _write(self) -> None:
        data = {k: r.model_dump() for k, r in sorted(self._records.items())}
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
            tmp.replace(self.path)
        except OSError:
            tmp.unlink(missing_ok=True)

    def get(self, key: str) -> ModeRecord:
        with self._lock:
            return self._records.get(key) or ModeRecord()

    def drop(self, key: str, mode: str, why: str) -> str:
        """Stop using ``mode`` for ``key``; the mode used from now on (the next one in
        ``MODES`` not dropped; prompt-only is never dropped)."""
        with self._lock:
            rec = self._records.get(key) or ModeRecord()
            if mode == MODES[-1] or mode in rec.dropped:
                return rec.mode
            dropped = {**rec.dropped, mode: redact(why)[:300]}
            nxt = next(m for m in MODES if m not in dropped)
            self._records[key] = ModeRecord(mode=nxt, dropped=dropped)
            self._streaks.pop(key, None)
            self._write()
            return nxt

    def learn(self, key: str, refused: dict[str, str]) -> str:
        """Replace what is known of ``key`` by a probe of every mode (``llm check``): the
        modes in ``refused`` (mode -> why) dropped, every other one usable again; returns
        the mode used from now on."""
        with self._lock:
            dropped = {m: redact(why)[:300] for m, why in refused.items() if m != MODES[-1]}
            nxt = next(m for m in MODES if m not in dropped)
            self._records[key] = ModeRecord(mode=nxt, dropped=dropped)
            self._streaks = {k: v for k, v in self._streaks.items() if not k.startswith(f"{key}|")}
            self._write()
            return nxt

    def parsed(self, key: str, mode: str, ok: bool) -> bool:
        """Count a reply in ``mode``: True when it was the ``PARSE_STREAK``-th failure in a
        row (the caller drops the mode)."""
        with self._lock:
            n = 0 if ok else self._streaks.get(f"{key}|{mode}", 0) + 1
            self._streaks[f"{key}|{mode}"] = n
            return n >= PARSE_STREAK


_MEMORIES: dict[Path, ModeMemory] = {}
_BY_SETTING: dict[tuple[str | None, str], ModeMemory] = {}
_GUARD = threading.Lock()


def memory() -> ModeMemory:
    """The memory of the current ``RAGJUDGE_HOME`` (one per home per process). Looked up by
    the variable's value and the working directory before the home is resolved: structured
    calls ask on every call, and resolving creates folders."""
    from ragjudge.home import state_path

    setting = (os.environ.get("RAGJUDGE_HOME") or None, os.getcwd())
    mem = _BY_SETTING.get(setting)
    if mem is not None:
        return mem
    path = state_path(FILE)
    with _GUARD:
        mem = _MEMORIES.get(path)
        if mem is None:
            mem = _MEMORIES[path] = ModeMemory(path)
        _BY_SETTING[setting] = mem
        return mem
