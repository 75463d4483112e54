"""The SQLite search index: a contentless FTS5 table and an order index.

``agentlog_search_v4`` holds each session's decision state (as the other views
hold rows); ``agentlog_search_v4_docs`` one row per document *without its text*:
the session's label, ``-seq``, the order key's other parts (``doc_tokens``,
``neg_time``) and ``flags`` (type code, surface class, whether the time is a
number), under two unique indexes: the order key, and the session then the key.
A session id is stored once, in ``agentlog_search_v4_sessions`` beside its
*label*: an integer that sorts as the id does (``session_labels``), so the order
key compares labels in SQL and each document row carries a few bytes instead of
the id (three copies of a 36-character UUID were most of a document's row); a
type is stored once in ``agentlog_search_v4_types``. ``agentlog_search_v4_fts``
is a contentless FTS5 index (``unicode61``, diacritics kept, no column sizes;
rowid = the document's id) of the text with lone surrogates as U+FFFD and NUL
as a space — both separators, for FTS5 and for ``domain.search_text`` alike, so
matching is the same. Documents, states and the tracking position change in one
transaction.

A contentless table forgets a row only given the exact text it indexed: the
texts are recomputed from the session's stored events (``SearchView.texts``)
and checked against the session's ``text_sum``. If they differ (the extractor
changed, or the log cannot be read) the rows are dropped from the documents
table, which every query joins, and the index is marked stale: the next search
rebuilds it (docs/search.md#the-index).
"""

from __future__ import annotations

import json
import logging
import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from eventsourcing.sqlite import SQLiteCursor

from agentlog.application.search_index import (
    SURFACES,
    Bounds,
    IndexedDocument,
    IndexQuery,
    SearchChanges,
    SearchState,
    SearchView,
    text_sum,
)
from agentlog.application.search_match import (
    OrderKey,
    seq_bound,
    session_bound,
    time_bound,
    time_key,
    token_count,
)
from agentlog.domain.search_text import tokens
from agentlog.infrastructure.views import decode_text, encode_text, write_tracked
from agentlog.infrastructure.views.session_labels import (
    LABELS,
    TABLE_STATEMENT,
    forget_label,
    label_bound,
    label_of,
)
from agentlog.infrastructure.views.sqlite import SQLiteView
from agentlog.infrastructure.views.word_pairs import (
    choose_common,
    pairs_phrase,
    pairs_text,
)

if TYPE_CHECKING:
    from collections.abc import (
        Callable,
        Collection,
        Generator,
        Iterator,
        Mapping,
        Sequence,
    )

    from eventsourcing.persistence import Tracking

log = logging.getLogger(__name__)
_UNSAFE = re.compile("[\x00\ud800-\udfff]")
DOCS = "agentlog_search_v4_docs"
FTS = "agentlog_search_v4_fts"
META = "agentlog_search_v4_meta"
TYPES = "agentlog_search_v4_types"
IDS = "temp.agentlog_search_ids"
KEY = "d.doc_tokens, d.neg_time, d.label, d.neg_seq"
_COLUMNS = "s.session_id, d.neg_seq, d.flags, d.doc_tokens, d.neg_time, d.id"
_SOURCE = f"{DOCS} AS d JOIN {LABELS} AS s ON s.label = d.label"
Source = Literal["ids", "all", "walk", "join"]
WALK_BUDGET = 4096
"""Documents a walk tests before it reads the matches sorted instead: about
40 ms of tests (docs/search.md#how-a-page-is-answered)."""
_WALK_CHUNK = 1024
_STREAM_BATCH = 32
"""Rows fetched at a time after the first batch: few, so a stopped walk has
tested few documents it did not need."""
_LABEL_OF = f"SELECT label FROM {LABELS} WHERE session_id = ?"
_LABELS_OF_IDS = (
    f"SELECT s2.label FROM {IDS} AS i JOIN {LABELS} AS s2 ON s2.session_id = i.id"
)
_OLD = tuple(
    f"agentlog_search_v{version}{part}"
    for version in (1, 2, 3)
    for part in ("_fts", "_docs", "_meta", "_sessions", "_types", "")
)
PAIRS_AFTER = 10_000
"""The common words are chosen when this many documents are indexed, from
them; every later document gets its pairs (docs/search.md#the-index)."""


