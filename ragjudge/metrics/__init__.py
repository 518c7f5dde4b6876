"""Retrieval metrics, exact to trec_eval where trec_eval has them.

``evaluate_run`` / ``evaluate_rankings`` compute every metric for every query at once
(vectorised); the per-metric functions compute one query's value and document each formula.
See docs/data.md for the definitions and conventions.
"""

from .average_precision import average_precision
from .doc_level import rankings_to_document_level, to_document_level
from .engine import (
    DEFAULT_KS,
    evaluate_rankings,
    evaluate_run,
    metric_keys,
    rankings_to_run,
)
from .f1 import f1_at_k
from .hit_rate import hit_rate_at_k
from .ndcg import dcg_at_k, ndcg_at_k
from .precision import precision_at_k
from .r_precision import r_precision
from .recall import recall_at_k
from .reciprocal_rank import reciprocal_rank
from .report import MetricsReport, bootstrap_columns

__all__ = [
    "DEFAULT_KS",
    "MetricsReport",
    "average_precision",
    "bootstrap_columns",
    "dcg_at_k",
    "evaluate_rankings",
    "evaluate_run",
    "f1_at_k",
    "hit_rate_at_k",
    "metric_keys",
    "ndcg_at_k",
    "precision_at_k",
    "r_precision",
    "rankings_to_document_level",
    "rankings_to_run",
    "recall_at_k",
    "reciprocal_rank",
    "to_document_level",
]
