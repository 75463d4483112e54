"""The PostgreSQL search index: documents' terms under GIN, and an order index.

``agentlog_search_v3`` holds each session's decision state; ``..._docs`` one row
per document *without its text*: its id (documents are numbered as they are
indexed), session id (UTF-8 ``surrogatepass`` bytes, docs/strings.md), ``-seq``,
type, surface class (a code), the order key's parts (``doc_tokens``,
``neg_time``) under two unique indexes (the key; the session then the key), and
``terms``: the document's tokens as ``domain.search_text`` splits them, and its
pairs of common words (``search_terms``), under a GIN index on their elements.
A phrase is found through GIN and tested exactly as a substring of ``terms``;
no parser of PostgreSQL's splits or folds anything, and no document is too long.
``..._meta`` holds the token rule, the documents' count and the common words.
"""

from __future__ import annotations

import json
from collections import Counter
from contextlib import contextmanager
from itertools import count
from typing import TYPE_CHECKING, Any, Literal

from psycopg import errors
from psycopg.sql import SQL, Composable, Composed, Identifier

from agentlog.application.common_words import choose_common
from agentlog.application.search_index import (
    SURFACES,
    Bounds,
    IndexedDocument,
    IndexQuery,
    SearchChanges,
    SearchState,
    SearchView,
)
from agentlog.application.search_match import (
    session_bound,
    time_key,
)
from agentlog.domain.search_text import TOKEN_RULE
from agentlog.infrastructure.backends.postgres import (
    search_sql,
    search_statistics,
    search_terms,
)
from agentlog.infrastructure.backends.postgres.views import PostgresView
from agentlog.infrastructure.views import decode_text, encode_text, write_tracked

if TYPE_CHECKING:
    from collections.abc import (
        Callable,
        Collection,
        Generator,
        Iterator,
        Sequence,
    )

    from eventsourcing.persistence import Tracking
    from psycopg import Connection, Cursor
    from psycopg.rows import DictRow

    from agentlog.application.search_match import OrderKey
    from agentlog.domain.search_text import SearchDocument
    from agentlog.infrastructure.backends.postgres.datastore import (
        AgentlogPostgresDatastore,
    )

PAIRS_AFTER = 10_000
"""The common words are chosen when this many documents are indexed, from
them; those documents get their pairs then, every later one as it is indexed."""
RARE_CAP = 2_048
"""A phrase in more documents than this is walked, not sorted: a first page
walks about ``21 n / m`` documents of ``n`` to find ``m`` matches, and a test
costs about half what a sorted match does (docs/search.md#how-a-page-is-answered)."""
_COLUMNS = SQL("session_id, neg_seq, type, surface, doc_tokens, neg_time, id")
_KEY = SQL("doc_tokens, neg_time, session_id, neg_seq")
Source = Literal["ids", "all", "walk", "join"]
WALK_BUDGET = 8_192
"""Documents a walk tests before it reads the remaining matches sorted, band
by band of document length (docs/search.md#how-a-page-is-answered)."""
_WALK_CHUNK = 4096
"""The largest chunk: each is a round trip and a plan, so long walks want few
(docs/search-figures.md#the-search-codes-constants)."""
_FIRST_BAND = 64
"""The first band of document lengths a sorted read covers (then doubling)."""
_STREAM_BATCH = 32
"""Rows fetched at a time after the first batch: few, so a stopped read has
done little work it did not need."""
BULK_MEMORY = "256MB"
"""``maintenance_work_mem`` of a bulk catch-up's index builds: GIN gathers its
entries in it (the server's 64 MB default spills a million documents' into
many runs)."""
_CURSORS = count()
"""Server-side cursor names (unique per connection)."""


