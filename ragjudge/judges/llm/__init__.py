"""LLM-backed judges (backend ``"llm"``): importing this package registers the five of them.

Each makes exactly one structured call per item, so the five together cost at most 5 calls
per sample at any k (context recall and precision are judged once at k_max and derived at
smaller k, see ``ragjudge.judges.prefix``).
"""

from ragjudge.judges.llm.answer_relevancy import AnswerRelevancyJudge
from ragjudge.judges.llm.base import LLMJudge, StructuredClient
from ragjudge.judges.llm.completeness import CompletenessJudge
from ragjudge.judges.llm.context import ContextPrecisionJudge, ContextRecallJudge
from ragjudge.judges.llm.faithfulness import FaithfulnessJudge

__all__ = [
    "AnswerRelevancyJudge",
    "CompletenessJudge",
    "ContextPrecisionJudge",
    "ContextRecallJudge",
    "FaithfulnessJudge",
    "LLMJudge",
    "StructuredClient",
]
