"""The PostgreSQL search index: a GIN-indexed ``tsvector`` and an order index.

``agentlog_search_v2`` holds each session's decision state; ``..._docs`` one row
per document *without its text*: session id (UTF-8 ``surrogatepass`` bytes,
docs/strings.md), ``-seq``, type, surface class (a code), the order key's parts
(``doc_tokens``, ``neg_time``) under two unique indexes (the key; the session
then the key), and ``tsv``: ``to_tsvector('simple', …)`` of the document's
tokens as ``domain.search_text`` splits them, lower-cased and joined by single
spaces (no NUL, no surrogate, no punctuation, so PostgreSQL's parser cannot split
them its own way), computed once at insert and kept under a GIN index. A query
is ``phraseto_tsquery('simple', tokens)``.

``tsvector`` drops words over 2,047 bytes and stops counting positions at
16,383, so a phrase in such a document could be missed: those documents are
marked ``long``, never matched by the index, and their sessions are searched by
scanning the log instead (``long_sessions``).
"""

from __future__ import annotations

from contextlib import contextmanager
from itertools import count
from typing import TYPE_CHECKING, Any, Literal

from psycopg.sql import SQL, Composable, Composed, Identifier

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
    seq_bound,
    session_bound,
    time_bound,
    time_key,
)
from agentlog.domain.search_text import TOKEN_RULE, tokens
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

MAX_POSITION = 16_000
MAX_WORD_BYTES = 2_000
_COLUMNS = SQL("session_id, neg_seq, type, surface, doc_tokens, neg_time, id")
_KEY = SQL("doc_tokens, neg_time, session_id, neg_seq")
_CHUNK = SQL(
    "SELECT * FROM (SELECT w.session_id, w.neg_seq, w.type, w.surface, "
    "w.doc_tokens, w.neg_time, w.id, row_number() OVER k AS n, "
    "lead(true) OVER k IS NULL AS last, w.tsv @@ {1} AS hit "
    "FROM ({0} LIMIT %s) AS w "
    "WINDOW k AS (ORDER BY w.doc_tokens, w.neg_time, w.session_id, w.neg_seq)) "
    "AS x WHERE x.hit OR x.last "
    "ORDER BY x.doc_tokens, x.neg_time, x.session_id, x.neg_seq"
)
"""A walk's chunk: the next documents in key order, tested above their
``LIMIT`` (on the chunk's rows only, whatever plan finds them); only the
matches come back, and the last document tested with its rank ``n``."""
_QUERY = SQL("phraseto_tsquery('simple', %s)")
Source = Literal["ids", "all", "walk", "join"]
WALK_BUDGET = 65_536
"""Documents a walk tests before it reads the matches sorted instead: a budget
below what sorting a common word's matches costs in a large index, and larger
than SQLite's because a test costs less here and a sorted match more
(docs/search.md#how-a-page-is-answered; figures in
docs/search-figures.md#the-search-codes-constants)."""
_WALK_CHUNK = 4096
"""The largest chunk: each is a round trip and a plan, so long walks want few
(docs/search-figures.md#the-search-codes-constants)."""
_STREAM_BATCH = 32
"""Rows fetched at a time after the first batch: few, so a stopped read has
done little work it did not need."""
_CURSORS = count()
"""Server-side cursor names (unique per connection)."""


def token_body(text: str) -> tuple[str, int, bool]:
    """The document's tokens as one string, their count, and whether
    ``tsvector`` may lose some."""
    words = tokens(text)
    long = len(words) > MAX_POSITION or any(
        len(word.encode("utf-8", "surrogatepass")) > MAX_WORD_BYTES for word in words
    )
    return " ".join(words), len(words), long


def _document(record: DictRow) -> IndexedDocument:
    return IndexedDocument(
        decode_text(record["session_id"]),
        -record["neg_seq"],
        decode_text(record["type"]),
        SURFACES[record["surface"]],
        record["doc_tokens"],
        float(record["neg_time"]),
        record["id"],
    )


