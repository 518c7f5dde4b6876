import pytest

from ragjudge.judges.prefix import derive_at_k, precision_at_k, recall_at_k
from ragjudge.schema import ChunkVerdict, ClaimVerdict, Evidence, JudgeResult, JudgeStatus


def test_recall_prefix_counts_claims_supported_within_k():
    m = [[0.0, 0.9, 0.0], [0.0, 0.0, 0.7], [0.1, 0.2, 0.3]]
    assert recall_at_k(m, 1) == 0
    assert recall_at_k(m, 2) == pytest.approx(1 / 3)
    assert recall_at_k(m, 3) == pytest.approx(2 / 3)


def test_precision_is_average_precision_over_prefix():
    chunks = [ChunkVerdict(index=i, relevant=r) for i, r in enumerate([True, False, True, False])]
    assert precision_at_k(chunks, 1) == 1.0
    assert precision_at_k(chunks, 3) == pytest.approx((1 + 2 / 3) / 2)
    assert precision_at_k([ChunkVerdict(index=0, relevant=False)], 1) == 0.0


def test_derive_at_k_slices_evidence():
    ev = Evidence(
        claims=[
            ClaimVerdict(claim="a", verdict="supported", supporting_chunks=[2]),
            ClaimVerdict(claim="b", verdict="supported", supporting_chunks=[0]),
        ],
        support_matrix=[[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]],
    )
    full = JudgeResult(
        judge="context_recall",
        judge_version="1",
        backend="offline",
        item_id="q",
        score=1.0,
        status=JudgeStatus.ok,
        evidence=ev,
    )
    at1 = derive_at_k(full, 1)
    assert at1.score == 0.5
    assert [c.verdict for c in at1.evidence.claims] == ["unsupported", "supported"]
    assert at1.evidence.support_matrix == [[0.0], [1.0]]
