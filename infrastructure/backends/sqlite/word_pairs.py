"""Pairs of common words, indexed beside the text for fast phrases.

A phrase of very common words is the full-text index's worst case: FTS5 must
intersect posting lists that hold most documents (``is not none`` in code,
``w1 w2 w3`` in the Zipf corpus; docs/search-figures.md#the-search-codes-constants).
The classic answer (Lucene's "common grams") indexes each pair of
adjacent common words (``application.common_words``) as one more token, whose
posting list is short.

Here the pairs live in their own FTS5 column, ``pairs``, which no user query
can reach (queries are restricted to the ``body`` column). For each maximal run
of adjacent tokens that are all common, the column holds the run's pair tokens
in order, and a :data:`BREAK` token ends each run. A phrase ``q1 … qm`` (m ≥ 2)
whose every adjacent pair is common then occurs in the text exactly when the
phrase ``pair(q1,q2) … pair(qm-1,qm)`` occurs in the ``pairs`` column: inside a
run, consecutive pair tokens stand for consecutive positions, and a phrase never
spans a break. (Property-tested against matching on the tokens themselves.)

A pair token spells its two words with the first one's length, so no two pairs
spell the same token: ``f"{len(a)}ǂ{a}{b}"``; ``ǂ`` (U+01C2) is a letter to
``unicode61``, so the whole pair is one token.
"""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

JOIN: Final = "\u01c2"
BREAK: Final = JOIN


def pair_token(first: str, second: str) -> str:
    return f"{len(first)}{JOIN}{first}{second}"


def pairs_text(tokens: Sequence[str], common: Collection[str]) -> str:
    """The ``pairs`` column of a document with these tokens ("" if none)."""
    out: list[str] = []
    in_run = False
    for first, second in pairwise(tokens):
        if first in common and second in common:
            out.append(pair_token(first, second))
            in_run = True
        elif in_run:
            out.append(BREAK)
            in_run = False
    return " ".join(out)


def pairs_phrase(phrase: Sequence[str], common: Collection[str]) -> list[str] | None:
    """The pair tokens that find ``phrase``, or ``None`` if one of its
    adjacent pairs is not common (or it has a single token)."""
    if len(phrase) < 2 or not all(token in common for token in phrase):
        return None
    return [pair_token(a, b) for a, b in pairwise(phrase)]
