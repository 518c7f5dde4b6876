"""The whole human-vs-judge analysis of one run and one label file (what ``ragjudge agree``
prints): per dimension the agreement statistics, calibration (Platt and isotonic), the
prediction-powered estimate of the human mean over the run, and the bias probes.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ragjudge.text import tokens

from .agreement import DimensionAgreement, agree_dimension
from .bias import BiasProbe, length_bias, self_preference
from .calibration import CalibrationReport, calibrate
from .join import LabelledItem, join_labels
from .labels import LabelSet, is_yes, normalise
from .ppi import MeanEstimate, estimate_mean
from .resample import DEFAULT_RESAMPLES
from .source import RunData

SAMPLING_CAVEAT = (
    "PPI intervals assume the labelled items are a uniform random sample of the run; items "
    "picked by `ragjudge spot-check` (stratified by judge score) are not, so read them as "
    "indicative"
)

POINTWISE_POSITION = BiasProbe(
    probe="position",
    applicable=False,
    note="not applicable: the judges score each answer on its own, so the order of a pair "
    "cannot change their preference (use ragjudge.calibrate.bias.probe_position for a "
    "pairwise judge)",
)


class Estimation(BaseModel):
    """The human mean of one dimension over the whole run, estimated four ways."""

    model_config = ConfigDict(extra="forbid")

    dimension: str
    applicable: bool
    estimates: list[MeanEstimate] = Field(default_factory=list)
    note: str | None = None


class ScorePoint(BaseModel):
    """One scored, labelled item: judge score, human label on [0, 1], human yes/no."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    item_id: str
    score: float
    human: float
    yes: bool | None
    """None for pairwise preferences."""


class DimensionReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agreement: DimensionAgreement
    calibration: list[CalibrationReport] = Field(default_factory=list)
    calibration_note: str | None = None
    estimation: Estimation
    bias: list[BiasProbe] = Field(default_factory=list)
    points: list[ScorePoint] = Field(default_factory=list)


class AgreementReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str
    labels_path: str
    threshold: float
    n_resamples: int
    skipped_blank_labels: int
    dimensions: list[DimensionReport]
    notes: list[str] = Field(default_factory=list)


def _estimation(
    dim: str, items: list[LabelledItem], all_scores: dict[str, float | None]
) -> Estimation:
    if items[0].scale == "pairwise":
        return Estimation(
            dimension=dim, applicable=False, note="not applicable to pairwise preferences"
        )
    labelled = {it.item_id for it in items}
    scored = [it for it in items if it.judge_score is not None]
    f_unl = [s for item, s in all_scores.items() if item not in labelled and s is not None]
    if len(scored) < 2 or len(f_unl) < 2:
        return Estimation(
            dimension=dim,
            applicable=False,
            note=f"needs >= 2 labelled and >= 2 unlabelled scored items "
            f"(have {len(scored)} and {len(f_unl)})",
        )
    y = [normalise(it.human, it.scale) for it in scored]
    f_lab = [float(it.judge_score or 0.0) for it in scored]
    return Estimation(
        dimension=dim,
        applicable=True,
        estimates=estimate_mean(y, f_lab, f_unl),
        note=SAMPLING_CAVEAT,
    )


def analyze(
    labels: LabelSet,
    run: RunData,
    *,
    threshold: float = 0.5,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> AgreementReport:
    """Everything of the module docstring, one ``DimensionReport`` per labelled dimension."""
    joined = join_labels(
        labels, run.results, answers={item: a.text for item, a in run.answers.items()}
    )
    answer_tokens = {item: len(tokens(a.text)) for item, a in run.answers.items()}
    generators = run.generator_models()
    judge_model = run.judge_model()
    reports: list[DimensionReport] = []
    for dim in sorted(joined.items):
        items = joined.items[dim]
        agreement = agree_dimension(items, threshold=threshold, n_resamples=n_resamples, seed=seed)
        scored = [it for it in items if it.judge_score is not None]
        cal: list[CalibrationReport] = []
        cal_note = None
        if items[0].scale != "pairwise" and scored:
            s = np.array([it.judge_score for it in scored], float)
            yes = np.array([is_yes(it.human, it.scale) for it in scored])
            try:
                cal = [
                    calibrate(s, yes, method, n_resamples=n_resamples, seed=seed)
                    for method in ("platt", "isotonic")
                ]
            except ValueError as exc:
                cal_note = str(exc)
        bias: list[BiasProbe] = [POINTWISE_POSITION]
        if items[0].scale != "pairwise":
            bias = [
                length_bias(items, answer_tokens, n_resamples=n_resamples, seed=seed),
                self_preference(items, generators, judge_model, n_resamples=n_resamples, seed=seed),
            ]
        reports.append(
            DimensionReport(
                agreement=agreement,
                calibration=cal,
                calibration_note=cal_note,
                estimation=_estimation(dim, items, joined.all_scores.get(dim, {})),
                bias=bias,
                points=[
                    ScorePoint(
                        item_id=it.item_id,
                        score=float(it.judge_score or 0.0),
                        human=normalise(it.human, it.scale),
                        yes=None if it.scale == "pairwise" else is_yes(it.human, it.scale),
                    )
                    for it in scored
                ],
            )
        )
    notes = []
    if labels.skipped_blank:
        notes.append(f"{labels.skipped_blank} rows with a blank label were skipped")
    return AgreementReport(
        source=run.source,
        labels_path=labels.path,
        threshold=threshold,
        n_resamples=n_resamples,
        skipped_blank_labels=labels.skipped_blank,
        dimensions=reports,
        notes=notes,
    )
