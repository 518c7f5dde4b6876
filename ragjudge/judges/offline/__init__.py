"""Offline judges (the embedded default): a claim-support model trained on human labels
(``supportmodel``), the bundled embedding model and lexical evidence, with weights and thresholds
fitted on human labels (``params/v3.json``, refit with ``ragjudge fit-judges``). Importing this
package registers all five under backend "offline".

See docs/judges.md, "Offline judges: how they work and how well they agree with people".
"""

from ragjudge.judges.offline.completeness import OfflineCompletenessJudge
from ragjudge.judges.offline.context import (
    OfflineContextPrecisionJudge,
    OfflineContextRecallJudge,
)
from ragjudge.judges.offline.faithfulness import OfflineFaithfulnessJudge
from ragjudge.judges.offline.relevancy import OfflineAnswerRelevancyJudge

__all__ = [
    "OfflineAnswerRelevancyJudge",
    "OfflineCompletenessJudge",
    "OfflineContextPrecisionJudge",
    "OfflineContextRecallJudge",
    "OfflineFaithfulnessJudge",
]
