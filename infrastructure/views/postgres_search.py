"""The PostgreSQL search index: a GIN-indexed ``tsvector`` kept with tracking.

``agentlog_search_v1`` holds each session's decision state; ``..._docs`` one row
per document with its exact text as UTF-8 ``surrogatepass`` bytes
(docs/strings.md) and ``body``: the document's tokens as ``domain.search_text``
splits them, lower-cased and joined by single spaces — no NUL, no surrogate, no
punctuation, so PostgreSQL's parser cannot split them its own way.
``tsv = to_tsvector('simple', body)`` is a stored generated column under a GIN
index; a query is ``phraseto_tsquery('simple', tokens)``.

``tsvector`` drops words over 2,047 bytes and stops counting positions at 16,383,
so a phrase in such a document could be missed: those documents are marked
``long`` and are always candidates. Every candidate is then checked in Python by
the same matcher as the scan, so the hits are the scan's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from psycopg.sql import SQL, Composed, Identifier

from agentlog.application.search_index import SearchChanges, SearchState, SearchView
from agentlog.domain.search_text import SearchDocument, tokens
from agentlog.infrastructure.views import (
    decode_column,
    decode_text,
    encode_text,
    write_tracked,
)
from agentlog.infrastructure.views.postgres import PostgresView

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Sequence

    from eventsourcing.persistence import Tracking
    from psycopg import Cursor
    from psycopg.rows import DictRow

MAX_POSITION = 16_000
MAX_WORD_BYTES = 2_000
_DOC_COLUMNS = SQL("session_id, seq, type, time, surface, text")


def token_body(text: str) -> tuple[str, bool]:
    """The document's tokens as ``body``, and whether ``tsvector`` may lose some."""
    words = tokens(text)
    long = len(words) > MAX_POSITION or any(
        len(word.encode("utf-8", "surrogatepass")) > MAX_WORD_BYTES for word in words
    )
    return " ".join(words), long


def _document(record: DictRow) -> SearchDocument:
    return SearchDocument(
        decode_text(record["session_id"]),
        record["seq"],
        decode_text(record["type"]),
        decode_column("number", record["time"]),
        record["surface"],
        decode_text(record["text"]),
    )


class PostgresSearchView(PostgresView[SearchState], SearchView):
    """States and documents in the events' schema, one transaction per batch."""

    @property
    def _docs(self) -> Composed:
        schema = Identifier(self.datastore.schema)
        return SQL("{0}.{1}").format(schema, Identifier(f"{self.table_name}_docs"))

    def index_statements(self) -> list[Composed]:
        return [
            SQL(
                "CREATE TABLE IF NOT EXISTS {0} (id bigserial PRIMARY KEY, "
                "session_id bytea NOT NULL, seq bigint NOT NULL, type bytea NOT NULL, "
                "time numeric, surface text NOT NULL, text bytea NOT NULL, "
                "body text NOT NULL, long boolean NOT NULL, "
                "tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', body)) "
                "STORED, UNIQUE (session_id, seq))"
            ).format(self._docs),
            SQL("CREATE INDEX IF NOT EXISTS {0} ON {1} USING gin (tsv)").format(
                self._index_name("tsv"), self._docs
            ),
            SQL("CREATE INDEX IF NOT EXISTS {0} ON {1} (session_id) WHERE long").format(
                self._index_name("long"), self._docs
            ),
        ]

    def _decode(self, record: DictRow) -> SearchState:
        state = super()._decode(record)
        return SearchState(
            state.session_id, state.next_seq, state.surface, bool(state.broken)
        )

    def _encode(self, row: SearchState) -> tuple[Any, ...]:
        values = super()._encode(row)
        return (*values[:-1], int(row.broken))

    def apply(
        self,
        keys: Collection[str],
        change: Callable[[dict[str, SearchState]], SearchChanges],
        tracking: Tracking,
    ) -> bool:
        def write(curs: Cursor[DictRow]) -> None:
            self._write(curs, change(self._select(curs, keys)))

        return write_tracked(self, tracking, write)

    def _write(self, curs: Cursor[DictRow], changes: SearchChanges) -> None:
        if changes.dropped:
            curs.execute(
                SQL("DELETE FROM {0} WHERE session_id = ANY(%s)").format(self._docs),
                ([encode_text(s) for s in changes.dropped],),
            )
        if changes.states:
            curs.executemany(
                self._upsert_sql, [self._encode(s) for s in changes.states]
            )
        if changes.documents:
            rows = []
            for doc in changes.documents:
                body, long = token_body(doc.text)
                time = doc.time if type(doc.time) in (int, float) else None
                rows.append(
                    (
                        encode_text(doc.session_id),
                        doc.seq,
                        encode_text(doc.type),
                        time,
                        doc.surface,
                        encode_text(doc.text),
                        body,
                        long,
                    )
                )
            curs.executemany(
                SQL(
                    "INSERT INTO {0} ({1}, body, long) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
                ).format(self._docs, _DOC_COLUMNS),
                rows,
            )
        if changes.shadowed:
            curs.executemany(
                SQL(
                    "UPDATE {0} SET surface = 'shadowed' "
                    "WHERE session_id = %s AND seq = %s"
                ).format(self._docs),
                [(encode_text(s), seq) for s, seq in changes.shadowed],
            )

    def candidates(
        self, phrase: Sequence[str], sessions: Collection[str] | None
    ) -> list[SearchDocument]:
        sql = SQL(
            "SELECT {1} FROM {0} WHERE (tsv @@ phraseto_tsquery('simple', %s) OR long)"
        ).format(self._docs, _DOC_COLUMNS)
        params: list[Any] = [" ".join(phrase)]
        if sessions is not None:
            sql += SQL(" AND session_id = ANY(%s)")
            params.append([encode_text(s) for s in sessions])
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(sql, params)
            return [_document(record) for record in curs.fetchall()]

    def documents(self) -> list[SearchDocument]:
        sql = SQL("SELECT {1} FROM {0} ORDER BY session_id, seq").format(
            self._docs, _DOC_COLUMNS
        )
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(sql)
            return [_document(record) for record in curs.fetchall()]

    def clear(self, application_name: str) -> None:
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(SQL("DELETE FROM {0}").format(self._docs))
            curs.execute(SQL("DELETE FROM {0}").format(self._table))
            curs.execute(
                SQL("DELETE FROM {0} WHERE application_name = %s").format(
                    self._tracking_table
                ),
                (self.tracking_key(application_name),),
            )


SEARCH_VIEW = PostgresSearchView
