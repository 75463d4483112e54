"""Pairs of common words find exactly the phrases the text holds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentlog.application.common_words import choose_common
from agentlog.infrastructure.backends.sqlite.word_pairs import (
    BREAK,
    pair_token,
    pairs_phrase,
    pairs_text,
)

WORDS = st.sampled_from(["a", "b", "c", "ab", "ba", "x"])


def occurs(phrase: list[str], tokens: list[str]) -> bool:
    size = len(phrase)
    return any(tokens[i : i + size] == phrase for i in range(len(tokens) - size + 1))


@settings(max_examples=500, deadline=None)
@given(
    tokens=st.lists(WORDS, max_size=30),
    phrase=st.lists(WORDS, min_size=2, max_size=5),
    common=st.sets(WORDS, min_size=1),
)
def test_a_pairs_phrase_matches_exactly_where_the_phrase_does(
    tokens: list[str], phrase: list[str], common: set[str]
) -> None:
    pairs = pairs_phrase(phrase, common)
    if pairs is None:
        assert len(phrase) < 2 or not set(phrase) <= common
        return
    column = pairs_text(tokens, common).split()
    assert occurs(pairs, column) == occurs(phrase, tokens)


def test_pair_tokens_never_collide_and_runs_end_with_a_break() -> None:
    assert pair_token("ab", "c") != pair_token("a", "bc")
    common = {"a", "b"}
    assert pairs_text(["a", "b", "x", "b", "a"], common).split() == [
        pair_token("a", "b"),
        BREAK,
        pair_token("b", "a"),
    ]
    assert pairs_text(["a"], common) == ""
    assert pairs_phrase(["a"], common) is None
    assert pairs_phrase(["a", "x"], common) is None


def test_common_words_are_chosen_deterministically() -> None:
    counts = [("the", 90), ("a", 90), ("rare", 1), ("is", 50)]
    assert choose_common(counts, 100) == ["a", "the", "is"]
    assert choose_common(counts, 100) == choose_common(reversed(counts), 100)
    assert choose_common([("w", 1)], 1000) == []
    assert choose_common([("naïve", 90), ("a-b", 90), ("文", 90)], 100) == []
