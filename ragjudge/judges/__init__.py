"""Judges: one test item in, one ``JudgeResult`` (score or typed status, evidence, usage) out.

- ``create_judge(name, backend, **options)`` builds a registered judge (backends ``offline``,
  ``llm``, ``ragas``); ``register_judge(name, backend)`` adds your own.
- ``run_judges(judges, items)`` judges many items concurrently.
- ``derive_at_k`` gives context recall/precision at a smaller k from the evidence at k_max.
"""

from ragjudge.judges.prefix import derive_at_k
from ragjudge.judges.registry import (
    JUDGE_NAMES,
    available,
    create_judge,
    register_judge,
)
from ragjudge.judges.runner import run_judges

__all__ = [
    "JUDGE_NAMES",
    "available",
    "create_judge",
    "derive_at_k",
    "register_judge",
    "run_judges",
]
