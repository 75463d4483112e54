"""The SQLite search view: its states, its schema and how a page is read.

``agentlog_search_v5`` holds each session's decision state (as the other views
hold rows); the documents, their full-text index and the index's metadata are
the tables of ``search_index_writes``. A session id is stored once, in
``agentlog_search_v5_sessions`` beside its *label*: an integer that sorts as
the id does (``session_labels``), so the order key compares labels in SQL and
each document row carries a few bytes instead of the id. The document rows are
ordered by two unique indexes: the order key, and the session then the key.
FTS5 matches exactly what the scan matches (``search_tokens``), and lists a
phrase's matches by band, the order's first part. Documents, states and the
tracking position change in one transaction.

A contentless table forgets a row only given the exact text it indexed: the
texts are recomputed from the session's stored events (``SearchView.texts``)
and checked against the session's ``text_sum``. If they differ (the extractor
changed, or the log cannot be read) the indexed columns are rebuilt from FTS5's
own terms (``fts5vocab``), so the rows are forgotten all the same, and the index
is marked stale: the next search rebuilds it (docs/search.md#the-index).
"""

from __future__ import annotations

import json
import logging
from contextlib import closing, contextmanager
from itertools import islice
from math import isqrt
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
    session_bound,
    time_key,
    token_count,
)
from agentlog.domain.search_text import TOKEN_RULE
from agentlog.infrastructure.backends.sqlite import search_tokens
from agentlog.infrastructure.backends.sqlite.search_index_writes import (
    DOCS,
    FTS,
    META,
    TYPES,
    band_size,
    choose_pairs,
    drop_vanished_common,
    flags_of,
    fts_row,
    index_texts,
    indexed_columns,
    next_id,
    read_pairs,
    type_code,
)
from agentlog.infrastructure.backends.sqlite.search_matches import (
    HashedLookup,
    Lookup,
    TextLookup,
)
from agentlog.infrastructure.backends.sqlite.search_rows import (
    IDS,
    LabelledRows,
    document_of,
    filter_clauses,
    type_names,
)
from agentlog.infrastructure.backends.sqlite.search_tokens import (
    band_ids,
    band_of,
    band_of_id,
)
from agentlog.infrastructure.backends.sqlite.session_labels import (
    LABELS,
    TABLE_STATEMENT,
    forget_label,
    label_bound,
    label_of,
)
from agentlog.infrastructure.backends.sqlite.views import SQLiteView
from agentlog.infrastructure.views import decode_text, encode_text, write_tracked

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
KEY = "d.doc_tokens, d.neg_time, d.label, d.neg_seq"
_COLUMNS = "d.neg_seq, d.flags, d.doc_tokens, d.neg_time, d.id, d.number"
_LABELLED = f"s.session_id AS who, {_COLUMNS}"
_UNLABELLED = f"d.label AS who, {_COLUMNS}"
_JOIN_LABELS = f"JOIN {LABELS} AS s ON s.label = d.label"
_SOURCE = f"{DOCS} AS d {_JOIN_LABELS}"
Source = Literal["ids", "all", "join"]
GATHER = 256
"""A band's matches read into Python, then sorted by their ids; a band with
more is counted in SQL and joined there or walked: fewer Python objects, so
fewer garbage collections in a page's slowest cases."""
BAND_SORT = 2048
"""A band with at most this many matches is read sorted; one with more is walked
unless it has at most ``sqrt(SORT_RATIO × its documents)`` matches
(docs/search.md#how-a-page-is-answered)."""
SORT_RATIO = 100
"""A walk finds a page's 21 hits in a band of ``n`` documents and ``m`` matches
after about ``21 n / m`` tests; sorting costs a fraction of a test per match, so
sorting is the cheaper while ``m² < SORT_RATIO × n`` (the measured ratio:
docs/search-figures.md#the-search-codes-constants)."""
WALK_BUDGET = 4096
"""Documents a band's walk tests before it reads the band's matches sorted
instead (docs/search-figures.md#the-search-codes-constants)."""
_WALK_CHUNK = 1024
_STREAM_BATCH = 32
"""Rows fetched at a time after the first batch: few, so a stopped walk has
tested few documents it did not need."""
_LABEL_OF = f"SELECT label FROM {LABELS} WHERE session_id = ?"
_OLD = tuple(
    f"agentlog_search_v{version}{part}"
    for version in (1, 2, 3, 4)
    for part in ("_fts", "_docs", "_meta", "_sessions", "_types", "")
)
_STALE_IF = "('stale', 'numbered', 'tokens', 'hashed')"
PAIRS_AFTER = 10_000
"""The common words are chosen when this many documents are indexed, from
them; every later document gets its pairs (docs/search.md#the-index)."""


