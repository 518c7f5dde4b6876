"""The pair-model runtime the relevancy cross-encoder would use (``supportmodel.PairModel``,
``relevancy.relevancy_cross_encoder``): a card or model file that cannot be read is one
``ConfigError`` naming it. (The trained relevancy model is not shipped: docs/judges.md,
"Answer relevancy: a cross-encoder, measured and not shipped".)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragjudge.errors import ConfigError
from ragjudge.judges.offline.supportmodel import PairModel


def test_a_missing_model_file_or_bad_card_is_one_config_error(tmp_path: Path) -> None:
    card = tmp_path / "relevancy.json"
    card.write_text(json.dumps({"model_file": "absent.onnx", "max_len": 96}))
    with pytest.raises(ConfigError, match=r"absent\.onnx"):
        PairModel(card)
    card.write_text("{not json")
    with pytest.raises(ConfigError, match=r"relevancy\.json"):
        PairModel(card)
