"""Evidence windows of the claim-support model (``ragjudge.judges.offline.windows``) and the
abstention cue for a bare "unknown"."""

from __future__ import annotations

import itertools

from ragjudge.judges.offline.segment import is_non_committal
from ragjudge.judges.offline.windows import WINDOW_WORDS, overlap, ranked, stems, windows

PASSAGE = "The Eiffel Tower was completed in 1889. It is 330 metres tall."


def test_windows_pack_sentences_with_one_sentence_overlap() -> None:
    text = " ".join(
        f"Sentence number {n} talks about topic {n} in some detail here." for n in range(30)
    )
    ws = windows(text)
    assert len(ws) > 1
    assert all(len(w.split()) <= WINDOW_WORDS for w in ws)
    for a, b in itertools.pairwise(ws):
        assert b.startswith(a.rsplit(". ", 1)[-1])
    assert "topic 29" in ws[-1] and "topic 0" in ws[0]
    # a run-on of 100 words is cut into units of 48, 48 and 4 words, packed into two windows
    assert [len(w.split()) for w in windows("word " * 100)] == [48, 52]
    assert ranked("completed in 1889", ["Bananas are yellow.", PASSAGE]) == [1, 0]
    assert overlap(stems("completed in 1889"), PASSAGE) == 1.0


def test_unknown_as_an_adjective_is_no_abstention() -> None:
    assert is_non_committal("The answer is unknown.") and is_non_committal("Unknown.")
    assert not is_non_committal("Gustave Eiffel died of an unknown illness in 1923.")