class SQLiteSearchView(SQLiteView[SearchState], SearchView):
    """States, documents and their FTS5 index in the events' database."""

    view_name = "search.v5"
    table_name = "agentlog_search_v5"
    lists_in_order = True

    def index_statements(self) -> list[str]:
        drops = [f"DROP TABLE IF EXISTS {name}" for name in _OLD]
        return [
            *drops,
            "DELETE FROM tracking WHERE application_name LIKE '%#search.v1' "
            "OR application_name LIKE '%#search.v2' "
            "OR application_name LIKE '%#search.v3' "
            "OR application_name LIKE '%#search.v4'",
            f"CREATE TABLE IF NOT EXISTS {DOCS} ("
            "id INTEGER PRIMARY KEY, number INTEGER NOT NULL, label INTEGER NOT NULL, "
            "neg_seq INTEGER NOT NULL, doc_tokens INTEGER NOT NULL, "
            "neg_time REAL NOT NULL, flags INTEGER NOT NULL)",
            # Type and surface ride along, so a walk rejects rows by them
            # before it reads the row; `number` is left out, it made the index
            # larger and the catch-up slower for no faster walk
            # (docs/search-figures.md#the-search-codes-constants).
            f"CREATE UNIQUE INDEX IF NOT EXISTS {DOCS}_key ON {DOCS} "
            "(doc_tokens, neg_time, label, neg_seq, flags)",
            f"CREATE UNIQUE INDEX IF NOT EXISTS {DOCS}_session ON {DOCS} "
            "(label, doc_tokens, neg_time, neg_seq, flags)",
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
        hashers = None
        if self.hashing is not None and changes.documents:
            # A session stored before encryption was on gets its key here.
            ids = {doc.session_id for doc in changes.documents}
            hashers = self.hashing.hashers(ids, create=True)
        pairs = read_pairs(c)
        number = self._numbered(c)
        slots: dict[int, int] = {}
        texts: list[tuple[int, str, str]] = []
        for doc in changes.documents:
            label = label_of(c, doc.session_id, DOCS, labels)
            flags = flags_of(
                type_code(c, doc.type, codes),
                SURFACES.index(doc.surface),
                type(doc.time) in (int, float),
            )
            doc_tokens = token_count(doc.text)
            doc_id = next_id(c, band_of(doc_tokens), slots)
            number += 1
            row = (doc_id, number, label, -doc.seq, doc_tokens, time_key(doc.time))
            c.execute(
                f"INSERT INTO {DOCS} (id, number, label, neg_seq, doc_tokens, "
                "neg_time, flags) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (*row, flags),
            )
            hasher = None if hashers is None else hashers[doc.session_id]
            texts.append((doc_id, *fts_row(pairs, number, doc.text, hasher)))
            # Common words would be plaintext: a hashed index has no pairs.
            if pairs is None and number >= PAIRS_AFTER and hashers is None:
                index_texts(c, texts)
                pairs = choose_pairs(c, number)
        index_texts(c, texts)
        if changes.documents:
            c.executemany(
                f"INSERT OR REPLACE INTO {META} (name, value) VALUES (?, ?)",
                [
                    ("numbered", number),
                    ("tokens", TOKEN_RULE),
                    ("hashed", int(self.hashing is not None)),
                ],
            )
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
        c.execute(
            f"SELECT id, neg_seq, number FROM {DOCS} WHERE label = ({_LABEL_OF})",
            (key,),
        )
        # By id, as FTS5 takes them without writing a segment each (see
        # index_texts).
        rows = sorted((row[0], -row[1], row[2]) for row in c.fetchall())
        if rows:
            texts = None if self.texts is None else self.texts(session_id)
            kept = None
            hasher = None
            if self.hashing is not None and texts is not None:
                hasher = self.hashing.hashers([session_id]).get(session_id)
                texts = None if hasher is None else texts
            if texts is not None:
                kept = {seq: texts[seq] for _, seq, _ in rows if seq in texts}
            expected = 0 if state is None else state.text_sum
            if (
                kept is not None
                and len(kept) == len(rows)
                and (text_sum(kept) == expected)
            ):
                pairs = read_pairs(c)
                c.executemany(
                    f"INSERT INTO {FTS} ({FTS}, rowid, body, pairs) "
                    "VALUES ('delete', ?, ?, ?)",
                    [
                        (rowid, *fts_row(pairs, number, kept[seq], hasher))
                        for rowid, seq, number in rows
                    ],
                )
            else:
                log.warning(
                    "search index: the texts of session %r changed since indexed "
                    "or cannot be read; its rows are forgotten by the index's own "
                    "terms, and the index is rebuilt at the next search",
                    session_id,
                )
                c.execute(
                    f"INSERT INTO {META} (name, value) VALUES ('stale', 1) "
                    "ON CONFLICT (name) DO UPDATE SET value = 1"
                )
                indexed = indexed_columns(c, [rowid for rowid, _, _ in rows])
                c.executemany(
                    f"INSERT INTO {FTS} ({FTS}, rowid, body, pairs) "
                    "VALUES ('delete', ?, ?, ?)",
                    [(rowid, *indexed.get(rowid, ("", ""))) for rowid, _, _ in rows],
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
            drop_vanished_common(c)

        if cursor is not None:
            run(cursor)
            return
        with self.datastore.transaction(commit=True) as c:
            run(c)

    def optimize(self) -> None:
        # One segment instead of many: a walk's per-document test of the index
        # costs less (docs/search-figures.md).
        with self.datastore.transaction(commit=True) as c:
            c.execute(f"INSERT INTO {FTS} ({FTS}) VALUES ('optimize')")

    def stale(self) -> bool:
        """Documents could not be forgotten, or were split by another token rule
        (an index older than the rule's record counts as rule 1), or hashed
        when encryption is off or not hashed when it is on."""
        with self.datastore.transaction(commit=False) as c:
            c.execute(f"SELECT name, value FROM {META} WHERE name IN {_STALE_IF}")
            meta = dict(c.fetchall())
            hashed = int(self.hashing is not None)
            return bool(meta.get("stale")) or (
                "numbered" in meta
                and (
                    meta.get("tokens", 1) != TOKEN_RULE
                    or meta.get("hashed", 0) != hashed
                )
            )

    @staticmethod
    def _numbered(c: SQLiteCursor) -> int:
        """How many documents were ever indexed (each is numbered in turn)."""
        c.execute(f"SELECT value FROM {META} WHERE name = 'numbered'")
        row = c.fetchone()
        return 0 if row is None else int(row[0])

    # --------------------------------------------------------------- reads

    def select_ids(
        self,
        phrase: Sequence[str],
        limit: int | None,
        sessions: Collection[str] | None = None,
    ) -> list[int]:
        # One JSON array, not a row per id: far cheaper for many ids.
        with self.datastore.transaction(commit=False) as c:
            lookup = self._lookup(c, phrase, sessions)
            sql = f"SELECT json_group_array(id) FROM ({lookup.matches()} LIMIT ?)"
            c.execute(sql, [*lookup.params, -1 if limit is None else limit])
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
        # One batch of the page's own reads (bands, a session's budgeted walk,
        # sorted ids), in a read transaction of its own.
        with self.reading() as reader:
            bounds = (session_id, after, upto)
            rows = self.read_stream(reader, query, ids, bounds, test, limit)
            with closing(rows):
                return list(islice(rows, limit))

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
            types = type_names(c)
            if test and bounds[0] is None:
                lookup = self._query_lookup(c, query, None)
                yield from self._bands(raw, types, query, bounds, batch, lookup)
                return
            if test and ids is None:  # one session, a common phrase
                lookup = self._query_lookup(c, query, bounds[0])
                self._session_sets(c, query)
                with closing(raw.connection.cursor()) as own:
                    names = LabelledRows(own, types)
                    yield from self._walk(
                        raw, names, query, bounds, batch, None, lookup
                    )
                return
            source: Source = "ids" if test else "all"
            sql, params = self._query(c, query, source, bounds, ids)
            raw.execute(sql, params)
            # The database does a row's work when it is fetched: reading stops
            # as soon as the caller stops.
            while records := raw.fetchmany(batch):
                for record in records:
                    yield document_of(tuple(record), types)
                batch = _STREAM_BATCH

    def _bands(
        self,
        raw: Any,
        types: Mapping[int, str],
        query: IndexQuery,
        bounds: Bounds,
        chunk: int,
        lookup: Lookup,
    ) -> Generator[IndexedDocument, None, None]:
        """Every session's matching documents in key order, a band at a time
        (docs/search.md#how-a-page-is-answered).

        The full-text index lists the phrase's matches by id, so by band: the
        bands without a match are never read, and reading stops in the band
        where the caller stops. A band of at most :data:`GATHER` matches is
        read sorted by their ids; a larger one is counted, then joined in SQL
        (:meth:`_joined`) if the sort is the cheaper (:data:`SORT_RATIO`), else
        walked (:meth:`_walk`).
        """
        _, after, upto = bounds
        c = SQLiteCursor(raw)
        self._session_sets(c, query)
        last = search_tokens.BAND_MAX if upto is None else band_of(upto[0])
        band = 0 if after is None else band_of(after[0])

        def since(band: int) -> Bounds:
            # Only the cursor's own band holds keys at or before it.
            start = after if after is not None and band_of(after[0]) == band else None
            return (None, start, upto)

        def sorted_band(found: list[int]) -> Iterator[IndexedDocument]:
            sql, params = self._query(
                c, query, "ids", since(band), found, sets=False, labelled=False
            )
            raw.execute(sql, params)
            return map(names.document, raw.fetchall())

        connection = raw.connection
        with closing(connection.cursor()) as scan, closing(connection.cursor()) as own:
            names = LabelledRows(own, types)
            while band <= last:
                scan.execute(lookup.since(), [*lookup.params, band_ids(band)[0]])
                found: list[int] = []
                for (doc_id,) in iter(scan.fetchone, None):
                    if band_of_id(doc_id) != band:
                        if found:
                            yield from sorted_band(found)
                            found = []
                        band = band_of_id(doc_id)
                        if band > last:
                            return
                    found.append(doc_id)
                    if len(found) > GATHER:
                        break  # a large band: counted, then joined or walked
                else:
                    if found:
                        yield from sorted_band(found)
                    return
                cap = max(BAND_SORT, isqrt(SORT_RATIO * band_size(c, band)))
                c.execute(
                    f"SELECT count(*) FROM ({lookup.matches(band)} LIMIT ?)",
                    [*lookup.params, cap + 1],
                )
                if c.fetchone()[0] > cap:
                    yield from self._walk(
                        raw, names, query, since(band), chunk, band, lookup
                    )
                else:
                    yield from self._joined(
                        raw, names, query, since(band), band, lookup
                    )
                band += 1

    def _walk(
        self,
        raw: Any,
        names: LabelledRows,
        query: IndexQuery,
        bounds: Bounds,
        chunk: int,
        band: int | None,
        lookup: Lookup,
    ) -> Generator[IndexedDocument, None, None]:
        """One band's documents in key order (or, with a session in the
        bounds, that session's), each tested against the full-text index, a
        chunk at a time; past :data:`WALK_BUDGET` tested documents, the
        remaining matches are read sorted instead (:meth:`_joined`).

        A walk is fast when matches are dense among the documents it meets
        first, and hopeless when they come late in the band; sorting costs
        about as much as the band has matches. Spending at most the budget on
        the walk bounds the bad case by the sort's cost.
        """
        session_id, after, upto = bounds
        c = SQLiteCursor(raw)
        test, test_params = lookup.test("w")
        tested = 0
        chunk = max(chunk, 16)
        while tested < WALK_BUDGET:
            bounds = (session_id, after, upto)
            sql, params = self._query(
                c, query, "all", bounds, band=band, sets=False, labelled=False
            )
            raw.execute(
                f"SELECT w.*, {test} FROM ({sql} LIMIT ?) AS w "
                "ORDER BY w.doc_tokens, w.neg_time, w.who, w.neg_seq",
                [*test_params, *params, chunk],
            )
            records = raw.fetchall()
            for record in records:
                if record[-1]:
                    yield names.document(record[:-1])
            if len(records) < chunk:
                return
            tested += len(records)
            after = names.document(records[-1][:-1]).key
            chunk = min(chunk * 2, _WALK_CHUNK)
        bounds = (session_id, after, upto)
        yield from self._joined(raw, names, query, bounds, band, lookup)

    def _joined(
        self,
        raw: Any,
        names: LabelledRows,
        query: IndexQuery,
        bounds: Bounds,
        band: int | None,
        lookup: Lookup,
    ) -> Generator[IndexedDocument, None, None]:
        """A band's matches (or a session's, from every match) in key order:
        the ids from the full-text index joined to their rows and sorted, all
        in SQL."""
        c = SQLiteCursor(raw)
        sql, params = self._query(
            c,
            query,
            "join",
            bounds,
            band=band,
            sets=False,
            labelled=False,
            lookup=lookup,
        )
        raw.execute(sql, params)
        while records := raw.fetchmany(_STREAM_BATCH):
            yield from map(names.document, records)

    def _query(
        self,
        c: SQLiteCursor,
        query: IndexQuery,
        source: Source,
        bounds: Bounds,
        ids: Sequence[int] | None = None,
        *,
        band: int | None = None,
        sets: bool = True,
        labelled: bool = True,
        lookup: Lookup | None = None,
    ) -> tuple[str, list[Any]]:
        """The documents' query in the search order (no limit), and its
        parameters; the session sets are written to their temporary table.

        ``ids``: the documents with these ids (a few matches drive the query);
        ``all``: every document (the caller tests them, or the walk does);
        ``join``: every match of the full-text index. ``band``: only that
        band's documents.
        ``sets=False``: the session sets were written already in this
        transaction. ``labelled=False``: rows carry the session's label, not its
        id (a sort needs no id: labels sort as ids do)."""
        session_id, after, upto = bounds
        shared = search_tokens.BAND_MAX  # the longest documents' band
        params: list[Any] = []
        if source == "ids":
            # CROSS JOIN keeps the ids outer.
            tables = f"json_each(?) AS m CROSS JOIN {DOCS} AS d ON d.id = m.value"
            params.append(json.dumps(list(ids or ())))
            where = ["1"]
        elif source == "join":
            assert lookup is not None
            params = list(lookup.params)
            tables = (
                f"({lookup.matches(band)}) AS f CROSS JOIN {DOCS} AS d ON d.id = f.id"
            )
            where = ["1"]
        else:
            tables = f"{DOCS} AS d"
            where = ["1"]
        if labelled:
            tables = f"{tables} {_JOIN_LABELS}"
        if band is not None:
            # By tokens, not ids: the walk reads the order index's range.
            where.append(f"d.doc_tokens {'>=' if band == shared else '='} {band}")
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
                if bound is None:
                    continue
                length, moment, key_session, neg_seq = bound
                if band is not None and band < shared and length != band:
                    # The whole band is on one side of the bound.
                    where.append("1" if (length < band) == (op == ">") else "0")
                    continue
                label, neg_seq = label_bound(c, key_session, neg_seq)
                if band is not None and band < shared:
                    # After the band's equality, the planner bounds the index
                    # range only by the key's remaining columns.
                    where.append(f"(d.neg_time, d.label, d.neg_seq) {op} (?, ?, ?)")
                    params += [moment, label, neg_seq]
                    continue
                where.append(f"({KEY}) {op} (?, ?, ?, ?)")
                params += [length, moment, label, neg_seq]
        where += filter_clauses(query, params)
        if sets:
            self._session_sets(c, query)
        columns = _LABELLED if labelled else _UNLABELLED
        sql = (
            f"SELECT {columns} FROM {tables} WHERE {' AND '.join(where)} ORDER BY {KEY}"
        )
        return sql, params

    def _query_lookup(
        self, c: SQLiteCursor, query: IndexQuery, session_id: str | None
    ) -> Lookup:
        """How this read asks for the query's phrase: of one session if given,
        else of the sessions the query allows."""
        if self.hashing is None:
            return TextLookup(c, query.phrase)
        sessions: Collection[str] | None = query.sessions
        if session_id is not None:
            sessions = {session_id}
        return self._lookup(c, query.phrase, sessions, query.excluded)

    def _lookup(
        self,
        c: SQLiteCursor,
        phrase: Sequence[str],
        sessions: Collection[str] | None,
        excluded: Collection[str] = (),
    ) -> Lookup:
        """The phrase's lookup; hashed, each session's own phrase, for every
        indexed session among ``sessions`` (``None``: all) but ``excluded``."""
        if self.hashing is None:
            return TextLookup(c, phrase)
        if sessions is None:
            c.execute(f"SELECT session_id, label FROM {LABELS}")
            labels = {decode_text(key): int(label) for key, label in c.fetchall()}
        else:
            labels = {}
            for session_id in sessions:
                c.execute(_LABEL_OF, (encode_text(session_id),))
                row = c.fetchone()
                if row is not None:
                    labels[session_id] = int(row[0])
        for session_id in excluded:
            labels.pop(session_id, None)
        phrases = self.hashing.phrases(labels, phrase)
        return HashedLookup(c, {labels[key]: words for key, words in phrases.items()})

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
        # Ids follow the order, not time: a snapshot is a document number.
        with self.datastore.transaction(commit=False) as c:
            return self._numbered(c)

    def documents(self) -> list[IndexedDocument]:
        with self.datastore.transaction(commit=False) as c:
            order = "d.label, d.neg_seq DESC"
            c.execute(f"SELECT {_LABELLED} FROM {_SOURCE} ORDER BY {order}")
            records = c.fetchall()
            types = type_names(c)
            return [document_of(tuple(r), types) for r in records]

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
            # Numbers and slots restart: a rebuild numbers the documents and
            # gives them ids as the first pass did.
            c.execute(f"DELETE FROM {META}")
            c.execute(f"DELETE FROM {self.table_name}")
            c.execute(
                "DELETE FROM tracking WHERE application_name = ?",
                (self.tracking_key(application_name),),
            )


SEARCH_VIEW = SQLiteSearchView