class PostgresSearchView(PostgresView[SearchState], SearchView):
    """States and documents in the events' schema, one transaction per batch."""

    @property
    def _docs(self) -> Composed:
        schema = Identifier(self.datastore.schema)
        return SQL("{0}.{1}").format(schema, Identifier(f"{self.table_name}_docs"))

    @property
    def _meta(self) -> Composed:
        """Facts about the index as a whole: the token rule it was built with."""
        schema = Identifier(self.datastore.schema)
        return SQL("{0}.{1}").format(schema, Identifier(f"{self.table_name}_meta"))

    def index_statements(self) -> list[Composed]:
        schema = Identifier(self.datastore.schema)
        old = [
            SQL("DROP TABLE IF EXISTS {0}.{1}").format(schema, Identifier(name))
            for name in ("agentlog_search_v1_docs", "agentlog_search_v1")
        ]
        return [
            *old,
            SQL("DELETE FROM {0} WHERE application_name LIKE '%%#search.v1'").format(
                self._tracking_table
            ),
            SQL(
                "CREATE TABLE IF NOT EXISTS {0} (id bigserial PRIMARY KEY, "
                "session_id bytea NOT NULL, neg_seq bigint NOT NULL, "
                "doc_tokens integer NOT NULL, neg_time double precision NOT NULL, "
                "timed boolean NOT NULL, type bytea NOT NULL, "
                "surface smallint NOT NULL, long boolean NOT NULL, "
                "tsv tsvector NOT NULL)"
            ).format(self._docs),
            SQL("CREATE UNIQUE INDEX IF NOT EXISTS {0} ON {1} ({2})").format(
                self._index_name("key"), self._docs, _KEY
            ),
            SQL(
                "CREATE UNIQUE INDEX IF NOT EXISTS {0} ON {1} "
                "(session_id, doc_tokens, neg_time, neg_seq)"
            ).format(self._index_name("session"), self._docs),
            SQL("CREATE INDEX IF NOT EXISTS {0} ON {1} USING gin (tsv)").format(
                self._index_name("tsv"), self._docs
            ),
            SQL("CREATE INDEX IF NOT EXISTS {0} ON {1} (session_id) WHERE long").format(
                self._index_name("long"), self._docs
            ),
            SQL(
                "CREATE TABLE IF NOT EXISTS {0} "
                "(name text PRIMARY KEY, value integer NOT NULL)"
            ).format(self._meta),
        ]

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
            rows = []
            for doc in changes.documents:
                body, count, long = token_body(doc.text)
                rows.append(
                    (
                        encode_text(doc.session_id),
                        -doc.seq,
                        count,
                        time_key(doc.time),
                        type(doc.time) in (int, float),
                        encode_text(doc.type),
                        SURFACES.index(doc.surface),
                        long,
                        body,
                    )
                )
            curs.executemany(
                SQL(
                    "INSERT INTO {0} (session_id, neg_seq, doc_tokens, neg_time, "
                    "timed, type, surface, long, tsv) VALUES "
                    "(%s, %s, %s, %s, %s, %s, %s, %s, to_tsvector('simple', %s))"
                ).format(self._docs),
                rows,
            )
            curs.execute(
                SQL(
                    "INSERT INTO {0} (name, value) VALUES ('tokens', %s) "
                    "ON CONFLICT (name) DO NOTHING"
                ).format(self._meta),
                (TOKEN_RULE,),
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

    def select_ids(self, phrase: Sequence[str], limit: int | None) -> list[int]:
        sql = SQL(
            "SELECT array_agg(id) AS ids FROM (SELECT id FROM {0} "
            "WHERE tsv @@ {1} AND NOT long LIMIT %s) AS m"
        ).format(self._docs, _QUERY)
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(sql, (" ".join(phrase), limit))
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
        sql, params = self._query(query, source, (session_id, after, upto), ids)
        with self.datastore.transaction(commit=False) as curs:
            if source == "walk":
                # Follow an index in the order and test each row: left to
                # itself the planner may read every match of a common word
                # through GIN and sort them (what the walk avoids).
                curs.execute("SET LOCAL enable_bitmapscan = off")
            curs.execute(sql + SQL(" LIMIT %s"), [*params, limit])
            return [_document(record) for record in curs.fetchall()]

    @contextmanager
    def reading(self) -> Iterator[Any]:
        with self.datastore.transaction(commit=False) as curs:
            # One snapshot for the page's reads, as SQLite's read transaction.
            curs.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield curs.connection

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
        if source == "walk":
            yield from self._walk(reader, query, bounds, batch)
            return
        yield from _fetch(reader, self._query(query, source, bounds, ids), batch)

    def _walk(
        self,
        conn: Connection[DictRow],
        query: IndexQuery,
        bounds: Bounds,
        chunk: int,
    ) -> Generator[IndexedDocument, None, None]:
        """Documents in key order, each tested with ``tsv @@``, a chunk at a
        time; past :data:`WALK_BUDGET` tested documents, the rest are read the
        other way round: every match through GIN, sorted
        (docs/search.md#how-a-page-is-answered).

        The walk is fast when matches are dense among the short documents it
        meets first and hopeless when they sit in long ones; spending at most
        the budget on it bounds the bad case by the sort's cost.
        """
        session_id, after, upto = bounds
        phrase = " ".join(query.phrase)
        tested = 0
        chunk = max(chunk, 16)
        # A client-side cursor of its own: a chunk is read whole, and other
        # streams of the page may be open on the connection.
        with conn.cursor() as curs:
            while tested < WALK_BUDGET:
                bounds = (session_id, after, upto)
                sql, params = self._query(query, "all", bounds, tsv=True)
                curs.execute(
                    _CHUNK.format(sql, _QUERY),
                    [phrase, *params, chunk],
                    # Never a generic plan: the phrase's tsquery is folded to a
                    # constant, not parsed again for each tested document.
                    prepare=False,
                )
                records = curs.fetchall()
                for record in records:
                    if record["hit"]:
                        yield _document(record)
                if not records or records[-1]["n"] < chunk:
                    return
                tested += chunk
                after = _document(records[-1]).key
                chunk = min(chunk * 2, _WALK_CHUNK)
        statement = self._query(query, "join", (session_id, after, upto))
        yield from _fetch(conn, statement, _STREAM_BATCH)

    def _query(
        self,
        query: IndexQuery,
        source: Source,
        bounds: Bounds,
        ids: Sequence[int] | None = None,
        *,
        tsv: bool = False,
    ) -> tuple[Composed, list[Any]]:
        """The documents' query in the search order (no limit), and its
        parameters.

        ``ids``: the documents with these ids; ``all``: every document (the
        caller tests them); ``walk``: every document, each tested with
        ``tsv @@`` (the caller keeps the plan on the order index); ``join``:
        every match of the phrase (``tsv``: the ``tsv`` column too, for the
        caller to test). ``ids`` and ``join`` read their rows
        unordered (``OFFSET 0`` keeps the planner from walking the order index
        to avoid the sort) and sort them.
        """
        session_id, after, upto = bounds
        where: list[Composable] = [SQL("NOT long")]
        params: list[Any] = []
        if source == "ids":
            # A join on the ids (the primary key): "id = ANY(array)" lets the
            # planner walk the order index testing each row against the whole
            # array (docs/search-figures.md#the-search-codes-constants).
            where.append(SQL("id IN (SELECT unnest(%s::bigint[]))"))
            params.append(list(ids or ()))
        elif source in ("walk", "join"):
            where.append(SQL("tsv @@ {0}").format(_QUERY))
            params.append(" ".join(query.phrase))
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
        where += _filters(query, params)
        columns = SQL("{0}, tsv").format(_COLUMNS) if tsv else _COLUMNS
        rows = SQL("SELECT {0} FROM {1} WHERE {2}").format(
            columns, self._docs, SQL(" AND ").join(where)
        )
        if source in ("ids", "join"):
            rows = SQL("SELECT * FROM ({0} OFFSET 0) AS m").format(rows)
        return SQL("{0} ORDER BY {1}").format(rows, _KEY), params

    def optimize(self) -> None:
        # Fresh statistics after a large catch-up: without them the planner
        # guesses how common a word is and may scan where GIN would do.
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(SQL("ANALYZE {0}").format(self._docs))

    def last_id(self) -> int:
        sql = SQL("SELECT max(id) AS id FROM {0}").format(self._docs)
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(sql)
            record = curs.fetchone()
            return int(record["id"] or 0) if record else 0

    def long_sessions(self) -> set[str]:
        sql = SQL("SELECT DISTINCT session_id FROM {0} WHERE long").format(self._docs)
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(sql)
            return {decode_text(record["session_id"]) for record in curs.fetchall()}

    def documents(self) -> list[IndexedDocument]:
        sql = SQL("SELECT {1} FROM {0} ORDER BY session_id, neg_seq DESC").format(
            self._docs, _COLUMNS
        )
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(sql)
            return [_document(record) for record in curs.fetchall()]

    def stale(self) -> bool:
        """Documents split by another token rule (an index older than the rule's
        record counts as rule 1): rebuild."""
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(
                SQL(
                    "SELECT (SELECT value FROM {0} WHERE name = 'tokens') AS rule, "
                    "EXISTS (SELECT 1 FROM {1}) AS indexed"
                ).format(self._meta, self._docs)
            )
            row = curs.fetchone()
        return row is not None and bool(row["indexed"]) and row["rule"] != TOKEN_RULE

    def clear(self, application_name: str) -> None:
        with self.datastore.transaction(commit=True) as curs:
            # Ids restart: a rebuild numbers the documents as the first pass did.
            curs.execute(SQL("TRUNCATE {0} RESTART IDENTITY").format(self._docs))
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
                yield _document(record)
            batch = _STREAM_BATCH


def _filters(query: IndexQuery, params: list[Any]) -> list[Composable]:
    """The event filter's columns and the session sets as SQL (``params`` grows)."""
    wanted = query.wanted
    where: list[Composable] = []
    if wanted.seq_from is not None:
        where.append(SQL("neg_seq <= %s"))
        params.append(seq_bound(-wanted.seq_from))
    if wanted.seq_to is not None:
        where.append(SQL("neg_seq >= %s"))
        params.append(seq_bound(-wanted.seq_to))
    if wanted.time_from is not None or wanted.time_to is not None:
        where.append(SQL("timed"))
    if wanted.time_from is not None:
        where.append(SQL("-neg_time >= %s"))
        params.append(time_bound(wanted.time_from))
    if wanted.time_to is not None:
        where.append(SQL("-neg_time <= %s"))
        params.append(time_bound(wanted.time_to))
    if wanted.types is not None:
        where.append(SQL("type = ANY(%s)"))
        params.append([encode_text(kind) for kind in wanted.types])
    if wanted.surfaces is not None:
        where.append(SQL("surface = ANY(%s)"))
        params.append([SURFACES.index(surface) for surface in wanted.surfaces])
    if query.snapshot is not None:
        where.append(SQL("id <= %s"))
        params.append(query.snapshot)
    if query.sessions is not None:
        where.append(SQL("session_id IN (SELECT unnest(%s::bytea[]))"))
        params.append([encode_text(s) for s in query.sessions])
    if query.excluded:
        where.append(SQL("NOT session_id IN (SELECT unnest(%s::bytea[]))"))
        params.append([encode_text(s) for s in query.excluded])
    return where


SEARCH_VIEW = PostgresSearchView
