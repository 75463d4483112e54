"""How the SQLite search index spells a document for FTS5, and its band ids.

A document's tokens (``domain.search_text``) are written as FTS5 tokens that
``unicode61`` neither splits nor folds (:func:`fts_token`); a phrase is asked
for as one quoted phrase of them in one column. A document's id is its band
(its token count) and a slot (:data:`BAND_SHIFT`), so FTS5 lists a phrase's
matches in the search order's first part. Pure functions: no SQL is run here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentlog.infrastructure.backends.sqlite.word_pairs import (
    pairs_phrase,
    pairs_text,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

ESCAPE = "\u01c1"
BAND_SHIFT = 28
"""A document's id is ``band << BAND_SHIFT | slot``: the full-text index lists
a phrase's matches by id, so by band, the order key's first part. A band holds
at most 2**28 documents (the index refuses more); a wider shift would cost every
posting that crosses bands a longer id delta (a larger index)."""
BAND_MAX = (1 << 22) - 1
"""Documents of more tokens share the last band (their ids stay below 2**62)."""
NO_PAIRS = "\u01c20"
"""The ``pairs`` column of a document indexed before the common words were
chosen: ``ǂ0``, a token no pair spells, so a query can ask for its text."""


def band_of(doc_tokens: int) -> int:
    """The band of a document of ``doc_tokens`` tokens."""
    return min(doc_tokens, BAND_MAX)


def band_of_id(doc_id: int) -> int:
    """The band a document's id is in."""
    return doc_id >> BAND_SHIFT


def band_ids(band: int) -> tuple[int, int]:
    """The first and last id a band's documents may take."""
    low = band << BAND_SHIFT
    return low, low + (1 << BAND_SHIFT) - 1


def fts_token(token: str) -> str:
    r"""One token of ``domain.search_text`` as one FTS5 token that ``unicode61``
    neither splits nor folds: ASCII letters and digits as they are, any other
    token as ``ǁ`` and the hex of its UTF-8.

    FTS5 splits and folds by its own Unicode 6.1 tables: it keeps combining
    marks and private-use characters inside a word, which Python's ``\w``
    does not, and folds ``Σ`` where ``str.lower`` gives ``ς``. Fed the text, it
    missed the exact stored words ``cafe\u0301``, ``\ue0b0branch``; fed these
    tokens, it matches exactly what the scan matches. No ASCII token holds
    ``ǁ`` (U+01C1, a letter without case since Unicode 1.1), so none collides.
    """
    # A token is a run of letters and digits, lower-cased: if ASCII, [a-z0-9]+.
    return token if token.isascii() else ESCAPE + token.encode().hex()


def fts_body(words: Sequence[str]) -> str:
    """The ``body`` column of a document of these tokens (:func:`fts_token`)."""
    return " ".join(map(fts_token, words))


def fts_phrase(words: Sequence[str], column: str) -> str:
    """An FTS5 query: one quoted phrase of FTS5 tokens (letters and digits,
    ``ǁ`` and ``ǂ``) in one column, so it holds no operator."""
    return "{" + column + '} : "' + " ".join(words) + '"'


def body_phrase(phrase: Sequence[str]) -> str:
    """The FTS5 query for the phrase of these tokens in the text."""
    return fts_phrase([fts_token(token) for token in phrase], "body")


@dataclass(frozen=True, slots=True)
class Pairs:
    """The index's common words, and the number of the last document indexed
    without pairs (documents are numbered as they are indexed)."""

    common: frozenset[str]
    after: int

    def column(self, number: int, words: Sequence[str]) -> str:
        """The ``pairs`` column of document ``number`` (as it was indexed)."""
        if number <= self.after:
            return NO_PAIRS
        return pairs_text(words, self.common)

    def expression(self, phrase: Sequence[str]) -> str | None:
        found = pairs_phrase(phrase, self.common)
        return None if found is None else fts_phrase(found, "pairs")
