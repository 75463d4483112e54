"""The FTS5 queries of the SQLite search index: a phrase asked for by its
pairs of common words or by its text (as each document was indexed), the
matches of one band, and the test of one document row.

A read asks through a :class:`Lookup`: :class:`TextLookup` for an index of the
tokens themselves (one FTS5 expression), :class:`HashedLookup` for an index of
keyed hashes (``application.search_hashing``), where each session spells the
phrase differently: the phrases of the sessions a read may match are written to
a temporary table, and FTS5 is asked once per session, in one statement.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

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
    from collections.abc import Mapping, Sequence

    from eventsourcing.sqlite import SQLiteCursor

PHRASES: Final = "temp.agentlog_search_phrases"
"""Each session's hashed phrase (its FTS5 expression) by the session's label."""


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


class Lookup:
    """How one read asks the full-text index for a phrase's documents."""

    params: list[Any]
    """The parameters of :meth:`matches` and :meth:`since` (before their own)."""

    def matches(self, band: int | None = None) -> str:
        """The ids (column ``id``) of the matching documents, of one band if given."""
        raise NotImplementedError

    def since(self) -> str:
        """The matching ids from an id on (one more parameter), in id order."""
        raise NotImplementedError

    def test(self, row: str) -> tuple[str, list[Any]]:
        """An SQL test that the document row ``row`` holds the phrase."""
        raise NotImplementedError


class TextLookup(Lookup):
    """A phrase in an index of the tokens themselves: one FTS5 expression."""

    def __init__(self, c: SQLiteCursor, phrase: Sequence[str]) -> None:
        self._c = c
        self._phrase = phrase
        self.params = [match_expression(c, phrase)]

    def matches(self, band: int | None = None) -> str:
        return matches(band)

    def since(self) -> str:
        return f"{matches()} AND rowid >= ? ORDER BY rowid"

    def test(self, row: str) -> tuple[str, list[Any]]:
        return match_test(self._c, self._phrase, row)


class HashedLookup(Lookup):
    """A phrase in an index of keyed hashes: each session's own phrase, from
    :data:`PHRASES`, each a lookup of FTS5 (its matches then sorted by id)."""

    params: list[Any] = []  # noqa: RUF012 (never changed)

    def __init__(self, c: SQLiteCursor, phrases: Mapping[int, Sequence[str]]) -> None:
        c.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {PHRASES.removeprefix('temp.')} "
            "(label INTEGER PRIMARY KEY, expr TEXT NOT NULL)"
        )
        c.execute(f"DELETE FROM {PHRASES}")
        c.executemany(
            f"INSERT INTO {PHRASES} (label, expr) VALUES (?, ?)",
            [(label, fts_phrase(words, "body")) for label, words in phrases.items()],
        )

    def _join(self) -> str:
        return (
            f"SELECT f.rowid AS id FROM {PHRASES} AS p CROSS JOIN {FTS} AS f "
            f"WHERE f.{FTS} MATCH p.expr"
        )

    def matches(self, band: int | None = None) -> str:
        if band is None:
            return self._join()
        low, high = band_ids(band)
        return f"{self._join()} AND f.rowid BETWEEN {low} AND {high}"

    def since(self) -> str:
        return f"{self._join()} AND f.rowid >= ? ORDER BY f.rowid"

    def test(self, row: str) -> tuple[str, list[Any]]:
        sql = (
            f"EXISTS (SELECT 1 FROM {PHRASES} AS p CROSS JOIN {FTS} AS f "
            f"WHERE p.label = {row}.who AND f.{FTS} MATCH p.expr "
            f"AND f.rowid = {row}.id)"
        )
        return sql, []