def fts_body(text: str) -> str:
    """Text SQLite can hold: NUL a space, a lone surrogate U+FFFD (both separators)."""
    return _UNSAFE.sub(lambda m: " " if m.group() == "\x00" else "\ufffd", text)


def fts_phrase(phrase: Sequence[str], column: str = "body") -> str:
    """The FTS5 query: tokens are letter/digit runs (pair tokens add ``ǂ``), so
    one quoted phrase of them, in one column, holds no operator."""
    return "{" + column + '} : "' + " ".join(phrase) + '"'


@dataclass(frozen=True, slots=True)
class Pairs:
    """The index's common words, and the first document id that has pairs."""

    common: frozenset[str]
    after: int

    def column(self, doc_id: int, text: str) -> str:
        """The ``pairs`` column of a document (as it was indexed)."""
        if doc_id <= self.after or not self.common:
            return ""
        return pairs_text(tokens(text), self.common)

    def expression(self, phrase: Sequence[str]) -> str | None:
        found = pairs_phrase(phrase, self.common)
        return None if found is None else fts_phrase(found, "pairs")


def _pairs(c: SQLiteCursor) -> Pairs | None:
    """The common words once chosen (``None`` before)."""
    c.execute(f"SELECT name, value FROM {META} WHERE name IN ('common', 'pairs')")
    rows = dict(c.fetchall())
    if "pairs" not in rows:
        return None
    return Pairs(frozenset(json.loads(rows["common"])), int(rows["pairs"]))


def _choose_pairs(c: SQLiteCursor, doc_id: int) -> Pairs:
    """Choose the common words from the documents indexed so far (each word's
    document count, from FTS5's own vocabulary) and record them."""
    c.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.agentlog_search_terms "
        f"USING fts5vocab(main, {FTS}, 'col')"
    )
    c.execute("SELECT term, doc FROM temp.agentlog_search_terms WHERE col = 'body'")
    counts = [
        (term, int(count))
        for term, count in c.fetchall()
        if term.isascii() and term.isalnum()
    ]
    c.execute(f"SELECT count(*) FROM {DOCS}")
    common = choose_common(counts, int(c.fetchone()[0]))
    c.executemany(
        f"INSERT OR REPLACE INTO {META} (name, value) VALUES (?, ?)",
        [("common", json.dumps(common)), ("pairs", doc_id)],
    )
    return Pairs(frozenset(common), doc_id)


def _lookups(
    c: SQLiteCursor, phrase: Sequence[str]
) -> tuple[str, tuple[str, int] | None]:
    """The phrase's FTS5 query on the text, and on the pairs with the id after
    which documents have them (``None``: the phrase is not one of pairs)."""
    pairs = _pairs(c)
    by_pairs = None if pairs is None else pairs.expression(phrase)
    if pairs is None or by_pairs is None:
        return fts_phrase(phrase), None
    return fts_phrase(phrase), (by_pairs, pairs.after)


def _matches(c: SQLiteCursor, phrase: Sequence[str]) -> tuple[str, list[Any]]:
    """The ids (column ``id``) of the documents holding the phrase: found by
    their pairs where they have them and the phrase has some, else by text."""
    body, pairs = _lookups(c, phrase)
    if pairs is None:
        return f"SELECT rowid AS id FROM {FTS} WHERE {FTS} MATCH ?", [body]
    by_pairs, after = pairs
    sql = (
        f"SELECT rowid AS id FROM {FTS} WHERE {FTS} MATCH ? AND rowid > ? "
        f"UNION ALL SELECT rowid AS id FROM {FTS} WHERE {FTS} MATCH ? AND rowid <= ?"
    )
    return sql, [by_pairs, after, body, after]


