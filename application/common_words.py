"""Which words of the index are common: the words whose adjacent pairs the
search views index as one more token, so a phrase of them is a short lookup.

One rule for every backend's search view (SQLite keeps the pairs in an FTS5
column, PostgreSQL as GIN elements): a word is common when it is ASCII letters
and digits and stands in at least :data:`COMMON_SHARE` of the documents
sampled; at most :data:`MAX_COMMON` of them, the most frequent first, ties by
the word, so a rebuild picks the same words (docs/search.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Iterable

MAX_COMMON: Final = 64
"""At most this many common words: each adds pairs to every document it is in."""
COMMON_SHARE: Final = 0.05
"""A word in at least this share of the sampled documents is common."""


def can_be_common(word: str) -> bool:
    """Only ASCII letters and digits: the words of code and prose that repeat."""
    return word.isascii() and word.isalnum()


def choose_common(counts: Iterable[tuple[str, int]], documents: int) -> list[str]:
    """The common words, given each word's document count in ``documents``."""
    floor = max(1, int(documents * COMMON_SHARE))
    eligible = [
        (-count, word)
        for word, count in counts
        if count >= floor and can_be_common(word)
    ]
    return [word for _, word in sorted(eligible)[:MAX_COMMON]]
