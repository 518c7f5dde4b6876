"""Completeness (offline): which key points the answer covers; score = covered / key points.

- With a reference: the key points are the reference's claims (``segment.reference_points``);
  each is judged against the answer with ``support.support_matrix`` (the claim-support model by
  default), as faithfulness judges a claim against a chunk; words of the question count as
  given (an answer need not repeat the question's names).
- Without one: the key points are the question's aspects (``segment.question_aspects``), each
  judged with the fitted ``aspect`` model (embedding coverage, expected answer type present,
  aspect-term coverage).
The answer is read without its citation markers (``segment.without_citations``).

Credits: covered 1, partly covered 0.5 (the support partial band), else 0; the list is in
``Evidence.key_points``. A reference that says the question cannot be answered: an abstaining
answer scores 1, any other 0. An abstaining answer to an answerable question scores 0.
"""

from __future__ import annotations

from ragjudge.judges.offline.base import OfflineJudge
from ragjudge.judges.offline.features import aspect_features, aspect_texts, profile
from ragjudge.judges.offline.relevancy import abstains, unanswerable
from ragjudge.judges.offline.segment import (
    question_aspects,
    reference_points,
    without_citations,
)
from ragjudge.judges.offline.support import (
    VERDICT_CREDIT,
    claim_verdicts,
    support_matrix,
    support_matrix_texts,
    verdict,
)
from ragjudge.judges.registry import register_judge
from ragjudge.schema import ClaimVerdict, Evidence, JudgeInput, JudgeResult, JudgeStatus


@register_judge("completeness", "offline")
class OfflineCompletenessJudge(OfflineJudge):
    name = "completeness"
    needs_contexts = False

    def texts(self, item: JudgeInput) -> list[str] | None:
        if unanswerable(item.reference):
            return []
        reference = (item.reference or "").strip()
        if not reference:
            return aspect_texts(question_aspects(item.question), item.answer)
        answer = profile(without_citations(item.answer), as_units=True)
        return support_matrix_texts(reference_points(reference), [answer], self.params)

    def _judge(self, item: JudgeInput) -> JudgeResult:
        if unanswerable(item.reference):
            ok = abstains(item.answer)
            return self.result(
                item,
                JudgeStatus.ok,
                score=1.0 if ok else 0.0,
                evidence=Evidence(
                    explanation="the reference says the question cannot be answered",
                    features={"abstains": float(ok), "unanswerable": 1.0},
                ),
            )
        reference = (item.reference or "").strip()
        points = self._reference_points(item, reference) if reference else self._aspects(item)
        if not points:
            return self.result(
                item, JudgeStatus.no_claims, error="no key points in the reference or question"
            )
        if abstains(item.answer):
            points = [
                p.model_copy(update={"verdict": "unsupported", "supporting_chunks": []})
                for p in points
            ]
        score = sum(VERDICT_CREDIT[p.verdict] for p in points) / len(points)
        source = "reference" if reference else "question"
        covered = sum(p.verdict == "supported" for p in points)
        return self.result(
            item,
            JudgeStatus.ok,
            score=score,
            evidence=Evidence(
                key_points=points,
                explanation=f"{covered} of {len(points)} key points of the {source} covered",
                features={"from_reference": float(bool(reference)), "n_points": len(points)},
            ),
        )

    def _reference_points(self, item: JudgeInput, reference: str) -> list[ClaimVerdict]:
        points = reference_points(reference)
        answer = profile(without_citations(item.answer), as_units=True)
        sup = support_matrix(points, [answer], self.params, self.cache, question=item.question)
        # supporting_chunks index the answer here (0 = the answer): drop them.
        return [
            v.model_copy(update={"supporting_chunks": []})
            for v in claim_verdicts(points, sup.matrix)
        ]

    def _aspects(self, item: JudgeInput) -> list[ClaimVerdict]:
        aspects = question_aspects(item.question)
        feats = aspect_features(aspects, item.answer, item.question, self.cache)
        probs: list[float] = (
            self.params.models["aspect"].proba(feats).tolist() if len(aspects) else []
        )
        out: list[ClaimVerdict] = []
        for aspect, p in zip(aspects, probs, strict=True):
            v = verdict(float(p))
            out.append(
                ClaimVerdict(
                    claim=f"{aspect.text} (expects: {aspect.answer_type})",
                    verdict=v,
                    confidence=round(float(p) if v != "unsupported" else 1 - float(p), 4),
                )
            )
        return out