class PostgresSearchView(PostgresView[SearchState], SearchView):
    """States and documents in the events' schema, one transaction per batch."""

    view_name = "search.v3"
    table_name = "agentlog_search_v3"
    _stats: search_statistics.Statistics | None = None
    datastore: AgentlogPostgresDatastore
    """The factory's (``factory.py``): its read transactions commit, and may
    take one snapshot."""

    def _named(self, suffix: str) -> Composed:
        schema = Identifier(self.datastore.schema)
        return SQL("{0}.{1}").format(schema, Identifier(f"{self.table_name}{suffix}"))

    @property
    def _docs(self) -> Composed:
        return self._named("_docs")

    @property
    def _meta(self) -> Composed:
        """Facts about the index as a whole: the token rule it was built with,
        the documents' count, the common words."""
        return self._named("_meta")

    @property
    def _match(self) -> Composed:
        return search_sql.MATCH.format(search_sql.ELEMENTS, self._meta)

    def index_statements(self) -> list[Composed]:
        schema = Identifier(self.datastore.schema)
        old = [
            SQL("DROP TABLE IF EXISTS {0}.{1}").format(schema, Identifier(name))
            for version in (1, 2)
            for name in (
                f"agentlog_search_v{version}_docs",
                f"agentlog_search_v{version}_meta",
                f"agentlog_search_v{version}",
            )
        ]
        return [
            *old,
            SQL(
                "DELETE FROM {0} WHERE application_name LIKE '%%#search.v1' "
                "OR application_name LIKE '%%#search.v2'"
            ).format(self._tracking_table),
            SQL(
                "CREATE TABLE IF NOT EXISTS {0} (id bigint PRIMARY KEY, "
                "session_id bytea NOT NULL, neg_seq bigint NOT NULL, "
                "doc_tokens integer NOT NULL, neg_time double precision NOT NULL, "
                "timed boolean NOT NULL, type bytea NOT NULL, "
                "surface smallint NOT NULL, terms text NOT NULL)"
            ).format(self._docs),
            SQL(
                "CREATE TABLE IF NOT EXISTS {0} (name text PRIMARY KEY, "
                "value text NOT NULL)"
            ).format(self._meta),
            SQL(
                "CREATE UNIQUE INDEX IF NOT EXISTS {0} ON {1} "
                "(session_id, doc_tokens, neg_time, neg_seq)"
            ).format(self._index_name("session"), self._docs),
            *self._bulk_indexes(),
        ]

    def _bulk_indexes(self) -> list[Composed]:
        """The indexes a bulk catch-up builds at its end: the order key's and
        GIN's (the session's stays: shadowing and drops find rows by it)."""
        return [
            SQL("CREATE UNIQUE INDEX IF NOT EXISTS {0} ON {1} ({2})").format(
                self._index_name("key"), self._docs, _KEY
            ),
            SQL("CREATE INDEX IF NOT EXISTS {0} ON {1} USING gin (({2}))").format(
                self._index_name("terms"), self._docs, search_sql.ELEMENTS
            ),
        ]

    def begin_bulk(self) -> None:
        # Searches meanwhile are right but slow: without GIN, every row is
        # tested. A crash before end_bulk leaves them to the next start's
        # index_statements.
        names = [
            Identifier(self.datastore.schema, f"{self.table_name}_{suffix}")
            for suffix in ("key", "terms")
        ]
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(SQL("DROP INDEX IF EXISTS {0}").format(SQL(", ").join(names)))

    def end_bulk(self) -> None:
        # Two processes may finish a bulk catch-up together: the second's
        # IF NOT EXISTS can race the first's CREATE (either index will do).
        for statement in self._bulk_indexes():
            try:
                with self.datastore.transaction(commit=True) as curs:
                    curs.execute(f"SET LOCAL maintenance_work_mem = '{BULK_MEMORY}'")
                    curs.execute(statement)
            except (errors.DuplicateTable, errors.UniqueViolation):
                continue

    def _decode(self, record: DictRow) -> SearchState:
        state = super()._decode(record)
        return SearchState(
            state.session_id,
            state.next_seq,
            state.surface,
            bool(state.broken),
            state.text_sum or 0,
        )

    def _encode(self, row: SearchState) -> tuple[Any, ...]:
        values = list(super()._encode(row))
        values[3] = int(row.broken)
        return tuple(values)

    # -------------------------------------------------------------- writes

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
        if changes.erased:
            self.purge(changes.erased, curs)
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
            self._insert(curs, changes.documents)
            curs.execute(
                SQL(
                    "INSERT INTO {0} (name, value) VALUES ('tokens', %s), "
                    "('hashed', %s) ON CONFLICT (name) DO NOTHING"
                ).format(self._meta),
                (str(TOKEN_RULE), str(int(self.hashing is not None))),
            )
        shadowed: dict[str, list[int]] = {}
        for session_id, seq in changes.shadowed:
            shadowed.setdefault(session_id, []).append(-seq)
        for session_id, seqs in shadowed.items():
            curs.execute(
                SQL(
                    "UPDATE {0} SET surface = 1 "
                    "WHERE session_id = %s AND neg_seq = ANY(%s)"
                ).format(self._docs),
                (encode_text(session_id), seqs),
            )

    def _insert(
        self, curs: Cursor[DictRow], documents: Sequence[SearchDocument]
    ) -> None:
        """Number the documents after the last one and copy them in; choose the
        common words when the count reaches :data:`PAIRS_AFTER`.

        The count's row is locked for the transaction, so concurrent writers
        number one after the other and none writes a document without pairs
        after they are chosen."""
        curs.execute(
            SQL(
                "INSERT INTO {0} (name, value) VALUES ('numbered', '0') "
                "ON CONFLICT (name) DO UPDATE SET value = {0}.value RETURNING value"
            ).format(self._meta)
        )
        record = curs.fetchone()
        number = int(record["value"]) if record else 0
        common = search_sql.common_words(curs, self._meta)
        hashers = None
        if self.hashing is not None:
            # A session stored before encryption was on gets its key here.
            ids = {doc.session_id for doc in documents}
            hashers = self.hashing.hashers(ids, create=True)
        rows = []
        for doc in documents:
            if hashers is None:
                words = search_terms.split(doc.text)
            else:
                words = search_terms.hashed(doc.text, hashers[doc.session_id])
            number += 1
            rows.append(
                (
                    number,
                    encode_text(doc.session_id),
                    -doc.seq,
                    len(words),
                    time_key(doc.time),
                    type(doc.time) in (int, float),
                    encode_text(doc.type),
                    SURFACES.index(doc.surface),
                    search_terms.terms(words, common),
                )
            )
            # Common words would be plaintext: a hashed index has no pairs.
            if common is None and number >= PAIRS_AFTER and hashers is None:
                self._copy(curs, rows)
                rows = []
                common = self._choose_common(curs)
        self._copy(curs, rows)
        curs.execute(
            SQL("UPDATE {0} SET value = %s WHERE name = 'numbered'").format(self._meta),
            (str(number),),
        )
        if hashers is not None:
            # A hashed search probes GIN once per session, and each probe reads
            # the whole pending list of entries not yet merged: merge them now.
            self._clean_pending(curs)

    def _copy(self, curs: Cursor[DictRow], rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        statement = SQL(
            "COPY {0} (id, session_id, neg_seq, doc_tokens, neg_time, timed, type, "
            "surface, terms) FROM STDIN"
        ).format(self._docs)
        with curs.copy(statement) as copy:
            for row in rows:
                copy.write_row(row)

    def _choose_common(self, curs: Cursor[DictRow]) -> frozenset[str]:
        """Choose the common words from the documents indexed so far, record
        them, and give those documents their pairs (``common_words``)."""
        curs.execute(SQL("SELECT id, terms FROM {0}").format(self._docs))
        documents = [(row["id"], search_terms.words_of(row["terms"])) for row in curs]
        counts: Counter[str] = Counter()
        for _, words in documents:
            counts.update(set(words))
        common = frozenset(choose_common(counts.items(), len(documents)))
        curs.execute(
            SQL("INSERT INTO {0} (name, value) VALUES ('common', %s)").format(
                self._meta
            ),
            (json.dumps(sorted(common)),),
        )
        updates = [
            (search_terms.terms(words, common), doc_id)
            for doc_id, words in documents
            if search_terms.pairs(words, common)
        ]
        if updates:
            curs.executemany(
                SQL("UPDATE {0} SET terms = %s WHERE id = %s").format(self._docs),
                updates,
            )
        return common

    def purge(self, session_ids: Collection[str], cursor: Any = None) -> None:
        keys = [encode_text(s) for s in session_ids]

        def run(curs: Cursor[DictRow]) -> None:
            for table in (self._docs, self._table):
                curs.execute(
                    SQL("DELETE FROM {0} WHERE session_id = ANY(%s)").format(table),
                    (keys,),
                )

        if cursor is not None:
            run(cursor)
            return
        with self.datastore.transaction(commit=True) as curs:
            run(curs)

    # --------------------------------------------------------------- reads

    def rare_cap(self) -> int | None:
        return RARE_CAP

    def matching_ids(
        self,
        phrase: Sequence[str],
        cap: int | None,
        sessions: Collection[str] | None = None,
    ) -> list[int] | None:
        # A phrase GIN would find by one common element is walked at once
        # (search_statistics): its probe would read the whole list first.
        common = cap is not None and self.hashing is None
        if common and search_statistics.surely_common(
            phrase, self._statistics(), cap or 0
        ):
            return None
        return super().matching_ids(phrase, cap, sessions)

    def _statistics(self) -> search_statistics.Statistics:
        """The common words and PostgreSQL's statistics of the GIN expression,
        read at most every ``search_statistics.REFRESH`` seconds."""
        stats = self._stats
        if stats is not None and stats.fresh():
            return stats
        sql = SQL(
            "SELECT (SELECT value FROM {0} WHERE name = 'common') AS common, "
            "(SELECT reltuples FROM pg_class WHERE oid = %s::regclass) AS documents, "
            "s.most_common_elems::text::text[] AS elements, "
            "s.most_common_elem_freqs AS frequencies FROM (SELECT 1) AS one "
            "LEFT JOIN pg_stats AS s ON s.schemaname = %s AND s.tablename = %s"
        ).format(self._meta)
        index = f"{self.table_name}_terms"
        with self._reading() as curs:
            docs = self._docs.as_string(curs)
            curs.execute(sql, (docs, self.datastore.schema, index))
            row = curs.fetchone()
        assert row is not None
        stats = search_statistics.parse(
            row["common"], row["elements"], row["frequencies"], row["documents"]
        )
        self._stats = stats
        return stats

    def select_ids(
        self,
        phrase: Sequence[str],
        limit: int | None,
        sessions: Collection[str] | None = None,
    ) -> list[int]:
        matching = self._matching(phrase, sessions)
        sql = SQL(
            "SELECT array_agg(id) AS ids FROM (SELECT id FROM {0} "
            "WHERE {1} LIMIT %s) AS m"
        ).format(self._docs, matching.match)
        if self.hashing is not None:
            # Driven by the probes, so the limit stops them (an ``IN`` of
            # every probe's documents found all of a common word's first).
            sql = search_sql.HASHED_IDS.format(
                self._docs, search_sql.ELEMENTS, matching.pattern
            )
        with self._one_read() as curs:
            curs.execute(sql, [*matching.match_params, limit])
            record = curs.fetchone()
            return list(record["ids"] or []) if record else []

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
        source = _source(test, ids)
        bounds = (session_id, after, upto)
        matching = self._query_matching(query, session_id, source)
        with self._one_read() as curs:
            sql, params = self._query(query, source, bounds, ids, matching=matching)
            curs.execute(sql + SQL(" LIMIT %s"), [*params, limit])
            return [search_sql.document(record) for record in curs.fetchall()]

    @contextmanager
    def reading(self) -> Iterator[Any]:
        # One snapshot for the page's reads, as SQLite's read transaction.
        with self.datastore.transaction(commit=False, snapshot=True) as curs:
            self._hashed_reads(curs)
            yield curs.connection

    @contextmanager
    def _one_read(self) -> Iterator[Cursor[DictRow]]:
        """A cursor for one read statement: alone, one round trip (a statement
        outside a block is a transaction of its own); a hashed index's in a
        read transaction, for its ``SET LOCAL``."""
        if self.hashing is None:
            with self._reading() as curs:
                yield curs
            return
        with self.datastore.transaction(commit=False) as curs:
            self._hashed_reads(curs)
            yield curs

    def _hashed_reads(self, curs: Cursor[DictRow]) -> None:
        """A hashed index's reads carry an array and an object of one entry per
        session, which the planner costs high enough to compile them (JIT):
        hundreds of milliseconds a statement for nothing. Off, in this
        transaction only."""
        if self.hashing is not None:
            curs.execute("SET LOCAL jit = off")

    def read_stream(
        self,
        reader: Any,
        query: IndexQuery,
        ids: Sequence[int] | None,
        bounds: Bounds,
        test: bool,
        batch: int,
    ) -> Generator[IndexedDocument, None, None]:
        source = _source(test, ids)
        matching = self._query_matching(query, bounds[0], source)
        if source == "walk":
            assert matching is not None
            yield from self._walk(reader, query, bounds, batch, matching)
            return
        statement = self._query(query, source, bounds, ids, matching=matching)
        yield from _fetch(reader, statement, batch)

    def _walk(
        self,
        conn: Connection[DictRow],
        query: IndexQuery,
        bounds: Bounds,
        chunk: int,
        matching: search_sql.Matching,
    ) -> Generator[IndexedDocument, None, None]:
        """Documents in key order, each tested as a substring of its terms, a
        chunk at a time; past :data:`WALK_BUDGET` tested documents, the rest
        are read the other way round, band by band (:meth:`_bands`).

        The walk is fast when matches are dense among the short documents it
        meets first and hopeless when they sit in long ones; spending at most
        the budget on it bounds the bad case by the bands' cost.
        """
        session_id, after, upto = bounds
        tested = 0
        chunk = max(chunk, 16)
        # A client-side cursor of its own: a chunk is read whole, and other
        # streams of the page may be open on the connection.
        with conn.cursor() as curs:
            while tested < WALK_BUDGET:
                bounds = (session_id, after, upto)
                sql, params = self._query(query, "all", bounds, terms=True)
                curs.execute(
                    search_sql.CHUNK.format(sql, matching.walk_pattern),
                    [*matching.pattern_params, *params, chunk],
                )
                records = curs.fetchall()
                for record in records:
                    if record["hit"]:
                        yield search_sql.document(record)
                if not records or records[-1]["n"] < chunk:
                    return
                tested += chunk
                after = search_sql.document(records[-1]).key
                chunk = min(chunk * 2, _WALK_CHUNK)
        yield from self._bands(conn, query, (session_id, after, upto), matching)

    def _bands(
        self,
        conn: Connection[DictRow],
        query: IndexQuery,
        bounds: Bounds,
        matching: search_sql.Matching,
    ) -> Generator[IndexedDocument, None, None]:
        """Every match after ``bounds``' key found through GIN, sorted, a band
        of document lengths at a time (``[0, 64)``, then doubling): the order's
        first part is the length, so a page stops in the band where it fills
        and reads no match of a longer band."""
        _, after, _ = bounds
        with conn.cursor() as curs:
            curs.execute(SQL("SELECT max(doc_tokens) AS n FROM {0}").format(self._docs))
            record = curs.fetchone()
            longest = int(record["n"] or 0) if record else 0
        low = 0 if after is None else after[0]
        while low <= longest:
            high = max(_FIRST_BAND, low * 2)
            statement = self._query(
                query, "join", bounds, band=(low, high), matching=matching
            )
            yield from _fetch(conn, statement, _STREAM_BATCH)
            low = high

    def _query(
        self,
        query: IndexQuery,
        source: Source,
        bounds: Bounds,
        ids: Sequence[int] | None = None,
        *,
        terms: bool = False,
        band: tuple[int, int] | None = None,
        matching: search_sql.Matching | None = None,
    ) -> tuple[Composed, list[Any]]:
        """The documents' query in the search order (no limit), and its
        parameters.

        ``ids``: the documents with these ids; ``all``: every document (the
        caller tests them; ``terms``: with the ``terms`` column); ``walk``:
        every document, each tested as a substring; ``join``: every match of
        the phrase through GIN (``band``: of a length in ``[low, high)``).
        ``ids`` and ``join`` read their rows unordered (``OFFSET 0`` keeps the
        planner from walking the order index to avoid the sort) and sort them.
        """
        session_id, after, upto = bounds
        where: list[Composable] = []
        params: list[Any] = []
        if source == "ids":
            # A join on the ids (the primary key): "id = ANY(array)" lets the
            # planner walk the order index testing each row against the whole
            # array (docs/search-figures.md#the-search-codes-constants).
            where.append(SQL("id IN (SELECT unnest(%s::bigint[]))"))
            params.append(list(ids or ()))
        elif source == "walk":
            assert matching is not None
            where.append(SQL("strpos(terms, {0}) > 0").format(matching.pattern))
            params += matching.pattern_params
        elif source == "join":
            assert matching is not None
            where.append(matching.match)
            params += matching.match_params
        if band is not None:
            where.append(SQL("doc_tokens >= %s AND doc_tokens < %s"))
            params += list(band)
        for bound, op in ((after, SQL(">")), (upto, SQL("<="))):
            if bound is None:
                continue
            if session_id is not None:
                length, moment, _, neg_seq = session_bound(bound, session_id)
                where.append(
                    SQL("(doc_tokens, neg_time, neg_seq) {0} (%s, %s, %s)").format(op)
                )
                params += [length, moment, neg_seq]
            else:
                length, moment, key_session, neg_seq = bound
                where.append(SQL("({0}) {1} (%s, %s, %s, %s)").format(_KEY, op))
                params += [length, moment, encode_text(key_session), neg_seq]
        if session_id is not None:
            where.append(SQL("session_id = %s"))
            params.append(encode_text(session_id))
        where += search_sql.filters(query, params)
        columns = SQL("{0}, terms").format(_COLUMNS) if terms else _COLUMNS
        rows = SQL("SELECT {0} FROM {1} WHERE {2}").format(
            columns, self._docs, SQL(" AND ").join(where or [SQL("true")])
        )
        if source in ("ids", "join"):
            rows = SQL("SELECT * FROM ({0} OFFSET 0) AS m").format(rows)
        return SQL("{0} ORDER BY {1}").format(rows, _KEY), params

    def _query_matching(
        self, query: IndexQuery, session_id: str | None, source: Source
    ) -> search_sql.Matching | None:
        """How a read of ``source`` tests the query's phrase (``None``: it
        does not), for one session if given, else the sessions the query allows."""
        if source in ("ids", "all"):
            return None
        sessions: Collection[str] | None = query.sessions
        if session_id is not None:
            sessions = {session_id}
        return self._matching(query.phrase, sessions, query.excluded)

    def _matching(
        self,
        phrase: Sequence[str],
        sessions: Collection[str] | None,
        excluded: Collection[str] = (),
    ) -> search_sql.Matching:
        """The phrase's tests; hashed, each session's own pattern, for every
        indexed session among ``sessions`` (``None``: all) but ``excluded``."""
        if self.hashing is None:
            pattern = search_terms.pattern(phrase)
            params = search_sql.match_params(phrase, self._statistics().common)
            return search_sql.Matching(
                self._match, params, SQL("%s"), [pattern], SQL("%s")
            )
        if sessions is None:
            with self._reading() as curs:
                curs.execute(SQL("SELECT session_id FROM {0}").format(self._table))
                sessions = [decode_text(row["session_id"]) for row in curs]
        wanted = set(sessions).difference(excluded)
        phrases = self.hashing.phrases(wanted, phrase)
        patterns = {
            encode_text(session_id).hex(): " " + " ".join(words) + " "
            for session_id, words in phrases.items()
        }
        # GIN looks up one token per session: the phrase's longest (likely
        # the rarest); the pattern's test is exact.
        anchor = max(range(len(phrase)), key=lambda at: len(phrase[at]))
        anchors = sorted({words[anchor] for words in phrases.values()})
        by_session = [json.dumps(patterns)]
        return search_sql.Matching(
            search_sql.HASHED_MATCH.format(
                self._docs,
                search_sql.ELEMENTS,
                search_sql.HASHED_PATTERN.format(SQL("")),
            ),
            [anchors, *by_session],
            search_sql.HASHED_PATTERN.format(SQL("")),
            by_session,
            search_sql.HASHED_PATTERN.format(SQL("w.")),
        )

    def optimize(self) -> None:
        # Fresh statistics after a large catch-up: without them the planner
        # guesses how common a word is and may scan where GIN would do.
        # GIN's pending list (entries not merged yet) is read by every query:
        # merge it.
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(SQL("ANALYZE {0}").format(self._docs))
            self._clean_pending(curs)
        self._stats = None

    def _clean_pending(self, curs: Cursor[DictRow]) -> None:
        """Merge GIN's pending list into its tree (none while a bulk catch-up
        has dropped the index)."""
        index = Identifier(self.datastore.schema, f"{self.table_name}_terms")
        curs.execute(
            "SELECT gin_clean_pending_list(to_regclass(%s))", (index.as_string(curs),)
        )

    def last_id(self) -> int:
        sql = SQL("SELECT max(id) AS id FROM {0}").format(self._docs)
        with self._reading() as curs:
            curs.execute(sql)
            record = curs.fetchone()
            return int(record["id"] or 0) if record else 0

    def documents(self) -> list[IndexedDocument]:
        sql = SQL("SELECT {1} FROM {0} ORDER BY session_id, neg_seq DESC").format(
            self._docs, _COLUMNS
        )
        with self._reading() as curs:
            curs.execute(sql)
            return [search_sql.document(record) for record in curs.fetchall()]

    def stale(self) -> bool:
        """Documents split by another token rule (an index older than the rule's
        record counts as rule 1), or hashed when encryption is off or not
        hashed when it is on: rebuild. One statement, outside a transaction
        block: it is checked before every search (one round trip, not three)."""
        with self._reading() as curs:
            curs.execute(
                SQL(
                    "SELECT (SELECT value FROM {0} WHERE name = 'tokens') AS rule, "
                    "(SELECT value FROM {0} WHERE name = 'hashed') AS hashed, "
                    "EXISTS (SELECT 1 FROM {1}) AS indexed"
                ).format(self._meta, self._docs)
            )
            row = curs.fetchone()
        rule = str(TOKEN_RULE)
        hashed = str(int(self.hashing is not None))
        return (
            row is not None
            and bool(row["indexed"])
            and (row["rule"] != rule or (row["hashed"] or "0") != hashed)
        )

    def clear(self, application_name: str) -> None:
        with self.datastore.transaction(commit=True) as curs:
            # Numbers restart: a rebuild numbers the documents as the first
            # pass did, and chooses the same common words.
            self._stats = None
            curs.execute(SQL("TRUNCATE {0}").format(self._docs))
            curs.execute(SQL("DELETE FROM {0}").format(self._meta))
            curs.execute(SQL("DELETE FROM {0}").format(self._table))
            curs.execute(
                SQL("DELETE FROM {0} WHERE application_name = %s").format(
                    self._tracking_table
                ),
                (self.tracking_key(application_name),),
            )


def _source(test: bool, ids: Sequence[int] | None) -> Source:
    if not test:
        return "all"
    return "walk" if ids is None else "ids"


def _fetch(
    conn: Connection[DictRow],
    statement: tuple[Composed, list[Any]],
    batch: int,
) -> Generator[IndexedDocument, None, None]:
    """The statement's documents through a server-side cursor of its own, read
    as the caller consumes them (a page's streams may interleave on the
    connection); ``batch`` rows first, then :data:`_STREAM_BATCH` at a time."""
    sql, params = statement
    with conn.cursor(name=f"agentlog_search_{next(_CURSORS)}") as curs:
        curs.execute(sql, params)
        while records := curs.fetchmany(batch):
            for record in records:
                yield search_sql.document(record)
            if len(records) < batch:
                return  # the cursor's end: no FETCH more to learn it
            batch = _STREAM_BATCH


SEARCH_VIEW = PostgresSearchView
