"""The SQLite search index's tables, and what writes its documents.

``agentlog_search_v5_docs`` holds one row per document *without its text*: its
number (in indexing order), the session's label, ``-seq``, the order key's
other parts (``doc_tokens``, ``neg_time``) and ``flags`` (type code, surface
class, whether the time is a number). A type is stored once in
``agentlog_search_v5_types``. ``agentlog_search_v5_fts`` is a contentless FTS5
index (no column sizes) of each document's tokens (``search_tokens``) and of its
pairs of common words (``word_pairs``); ``agentlog_search_v5_meta`` records
the common words, the documents' count and the token rule.

A contentless table forgets a row only given the exact text it indexed; when
that text cannot be derived again, :func:`indexed_columns` rebuilds it from
FTS5's own terms.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from agentlog.application.common_words import choose_common
from agentlog.domain.search_text import tokens
from agentlog.infrastructure.backends.sqlite import search_tokens
from agentlog.infrastructure.backends.sqlite.search_tokens import (
    NO_PAIRS,
    Pairs,
    band_ids,
    body_phrase,
    fts_body,
)
from agentlog.infrastructure.views import encode_text

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from eventsourcing.sqlite import SQLiteCursor

DOCS = "agentlog_search_v5_docs"
FTS = "agentlog_search_v5_fts"
META = "agentlog_search_v5_meta"
TYPES = "agentlog_search_v5_types"


def read_pairs(c: SQLiteCursor) -> Pairs | None:
    """The common words once chosen (``None`` before)."""
    c.execute(f"SELECT name, value FROM {META} WHERE name IN ('common', 'pairs')")
    rows = dict(c.fetchall())
    if "pairs" not in rows:
        return None
    return Pairs(frozenset(json.loads(rows["common"])), int(rows["pairs"]))


def fts_row(
    pairs: Pairs | None,
    number: int,
    text: str,
    hasher: Callable[[Sequence[str]], list[str]] | None = None,
) -> tuple[str, str]:
    """A document's ``body`` and ``pairs`` columns, from one split of its text;
    with a ``hasher`` (encryption on), the tokens' keyed hashes and no pairs."""
    words = tokens(text)
    if hasher is not None:
        return " ".join(hasher(words)), NO_PAIRS
    column = NO_PAIRS if pairs is None else pairs.column(number, words)
    return fts_body(words), column


def indexed_columns(c: SQLiteCursor, ids: Sequence[int]) -> dict[int, tuple[str, str]]:
    """The ``body`` and ``pairs`` columns these rows were indexed with, rebuilt
    from FTS5's own terms and their offsets (``fts5vocab`` instances): what a
    contentless table needs to forget a row whose text cannot be derived again.
    It reads the whole index, so it is only the fallback."""
    if not ids:
        return {}
    c.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.agentlog_search_vocab "
        f"USING fts5vocab(main, {FTS}, 'instance')"
    )
    c.execute(
        "SELECT doc, col, term FROM temp.agentlog_search_vocab "
        "WHERE doc IN (SELECT value FROM json_each(?)) ORDER BY doc, col, offset",
        (json.dumps(sorted(ids)),),
    )
    columns: dict[int, dict[str, list[str]]] = {}
    for doc, col, term in c.fetchall():
        columns.setdefault(int(doc), {"body": [], "pairs": []})[col].append(term)
    return {
        doc: (" ".join(found["body"]), " ".join(found["pairs"]))
        for doc, found in columns.items()
    }


def drop_vanished_common(c: SQLiteCursor) -> None:
    """Forget the common words no document holds any more (an erased session's
    words must not stay in the index's metadata). Safe for phrases: no indexed
    document has a pair with such a word, and a document indexed later that
    holds it again gets no pair with it, so its phrases are found in the text."""
    pairs = read_pairs(c)
    if pairs is None or not pairs.common:
        return
    c.execute(f"SELECT value FROM {META} WHERE name = 'common'")
    common: list[str] = json.loads(c.fetchone()[0])
    kept = []
    for word in common:
        c.execute(
            f"SELECT 1 FROM {FTS} WHERE {FTS} MATCH ? LIMIT 1", (body_phrase([word]),)
        )
        if c.fetchone() is not None:
            kept.append(word)
    if len(kept) < len(common):
        c.execute(
            f"UPDATE {META} SET value = ? WHERE name = 'common'", (json.dumps(kept),)
        )


def choose_pairs(c: SQLiteCursor, number: int) -> Pairs:
    """Choose the common words from the documents indexed so far (each word's
    document count, from FTS5's own vocabulary) and record them."""
    c.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.agentlog_search_terms "
        f"USING fts5vocab(main, {FTS}, 'col')"
    )
    c.execute("SELECT term, doc FROM temp.agentlog_search_terms WHERE col = 'body'")
    counts = [(term, int(count)) for term, count in c.fetchall()]
    c.execute(f"SELECT count(*) FROM {DOCS}")
    common = choose_common(counts, int(c.fetchone()[0]))
    c.executemany(
        f"INSERT OR REPLACE INTO {META} (name, value) VALUES (?, ?)",
        [("common", json.dumps(common)), ("pairs", number)],
    )
    return Pairs(frozenset(common), number)


def index_texts(c: SQLiteCursor, texts: list[tuple[int, str, str]]) -> None:
    """Add the documents ``(id, body, pairs)`` to the full-text index by id:
    FTS5 writes its pending terms out as a segment whenever an id is lower than
    the last one added, and a batch's ids jump between bands. Empties ``texts``."""
    texts.sort()
    c.executemany(f"INSERT INTO {FTS} (rowid, body, pairs) VALUES (?, ?, ?)", texts)
    texts.clear()


def last_band_id(c: SQLiteCursor, band: int) -> int:
    """The band's highest id in use, or the one before its first."""
    low, high = band_ids(band)
    c.execute(f"SELECT max(id) FROM {DOCS} WHERE id BETWEEN ? AND ?", (low, high))
    found = c.fetchone()[0]
    return low - 1 if found is None else int(found)


def band_size(c: SQLiteCursor, band: int) -> int:
    """About how many documents the band holds (its last slot)."""
    return last_band_id(c, band) - band_ids(band)[0] + 1


def next_id(c: SQLiteCursor, band: int, last: dict[int, int]) -> int:
    """A new document's id: the band's next slot."""
    last[band] = (last[band] if band in last else last_band_id(c, band)) + 1
    if last[band] > band_ids(band)[1]:
        shift = search_tokens.BAND_SHIFT
        msg = f"the search index holds 2**{shift} documents of {band} tokens"
        raise OverflowError(msg)
    return last[band]


def flags_of(type_code: int, surface: int, timed: bool) -> int:
    """One column for three small values: ``type code << 3 | surface << 1 | timed``."""
    return type_code << 3 | surface << 1 | int(timed)


def type_code(c: SQLiteCursor, kind: str, known: dict[str, int]) -> int:
    """The type's code in :data:`TYPES`, added on first use."""
    if kind not in known:
        key = encode_text(kind)
        c.execute(f"INSERT OR IGNORE INTO {TYPES} (type) VALUES (?)", (key,))
        c.execute(f"SELECT code FROM {TYPES} WHERE type = ?", (key,))
        known[kind] = int(c.fetchone()[0])
    return known[kind]
