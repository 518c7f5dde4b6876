"""Limits: one precedence everywhere (flag or argument > ``RAGJUDGE_*`` environment >
default); an unset ``--concurrency`` / ``concurrency=`` never overrides
``RAGJUDGE_MAX_CONCURRENCY``."""

from __future__ import annotations

import pytest

from ragjudge.api.evaluate import evaluate
from ragjudge.judges.registry import build_judges
from ragjudge.testing.server import FakeLLMServer


def _rows(tag: str, n: int = 8) -> list[dict[str, object]]:
    return [
        {
            "id": f"{tag}{i}",
            "question": f"What is {tag} item {i}?",
            "answer": f"Item {i} of {tag} is a lamp.",
            "contexts": [f"Item {i} of {tag} is a lamp."],
        }
        for i in range(n)
    ]


def test_unset_concurrency_never_overrides_the_environment(
    llm_env: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm_env.latency = 0.15
    monkeypatch.setenv("RAGJUDGE_MAX_CONCURRENCY", "2")
    (judge,) = build_judges(["answer_relevancy"], "llm")
    assert judge.client.settings.max_concurrency == 2  # type: ignore[attr-defined]
    evaluate(_rows("a"), ["answer_relevancy"], backend="llm")
    assert llm_env.stats()["max_in_flight"] == 2
    llm_env.reset()
    evaluate(_rows("b"), ["answer_relevancy"], backend="llm", concurrency=4)
    assert llm_env.stats()["max_in_flight"] == 4
