"""The FTS5 queries of the SQLite search index: a phrase asked for by its
pairs of common words or by its text (as each document was indexed), the
matches of one band, and the test of one document row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentlog.infrastructure.backends.sqlite.search_index_writes import (
    FTS,
    read_pairs,
)
from agentlog.infrastructure.backends.sqlite.search_tokens import (
    NO_PAIRS,
    band_ids,
    body_phrase,
    fts_phrase,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from eventsourcing.sqlite import SQLiteCursor


def _lookups(
    c: SQLiteCursor, phrase: Sequence[str]
) -> tuple[str, tuple[str, int] | None]:
    """The phrase's FTS5 query on the text, and on the pairs with the number
    after which documents have them (``None``: the phrase is not one of pairs)."""
    body = body_phrase(phrase)
    pairs = read_pairs(c)
    by_pairs = None if pairs is None else pairs.expression(phrase)
    if pairs is None or by_pairs is None:
        return body, None
    return body, (by_pairs, pairs.after)


def match_expression(c: SQLiteCursor, phrase: Sequence[str]) -> str:
    """The phrase's FTS5 query for a scan of the index: its pairs, or its text
    in the documents indexed without pairs, if the phrase is one of pairs;
    else its text."""
    body, pairs = _lookups(c, phrase)
    if pairs is None:
        return body
    return f"{pairs[0]} OR ({fts_phrase([NO_PAIRS], 'pairs')} AND {body})"


def matches(band: int | None = None) -> str:
    """The ids (column ``id``) of the documents matching an expression (the
    parameter), of one band if given."""
    sql = f"SELECT rowid AS id FROM {FTS} WHERE {FTS} MATCH ?"
    if band is None:
        return sql
    low, high = band_ids(band)
    return f"{sql} AND rowid BETWEEN {low} AND {high}"


def match_test(
    c: SQLiteCursor, phrase: Sequence[str], row: str
) -> tuple[str, list[Any]]:
    """An SQL test that the document row ``row`` (its ``id`` and ``number``)
    holds the phrase, and its parameters. By the pairs or by the text, as the
    document was indexed: FTS5 sets up every term of an expression for each
    test, and the scan's expression of both costs far more than the pairs'."""
    body, pairs = _lookups(c, phrase)
    doc_id = f"{row}.id"
    if pairs is None:
        sql = f"EXISTS (SELECT 1 FROM {FTS} WHERE {FTS} MATCH ? AND rowid = {doc_id})"
        return sql, [body]
    by_pairs, after = pairs
    sql = (
        f"EXISTS (SELECT 1 FROM {FTS} WHERE {FTS} MATCH "
        f"(CASE WHEN {row}.number > ? THEN ? ELSE ? END) AND rowid = {doc_id})"
    )
    return sql, [after, by_pairs, body]
