"""What the five offline judges share: parameters, the embedding cache, input checks, results.

Input checks and results are the ones every backend shares (``ragjudge.judges.base``:
``precheck``, ``make_result``), so a judge called directly reports the same statuses as one
run through ``judge_one``.

``version`` =
``offline-<ALGORITHM_VERSION>[.<encoder>]+<params version>.<params digest>[.<model digest>]``
(``<encoder>``: what follows ``+`` in the sentence encoder's name,
``ragjudge.embedding.judge_encoder_name``: ``int8.<digest of the shipped ONNX file>`` by
default, ``bf16`` for bfloat16 autocast, nothing for plain fp32; the model digest when the
parameters use the claim-support model): a change of the code, of the encoder (its precision
or its file), of the parameters (even a refit saved under the same version name) or of the
model file changes the version, hence cache keys and run manifests.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path

from ragjudge.judges.base import make_result, precheck
from ragjudge.judges.offline.embed import EmbeddingCache, TextRecorder, shared_cache
from ragjudge.judges.offline.features import TextProfile, profile
from ragjudge.judges.offline.params import Params, load_params
from ragjudge.prompts import OFFLINE_MAX_CHARS, OFFLINE_MAX_TOTAL
from ragjudge.schema import Evidence, JudgeInput, JudgeResult, JudgeStatus

ALGORITHM_VERSION = "7"


class OfflineJudge:
    """Base of the offline judges. Subclasses set ``name`` and the ``needs_*`` flags and
    implement ``_judge``."""

    name: str = ""
    backend = "offline"
    requires_reference: bool = False
    needs_answer: bool = True
    needs_contexts: bool = True
    input_cap = (OFFLINE_MAX_CHARS, OFFLINE_MAX_TOTAL)
    """What it reads of an item (``protocols.CappedJudge``): bounded work on any input."""

    def __init__(
        self,
        *,
        params: Params | str | Path | None = None,
        cache: EmbeddingCache | None = None,
    ) -> None:
        self.params = params if isinstance(params, Params) else load_params(params)
        self.cache = cache or shared_cache()
        _, plus, variant = self.cache.encoder_name.partition("+")
        encoder = f".{variant}" if plus else ""
        self.version = (
            f"offline-{ALGORITHM_VERSION}{encoder}+{self.params.version}.{self.params.digest}"
        )
        if self.params.support_model is not None:
            from ragjudge.judges.offline.supportmodel import shared_model

            self.version += f".{shared_model(self.params.support_card).digest}"

    def result(
        self,
        item: JudgeInput,
        status: JudgeStatus,
        *,
        score: float | None = None,
        evidence: Evidence | None = None,
        error: str | None = None,
    ) -> JudgeResult:
        return make_result(self, item, status, score=score, evidence=evidence, error=error)

    def chunk_profiles(self, item: JudgeInput) -> list[TextProfile]:
        return [profile(c) for c in item.contexts]

    def texts(self, item: JudgeInput) -> list[str] | None:
        """The texts judging ``item`` will embed, listed without judging it, or None when only
        judging tells (then ``prepare`` makes a dry pass). A judge's list must be exactly what
        its ``_judge`` asks the cache for (tests compare the two on the demo and on edge
        cases); the base lists nothing."""
        return None

    def prepare(self, items: Sequence[JudgeInput]) -> None:
        """Encode, in one batch, every text judging ``items`` will embed (``BatchedJudge``).

        The texts of an item are its ``texts(item)``; when that is None, a dry pass of
        ``_judge`` on a copy of this judge whose cache records texts instead of encoding them
        (``TextRecorder``) lists them. The cache then encodes the ones it lacks in one call.
        The texts a judge asks for do not depend on the vectors' values, so the real pass finds
        them all cached (one it did not would be encoded when asked for) and returns the same
        results. An item that cannot be listed or dry-judged is skipped: the real pass reports
        its error. With the claim-support model, the dry pass also fills that model's pair
        cache (``texts`` is None there)."""
        dry = copy.copy(self)
        recorder = TextRecorder()
        dry.cache = EmbeddingCache(recorder)
        for item in items:
            if precheck(self, item) is None:
                try:
                    listed = self.texts(item)
                    if listed is None:
                        dry._judge(item)
                    else:
                        recorder.texts.extend(listed)
                except Exception:
                    continue  # judged for real next, where the error is reported
        self.cache.warm(recorder.texts)

    async def judge(self, item: JudgeInput) -> JudgeResult:
        skip = precheck(self, item)
        if skip is not None:
            return skip
        return self._judge(item)

    def _judge(self, item: JudgeInput) -> JudgeResult:
        raise NotImplementedError
