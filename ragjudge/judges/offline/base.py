"""What the five offline judges share: parameters, the embedding cache, input checks, results.

Input checks (the same as the LLM judges', so both backends report the same statuses):
a reference-requiring judge without a reference -> ``skipped_missing_reference``; an empty
answer where the answer is judged -> ``invalid_input``; no non-blank context where contexts are
judged -> ``invalid_input``.

``version`` = ``offline-<ALGORITHM_VERSION>+<params version>.<params digest>``: a change of the
code or of the parameters (even a refit saved under the same version name) changes the version,
hence cache keys and run manifests.
"""

from __future__ import annotations

from pathlib import Path

from ragjudge.judges.offline.embed import EmbeddingCache, shared_cache
from ragjudge.judges.offline.features import TextProfile, profile
from ragjudge.judges.offline.params import Params, load_params
from ragjudge.schema import Evidence, JudgeInput, JudgeResult, JudgeStatus

ALGORITHM_VERSION = "2"


class OfflineJudge:
    """Base of the offline judges. Subclasses set ``name`` and the ``needs_*`` flags and
    implement ``_judge``."""

    name: str = ""
    backend = "offline"
    requires_reference: bool = False
    needs_answer: bool = True
    needs_contexts: bool = True

    def __init__(
        self,
        *,
        params: Params | str | Path | None = None,
        cache: EmbeddingCache | None = None,
    ) -> None:
        self.params = params if isinstance(params, Params) else load_params(params)
        self.cache = cache or shared_cache()
        self.version = f"offline-{ALGORITHM_VERSION}+{self.params.version}.{self.params.digest}"

    def result(
        self,
        item: JudgeInput,
        status: JudgeStatus,
        *,
        score: float | None = None,
        evidence: Evidence | None = None,
        error: str | None = None,
    ) -> JudgeResult:
        if score is not None:
            score = min(1.0, max(0.0, float(score)))
        return JudgeResult(
            judge=self.name,
            judge_version=self.version,
            backend="offline",
            item_id=item.id,
            score=score,
            status=status,
            evidence=evidence or Evidence(),
            error=error,
        )

    def precheck(self, item: JudgeInput) -> JudgeResult | None:
        """A typed result for an item this judge cannot judge, else None."""
        if self.requires_reference and not (item.reference or "").strip():
            return self.result(
                item,
                JudgeStatus.skipped_missing_reference,
                error=f"{self.name} needs a reference answer",
            )
        if self.needs_answer and not item.answer.strip():
            return self.result(item, JudgeStatus.invalid_input, error="empty answer")
        if self.needs_contexts and not any(c.strip() for c in item.contexts):
            return self.result(item, JudgeStatus.invalid_input, error="no contexts")
        return None

    def chunk_profiles(self, item: JudgeInput) -> list[TextProfile]:
        return [profile(c) for c in item.contexts]

    async def judge(self, item: JudgeInput) -> JudgeResult:
        skip = self.precheck(item)
        if skip is not None:
            return skip
        return self._judge(item)

    def _judge(self, item: JudgeInput) -> JudgeResult:
        raise NotImplementedError