def _test(c: SQLiteCursor, phrase: Sequence[str], doc_id: str) -> tuple[str, list[Any]]:
    """An SQL test that the document ``doc_id`` holds the phrase (as _matches)."""
    body, pairs = _lookups(c, phrase)
    if pairs is None:
        sql = f"EXISTS (SELECT 1 FROM {FTS} WHERE {FTS} MATCH ? AND rowid = {doc_id})"
        return sql, [body]
    by_pairs, after = pairs
    sql = (
        f"EXISTS (SELECT 1 FROM {FTS} WHERE {FTS} MATCH "
        f"(CASE WHEN {doc_id} > ? THEN ? ELSE ? END) AND rowid = {doc_id})"
    )
    return sql, [after, by_pairs, body]


def _flags(type_code: int, surface: int, timed: bool) -> int:
    """One column for three small values: ``type code << 3 | surface << 1 | timed``."""
    return type_code << 3 | surface << 1 | int(timed)


def _document(record: Sequence[Any], types: Mapping[int, str]) -> IndexedDocument:
    session_id, neg_seq, flags, doc_tokens, neg_time, number = record
    return IndexedDocument(
        decode_text(session_id),
        -neg_seq,
        types[flags >> 3],
        SURFACES[flags >> 1 & 3],
        doc_tokens,
        float(neg_time),
        number,
    )


