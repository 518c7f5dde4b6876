from ragjudge.text import content_words, numbers, split_sentences


def test_split_sentences_keeps_abbreviations_and_decimals():
    text = "The wing, e.g. a delta, stalls at 3.5 degrees. Dr. Smith agreed! Is it new? Yes."
    assert split_sentences(text) == [
        "The wing, e.g. a delta, stalls at 3.5 degrees.",
        "Dr. Smith agreed!",
        "Is it new?",
        "Yes.",
    ]
    assert split_sentences("   ") == []


def test_content_words_and_numbers():
    assert content_words("The boundary layer is thin") == ["boundary", "layer", "thin"]
    assert numbers("It cost 1,000 dollars in 1990, or 3.50 each") == {"1000", "1990", "3.5"}
