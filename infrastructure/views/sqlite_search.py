"""The SQLite search index: an FTS5 table beside the events, kept with tracking.

``agentlog_search_v1`` holds each session's decision state (as the other views
hold rows); ``agentlog_search_v1_docs`` one row per document, its exact text as
UTF-8 bytes with ``surrogatepass`` (docs/strings.md); ``agentlog_search_v1_fts``
a contentless FTS5 index (``unicode61``, diacritics kept, rowid = the document's
id) of the text with lone surrogates as U+FFFD and NUL as a space — both
separators, for FTS5 and for the tokenizer in ``domain.search_text`` alike, so
matching is the same. Documents, states and the tracking position change in one
transaction.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from agentlog.application.search_index import SearchChanges, SearchState, SearchView
from agentlog.domain.search_text import SearchDocument
from agentlog.infrastructure.views import decode_text, encode_text, write_tracked
from agentlog.infrastructure.views.sqlite import CHUNK, SQLiteView

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Sequence

    from eventsourcing.persistence import Tracking
    from eventsourcing.sqlite import SQLiteCursor

_UNSAFE = re.compile("[\x00\ud800-\udfff]")
DOCS = "agentlog_search_v1_docs"
FTS = "agentlog_search_v1_fts"
_DOC_COLUMNS = "session_id, seq, type, time, surface, text"


def fts_body(text: str) -> str:
    """Text SQLite can hold: NUL a space, a lone surrogate U+FFFD (both separators)."""
    return _UNSAFE.sub(lambda m: " " if m.group() == "\x00" else "\ufffd", text)


def _document(record: Sequence[Any]) -> SearchDocument:
    session_id, seq, kind, time, surface, text = record
    return SearchDocument(
        decode_text(session_id),
        seq,
        decode_text(kind),
        time,
        surface,
        decode_text(text),
    )


class SQLiteSearchView(SQLiteView[SearchState], SearchView):
    """States, documents and their FTS5 index in the events' database."""

    def index_statements(self) -> list[str]:
        return [
            f"CREATE TABLE IF NOT EXISTS {DOCS} (id INTEGER PRIMARY KEY, "
            "session_id BLOB NOT NULL, seq INTEGER NOT NULL, type BLOB NOT NULL, "
            "time NUMERIC, surface TEXT NOT NULL, text BLOB NOT NULL, "
            "UNIQUE (session_id, seq))",
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS} USING fts5(body, "
            "content='', tokenize='unicode61 remove_diacritics 0')",
        ]

    def _decode(self, record: Sequence[Any]) -> SearchState:
        state = super()._decode(record)
        return SearchState(
            state.session_id, state.next_seq, state.surface, bool(state.broken)
        )

    def apply(
        self,
        keys: Collection[str],
        change: Callable[[dict[str, SearchState]], SearchChanges],
        tracking: Tracking,
    ) -> bool:
        def write(c: SQLiteCursor) -> None:
            self._write(c, change(self._select(c, keys)))

        return write_tracked(self, tracking, write)

    def _write(self, c: SQLiteCursor, changes: SearchChanges) -> None:
        for session_id in changes.dropped:
            self._drop(c, session_id)
        if changes.states:
            c.executemany(self._upsert_sql, [self._encode(s) for s in changes.states])
        for doc in changes.documents:
            body = fts_body(doc.text)
            c.execute(
                f"INSERT INTO {DOCS} ({_DOC_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    encode_text(doc.session_id),
                    doc.seq,
                    encode_text(doc.type),
                    doc.time if type(doc.time) in (int, float) else None,
                    doc.surface,
                    encode_text(doc.text),
                ),
            )
            c.execute(
                f"INSERT INTO {FTS} (rowid, body) VALUES (last_insert_rowid(), ?)",
                (body,),
            )
        if changes.shadowed:
            c.executemany(
                f"UPDATE {DOCS} SET surface = 'shadowed' "
                "WHERE session_id = ? AND seq = ?",
                [(encode_text(s), seq) for s, seq in changes.shadowed],
            )

    def _drop(self, c: SQLiteCursor, session_id: str) -> None:
        # A contentless index forgets a row given the text it indexed: fts_body
        # of the stored text is that text again.
        key = encode_text(session_id)
        c.execute(f"SELECT id, text FROM {DOCS} WHERE session_id = ?", (key,))
        rows = [(row[0], fts_body(decode_text(row[1]))) for row in c.fetchall()]
        c.executemany(
            f"INSERT INTO {FTS} ({FTS}, rowid, body) VALUES ('delete', ?, ?)", rows
        )
        c.execute(f"DELETE FROM {DOCS} WHERE session_id = ?", (key,))

    def candidates(
        self, phrase: Sequence[str], sessions: Collection[str] | None
    ) -> list[SearchDocument]:
        # Tokens are letter/digit runs: quoting them leaves no operator.
        match = '"' + " ".join(phrase) + '"'
        sql = (
            f"SELECT {_DOC_COLUMNS} FROM {DOCS} WHERE id IN "
            f"(SELECT rowid FROM {FTS} WHERE {FTS} MATCH ?)"
        )
        with self.datastore.transaction(commit=False) as c:
            if sessions is None:
                c.execute(sql, (match,))
                return [_document(tuple(r)) for r in c.fetchall()]
            found: list[SearchDocument] = []
            ordered = sorted(sessions)
            for i in range(0, len(ordered), CHUNK):
                chunk = [encode_text(key) for key in ordered[i : i + CHUNK]]
                marks = ", ".join("?" for _ in chunk)
                c.execute(sql + f" AND session_id IN ({marks})", (match, *chunk))
                found += [_document(tuple(r)) for r in c.fetchall()]
            return found

    def documents(self) -> list[SearchDocument]:
        with self.datastore.transaction(commit=False) as c:
            c.execute(f"SELECT {_DOC_COLUMNS} FROM {DOCS} ORDER BY session_id, seq")
            return [_document(tuple(r)) for r in c.fetchall()]

    def clear(self, application_name: str) -> None:
        with self.datastore.transaction(commit=True) as c:
            c.execute(f"INSERT INTO {FTS} ({FTS}) VALUES ('delete-all')")
            c.execute(f"DELETE FROM {DOCS}")
            c.execute(f"DELETE FROM {self.table_name}")
            c.execute(
                "DELETE FROM tracking WHERE application_name = ?",
                (self.tracking_key(application_name),),
            )


SEARCH_VIEW = SQLiteSearchView