class SQLiteSearchView(SQLiteView[SearchState], SearchView):
    """States, documents and their FTS5 index in the events' database."""

    view_name = "search.v4"
    table_name = "agentlog_search_v4"

    def index_statements(self) -> list[str]:
        drops = [f"DROP TABLE IF EXISTS {name}" for name in _OLD]
        return [
            *drops,
            "DELETE FROM tracking WHERE application_name LIKE '%#search.v1' "
            "OR application_name LIKE '%#search.v2' "
            "OR application_name LIKE '%#search.v3'",
            f"CREATE TABLE IF NOT EXISTS {DOCS} ("
            "id INTEGER PRIMARY KEY AUTOINCREMENT, label INTEGER NOT NULL, "
            "neg_seq INTEGER NOT NULL, doc_tokens INTEGER NOT NULL, "
            "neg_time REAL NOT NULL, flags INTEGER NOT NULL)",
            f"CREATE UNIQUE INDEX IF NOT EXISTS {DOCS}_key ON {DOCS} "
            "(doc_tokens, neg_time, label, neg_seq)",
            f"CREATE UNIQUE INDEX IF NOT EXISTS {DOCS}_session ON {DOCS} "
            "(label, doc_tokens, neg_time, neg_seq)",
            TABLE_STATEMENT,
            f"CREATE TABLE IF NOT EXISTS {TYPES} "
            "(code INTEGER PRIMARY KEY, type BLOB NOT NULL UNIQUE)",
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS} USING fts5(body, pairs, "
            "content='', columnsize=0, tokenize='unicode61 remove_diacritics 0')",
            f"CREATE TABLE IF NOT EXISTS {META} "
            "(name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
        ]

    def _decode(self, record: Sequence[Any]) -> SearchState:
        state = super()._decode(record)
        return SearchState(
            state.session_id,
            state.next_seq,
            state.surface,
            bool(state.broken),
            state.text_sum or 0,
        )

    # -------------------------------------------------------------- writes

    def apply(
        self,
        keys: Collection[str],
        change: Callable[[dict[str, SearchState]], SearchChanges],
        tracking: Tracking,
    ) -> bool:
        def write(c: SQLiteCursor) -> None:
            states = self._select(c, keys)
            self._write(c, change(dict(states)), states)

        return write_tracked(self, tracking, write)

    def _write(
        self,
        c: SQLiteCursor,
        changes: SearchChanges,
        states: dict[str, SearchState],
    ) -> None:
        for session_id in changes.dropped:
            self._forget(c, session_id, states.get(session_id))
        if changes.erased:
            self.purge(changes.erased, c)
        if changes.states:
            c.executemany(self._upsert_sql, [self._encode(s) for s in changes.states])
        labels: dict[str, int] = {}
        codes: dict[str, int] = {}
        pairs = _pairs(c)
        for doc in changes.documents:
            label = label_of(c, doc.session_id, DOCS, labels)
            flags = _flags(
                _type_code(c, doc.type, codes),
                SURFACES.index(doc.surface),
                type(doc.time) in (int, float),
            )
            c.execute(
                f"INSERT INTO {DOCS} (label, neg_seq, doc_tokens, neg_time, flags) "
                "VALUES (?, ?, ?, ?, ?)",
                (label, -doc.seq, token_count(doc.text), time_key(doc.time), flags),
            )
            doc_id = int(c.lastrowid)
            column = "" if pairs is None else pairs.column(doc_id, doc.text)
            c.execute(
                f"INSERT INTO {FTS} (rowid, body, pairs) VALUES (?, ?, ?)",
                (doc_id, fts_body(doc.text), column),
            )
            if pairs is None and doc_id >= PAIRS_AFTER:
                pairs = _choose_pairs(c, doc_id)
        shadowed: dict[str, list[int]] = {}
        for session_id, seq in changes.shadowed:
            shadowed.setdefault(session_id, []).append(-seq)
        shadow = SURFACES.index("shadowed") << 1
        for session_id, seqs in shadowed.items():
            c.execute(
                f"UPDATE {DOCS} SET flags = flags & ~6 | {shadow} WHERE label = "
                f"({_LABEL_OF}) AND neg_seq IN (SELECT value FROM json_each(?))",
                (encode_text(session_id), json.dumps(seqs)),
            )

    def _forget(
        self, c: SQLiteCursor, session_id: str, state: SearchState | None
    ) -> None:
        """Drop one session's documents, naming each FTS row's text to forget it."""
        key = encode_text(session_id)
        c.execute(f"SELECT id, neg_seq FROM {DOCS} WHERE label = ({_LABEL_OF})", (key,))
        rows = [(row[0], -row[1]) for row in c.fetchall()]
        if rows:
            texts = None if self.texts is None else self.texts(session_id)
            kept = None
            if texts is not None:
                kept = {seq: texts[seq] for _, seq in rows if seq in texts}
            expected = 0 if state is None else state.text_sum
            if (
                kept is not None
                and len(kept) == len(rows)
                and (text_sum(kept) == expected)
            ):
                pairs = _pairs(c)
                c.executemany(
                    f"INSERT INTO {FTS} ({FTS}, rowid, body, pairs) "
                    "VALUES ('delete', ?, ?, ?)",
                    [
                        (
                            rowid,
                            fts_body(kept[seq]),
                            "" if pairs is None else pairs.column(rowid, kept[seq]),
                        )
                        for rowid, seq in rows
                    ],
                )
            else:
                log.warning(
                    "search index: the texts of session %r changed since indexed; "
                    "its rows stay in the full-text index until a rebuild",
                    session_id,
                )
                c.execute(
                    f"INSERT INTO {META} (name, value) VALUES ('stale', 1) "
                    "ON CONFLICT (name) DO UPDATE SET value = 1"
                )
        c.execute(f"DELETE FROM {DOCS} WHERE label = ({_LABEL_OF})", (key,))

    def purge(self, session_ids: Collection[str], cursor: Any = None) -> None:
        def run(c: SQLiteCursor) -> None:
            states = self._select(c, session_ids)
            for session_id in sorted(session_ids):
                self._forget(c, session_id, states.get(session_id))
                forget_label(c, session_id)
                c.execute(
                    f"DELETE FROM {self.table_name} WHERE session_id = ?",
                    (encode_text(session_id),),
                )

        if cursor is not None:
            run(cursor)
            return
        with self.datastore.transaction(commit=True) as c:
            run(c)

    def optimize(self) -> None:
        # One segment instead of many: a walk's per-document test of the index
        # costs several times less (docs/search.md#figures).
        with self.datastore.transaction(commit=True) as c:
            c.execute(f"INSERT INTO {FTS} ({FTS}) VALUES ('optimize')")

    def stale(self) -> bool:
        with self.datastore.transaction(commit=False) as c:
            c.execute(f"SELECT value FROM {META} WHERE name = 'stale'")
            row = c.fetchone()
            return row is not None and bool(row[0])

    # --------------------------------------------------------------- reads

    def select_ids(self, phrase: Sequence[str], limit: int | None) -> list[int]:
        # One JSON array, not a row per id: 20,000 ids cost 1 ms, not 14.
        with self.datastore.transaction(commit=False) as c:
            matches, params = _matches(c, phrase)
            sql = f"SELECT json_group_array(id) FROM ({matches} LIMIT ?)"
            c.execute(sql, [*params, -1 if limit is None else limit])
            ids: list[int] = json.loads(c.fetchone()[0])
            return ids

    def ranked(
        self,
        query: IndexQuery,
        *,
        ids: Sequence[int] | None,
        session_id: str | None = None,
        after: OrderKey | None = None,
        upto: OrderKey | None = None,
        limit: int,
        test: bool = True,
    ) -> list[IndexedDocument]:
        with self.datastore.transaction(commit=False) as c:
            source = _source(test, ids)
            bounds = (session_id, after, upto)
            sql, params = self._query(c, query, source, bounds, ids)
            c.execute(f"{sql} LIMIT ?", [*params, limit])
            records = c.fetchall()
            types = _types(c) if records else {}
            return [_document(tuple(r), types) for r in records]

    @contextmanager
    def reading(self) -> Iterator[Any]:
        with self.datastore.transaction(commit=False) as c:
            yield c.sqlite_cursor.connection

    def read_stream(
        self,
        reader: Any,
        query: IndexQuery,
        ids: Sequence[int] | None,
        bounds: Bounds,
        test: bool,
        batch: int,
    ) -> Generator[IndexedDocument, None, None]:
        # Its own cursor on the page's connection: streams may interleave (a
        # session's check runs while the page's rows are read).
        with SQLiteCursor(reader.cursor()) as raw:
            c = SQLiteCursor(raw)
            types = _types(c)
            if test and ids is None:
                yield from self._walk(raw, types, query, bounds, batch)
                return
            sql, params = self._query(c, query, _source(test, ids), bounds, ids)
            raw.execute(sql, params)
            # The database does a row's work when it is fetched: reading stops
            # as soon as the caller stops.
            while records := raw.fetchmany(batch):
                for record in records:
                    yield _document(tuple(record), types)
                batch = _STREAM_BATCH

    def _walk(
        self,
        raw: Any,
        types: Mapping[int, str],
        query: IndexQuery,
        bounds: Bounds,
        chunk: int,
    ) -> Generator[IndexedDocument, None, None]:
        """Documents in key order, each tested against the full-text index, a
        chunk at a time; past :data:`WALK_BUDGET` tested documents, the rest
        are read the other way round: every match from the full-text index,
        sorted (docs/search.md#how-a-page-is-answered).

        A walk is fast when matches are dense among the short documents it
        meets first, and hopeless when they sit in long ones (a phrase of common
        words found mostly in code: 420,000 tests for one page); sorting costs
        about as much as the phrase has matches. Spending at most the budget on
        the walk bounds the bad case by the sort's cost.
        """
        session_id, after, upto = bounds
        c = SQLiteCursor(raw)
        test, test_params = _test(c, query.phrase, "w.id")
        tested = 0
        chunk = max(chunk, 16)
        sets = True  # the session sets are written once, by the first query
        while tested < WALK_BUDGET:
            bounds = (session_id, after, upto)
            sql, params = self._query(c, query, "all", bounds, sets=sets)
            sets = False
            raw.execute(
                f"SELECT w.*, {test} FROM ({sql} LIMIT ?) AS w "
                "ORDER BY w.doc_tokens, w.neg_time, w.session_id, w.neg_seq",
                [*test_params, *params, chunk],
            )
            records = raw.fetchall()
            for record in records:
                if record[-1]:
                    yield _document(tuple(record[:-1]), types)
            if len(records) < chunk:
                return
            tested += len(records)
            after = _document(tuple(records[-1][:-1]), types).key
            chunk = min(chunk * 2, _WALK_CHUNK)
        bounds = (session_id, after, upto)
        sql, params = self._query(c, query, "join", bounds, sets=sets)
        raw.execute(sql, params)
        while records := raw.fetchmany(_STREAM_BATCH):
            for record in records:
                yield _document(tuple(record), types)

    def _query(
        self,
        c: SQLiteCursor,
        query: IndexQuery,
        source: Source,
        bounds: Bounds,
        ids: Sequence[int] | None = None,
        *,
        sets: bool = True,
    ) -> tuple[str, list[Any]]:
        """The documents' query in the search order (no limit), and its
        parameters; the session sets are written to their temporary table.

        ``ids``: the documents with these ids (a few matches drive the query);
        ``all``: every document (the caller tests them); ``walk``: every
        document, each tested against the full-text index; ``join``: every
        match of the full-text index. ``sets=False``: the session sets were
        written already in this transaction."""
        session_id, after, upto = bounds
        params: list[Any] = []
        if source == "ids":
            # CROSS JOIN keeps the ids outer.
            tables = (
                f"json_each(?) AS m CROSS JOIN {DOCS} AS d ON d.id = m.value "
                f"JOIN {LABELS} AS s ON s.label = d.label"
            )
            params.append(json.dumps(list(ids or ())))
            where = ["1"]
        elif source == "join":
            matches, params = _matches(c, query.phrase)
            tables = (
                f"({matches}) AS f CROSS JOIN {DOCS} AS d ON d.id = f.id "
                f"JOIN {LABELS} AS s ON s.label = d.label"
            )
            where = ["1"]
        elif source == "walk":
            tables = _SOURCE
            test, params = _test(c, query.phrase, "d.id")
            where = [test]
        else:
            tables = _SOURCE
            where = ["1"]
        if session_id is not None:
            where.append(f"d.label = ({_LABEL_OF})")
            params.append(encode_text(session_id))
            for bound, op in ((after, ">"), (upto, "<=")):
                if bound is not None:
                    length, moment, _, neg_seq = session_bound(bound, session_id)
                    columns = "d.doc_tokens, d.neg_time, d.neg_seq"
                    where.append(f"({columns}) {op} (?, ?, ?)")
                    params += [length, moment, neg_seq]
        else:
            for bound, op in ((after, ">"), (upto, "<=")):
                if bound is not None:
                    length, moment, key_session, neg_seq = bound
                    label, neg_seq = label_bound(c, key_session, neg_seq)
                    where.append(f"({KEY}) {op} (?, ?, ?, ?)")
                    params += [length, moment, label, neg_seq]
        where += _filters(query, params)
        if sets:
            self._session_sets(c, query)
        sql = (
            f"SELECT {_COLUMNS} FROM {tables} WHERE {' AND '.join(where)} "
            f"ORDER BY {KEY}"
        )
        return sql, params

    @staticmethod
    def _session_sets(c: SQLiteCursor, query: IndexQuery) -> None:
        """The allowed and excluded sessions as a temporary table (this read
        transaction's; it rolls back with it)."""
        if query.sessions is None and not query.excluded:
            return
        c.execute(
            "CREATE TEMP TABLE IF NOT EXISTS agentlog_search_ids "
            "(allowed INTEGER NOT NULL, id BLOB NOT NULL, "
            "PRIMARY KEY (allowed, id)) WITHOUT ROWID"
        )
        c.executemany(
            f"INSERT OR IGNORE INTO {IDS} VALUES (?, ?)",
            [(1, encode_text(s)) for s in query.sessions or ()]
            + [(0, encode_text(s)) for s in query.excluded],
        )

    def last_id(self) -> int:
        with self.datastore.transaction(commit=False) as c:
            c.execute(f"SELECT max(id) FROM {DOCS}")
            return int(c.fetchone()[0] or 0)

    def documents(self) -> list[IndexedDocument]:
        with self.datastore.transaction(commit=False) as c:
            order = "d.label, d.neg_seq DESC"
            c.execute(f"SELECT {_COLUMNS} FROM {_SOURCE} ORDER BY {order}")
            records = c.fetchall()
            types = _types(c)
            return [_document(tuple(r), types) for r in records]

    def fts_integrity(self) -> None:
        """FTS5's own check of the index against the documents' rowids
        (raises if a row it holds is corrupt); for tests and tools."""
        with self.datastore.transaction(commit=False) as c:
            c.execute(f"INSERT INTO {FTS} ({FTS}, rank) VALUES ('integrity-check', 0)")

    def fts_rows(self) -> int:
        """How many documents the FTS5 index holds (its tokens' distinct rowids)."""
        with self.datastore.transaction(commit=False) as c:
            c.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.agentlog_search_vocab "
                f"USING fts5vocab(main, {FTS}, 'instance')"
            )
            c.execute("SELECT count(DISTINCT doc) FROM temp.agentlog_search_vocab")
            return int(c.fetchone()[0])

    def clear(self, application_name: str) -> None:
        with self.datastore.transaction(commit=True) as c:
            c.execute(f"INSERT INTO {FTS} ({FTS}) VALUES ('delete-all')")
            c.execute(f"DELETE FROM {DOCS}")
            c.execute(f"DELETE FROM {LABELS}")
            c.execute(f"DELETE FROM {TYPES}")
            # Ids restart: a rebuild numbers the documents as the first pass did.
            c.execute("DELETE FROM sqlite_sequence WHERE name = ?", (DOCS,))
            c.execute(f"DELETE FROM {META}")
            c.execute(f"DELETE FROM {self.table_name}")
            c.execute(
                "DELETE FROM tracking WHERE application_name = ?",
                (self.tracking_key(application_name),),
            )


