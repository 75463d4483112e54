"""What the PostgreSQL search index stores of a document: its terms.

A document's ``terms`` are its tokens as ``domain.search_text`` splits them,
each between single spaces (``" fix the bug "``), then, once the index has
chosen its common words (``word_pairs``), a ``_`` and each adjacent pair of
common words as one element ``a_b`` (``" is not none _ is_not not_none "``).

Two exact tests follow from that shape, with no parser of PostgreSQL's between
the tokenizer and the index (docs/search.md#the-index):

- a phrase occurs in the document exactly when ``" t1 t2 … tn "`` is a
  substring of its terms (no token holds a space or ``_``, so the pattern can
  neither start inside a token nor reach the pairs);
- a GIN index on the terms' elements (``string_to_array``) finds the documents
  holding every element a phrase needs: its tokens, or, for a phrase of
  common words only, its pairs, whose lists are short.

Tokens longer than :data:`HASH_OVER` bytes are stored as ``#`` and a hash of
their UTF-8 (a GIN entry must fit a page), on both sides, so they still match
exactly. Positions are not stored, so there is no limit on a document's length.
"""

from __future__ import annotations

import hashlib
from itertools import pairwise
from typing import TYPE_CHECKING, Final

from agentlog.domain.search_text import tokens

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Sequence

PAIR: Final = "_"
"""Joins a pair's words, and separates the pairs from the tokens (``_`` is
never inside a token: tokens are runs of letters and digits)."""
HASH_OVER: Final = 1_000
"""Tokens of more UTF-8 bytes than this are stored hashed."""


def term(token: str) -> str:
    """One token as the index stores it (hashed if too long for a GIN entry)."""
    if len(token) * 4 <= HASH_OVER:
        return token
    raw = token.encode("utf-8", "surrogatepass")
    if len(raw) <= HASH_OVER:
        return token
    return "#" + hashlib.blake2b(raw, digest_size=16).hexdigest()


def split(text: str) -> list[str]:
    """The document's tokens, as the index stores them."""
    return [term(token) for token in tokens(text)]


def hashed(text: str, hasher: Callable[[Sequence[str]], list[str]]) -> list[str]:
    """The document's tokens as an encrypted store's index holds them: each a
    keyed hash of its session's (``application.search_hashing``)."""
    return hasher(tokens(text))


def pairs(words: Sequence[str], common: Collection[str]) -> list[str]:
    """Each adjacent pair of common words, as one element."""
    return [f"{a}{PAIR}{b}" for a, b in pairwise(words) if a in common and b in common]


def terms(words: Sequence[str], common: Collection[str] | None) -> str:
    """The ``terms`` column of a document of these (stored) tokens; its pairs
    once the common words are chosen (``None``: not yet)."""
    body = " " + " ".join(words) + " " if words else " "
    if not common:
        return body
    found = pairs(words, common)
    return body + PAIR + " " + " ".join(found) + " " if found else body


def words_of(stored: str) -> list[str]:
    """The tokens of a ``terms`` value (without its pairs)."""
    body, _, _ = stored.partition(" " + PAIR + " ")
    return body.split()


def pattern(phrase: Sequence[str]) -> str:
    """The substring of ``terms`` that says the phrase occurs."""
    return " " + " ".join(term(token) for token in phrase) + " "


def elements(phrase: Sequence[str], common: Collection[str] | None) -> list[str]:
    """The elements every document holding the phrase holds: its pairs if
    all its words are common (and it has two or more), else its tokens."""
    stored = [term(token) for token in phrase]
    if common and len(stored) > 1 and all(word in common for word in stored):
        return sorted(set(pairs(stored, common)))
    return sorted(set(stored))