def _filters(query: IndexQuery, params: list[Any]) -> list[str]:
    """The event filter's columns and the session sets as SQL (``params`` grows)."""
    wanted = query.wanted
    where: list[str] = []
    if wanted.seq_from is not None:
        where.append("d.neg_seq <= ?")
        params.append(seq_bound(-wanted.seq_from))
    if wanted.seq_to is not None:
        where.append("d.neg_seq >= ?")
        params.append(seq_bound(-wanted.seq_to))
    if wanted.time_from is not None or wanted.time_to is not None:
        where.append("d.flags & 1")
    if wanted.time_from is not None:
        where.append("-d.neg_time >= ?")
        params.append(time_bound(wanted.time_from))
    if wanted.time_to is not None:
        where.append("-d.neg_time <= ?")
        params.append(time_bound(wanted.time_to))
    if wanted.types is not None:
        marks = ", ".join("?" for _ in wanted.types)
        where.append(
            f"d.flags >> 3 IN (SELECT code FROM {TYPES} WHERE type IN ({marks}))"
        )
        params += [encode_text(kind) for kind in wanted.types]
    if wanted.surfaces is not None:
        codes = sorted({SURFACES.index(surface) for surface in wanted.surfaces})
        where.append(f"d.flags >> 1 & 3 IN ({', '.join(str(code) for code in codes)})")
    if query.snapshot is not None:
        where.append("d.id <= ?")
        params.append(query.snapshot)
    if query.sessions is not None:
        where.append(f"d.label IN ({_LABELS_OF_IDS} WHERE i.allowed = 1)")
    if query.excluded:
        where.append(f"d.label NOT IN ({_LABELS_OF_IDS} WHERE i.allowed = 0)")
    return where


def _source(test: bool, ids: Sequence[int] | None) -> Source:
    if not test:
        return "all"
    return "walk" if ids is None else "ids"


def _type_code(c: SQLiteCursor, kind: str, known: dict[str, int]) -> int:
    """The type's code in :data:`TYPES`, added on first use."""
    if kind not in known:
        key = encode_text(kind)
        c.execute(f"INSERT OR IGNORE INTO {TYPES} (type) VALUES (?)", (key,))
        c.execute(f"SELECT code FROM {TYPES} WHERE type = ?", (key,))
        known[kind] = int(c.fetchone()[0])
    return known[kind]


def _types(c: SQLiteCursor) -> dict[int, str]:
    """Every type code (a handful), read with the rows that use them."""
    c.execute(f"SELECT code, type FROM {TYPES}")
    return {int(code): decode_text(kind) for code, kind in c.fetchall()}


SEARCH_VIEW = SQLiteSearchView
