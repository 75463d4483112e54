"""SQLite views: tables in the events' own database file, written with tracking.

A save writes its tracking row first: the first statement of the transaction is a
write, so SQLite takes the write lock before anything is read and a concurrent
writer cannot invalidate the rows the merge saw. Opening a view writes nothing
once its tables exist (``backends.sqlite.tables``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from agentlog.application.ports import ViewClasses
from agentlog.application.projections import LineageView, TitleView
from agentlog.application.view_rows import (
    LineageRow,
    ListingRow,
    Number,
    TitleRow,
    columns,
    row_values,
)
from agentlog.domain.json import loads
from agentlog.infrastructure.backends.sqlite.tables import ensure_tables
from agentlog.infrastructure.eventsourcing_seam import KeyedSQLiteTracking
from agentlog.infrastructure.views import (
    column_param,
    decode_column,
    encode_column,
    encode_text,
)
from agentlog.infrastructure.views.sql import SQLListingView, SQLView

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Sequence

    from eventsourcing.sqlite import SQLiteCursor, SQLiteDatastore

    from agentlog.application.scope import Scope

TRow = TypeVar("TRow")
SQLITE_TYPES = {
    "text": "BLOB",
    "int": "INTEGER",
    "number": "NUMERIC",
    "json": "BLOB",
    "raw": "BLOB",
}
CHUNK = 500


def select_sql(table: str, kinds: Sequence[tuple[str, str]]) -> str:
    """``SELECT <every column> FROM <table> `` (a view's reads add the rest)."""
    return f"SELECT {', '.join(name for name, _ in kinds)} FROM {table} "


def _decode_utf8(value: bytes) -> str:
    return value.decode("utf-8", "surrogatepass")


def sqlite_decoding(
    kinds: Sequence[tuple[str, str]],
) -> list[tuple[int, Callable[[Any], Any]]]:
    """``(index, decoder)`` of the columns whose SQLite value is not the row
    value already: the driver gives ints and floats as they are and BLOBs as
    ``bytes``, so only text and JSON columns are decoded (a page decodes some
    600 values, docs/performance.md)."""
    decoders: dict[str, Callable[[Any], Any]] = {"text": _decode_utf8, "json": loads}
    return [
        (at, decoders[kind]) for at, (_, kind) in enumerate(kinds) if kind in decoders
    ]


def decode_record(
    row_type: type[TRow],
    decoding: Sequence[tuple[int, Callable[[Any], Any]]],
    record: Sequence[Any],
) -> TRow:
    """A stored record (a tuple or ``sqlite3.Row``) as its row."""
    values = list(record)
    for at, decode in decoding:
        value = values[at]
        if value is not None:
            values[at] = decode(value)
    return row_type(*values)


class SQLiteView(KeyedSQLiteTracking, SQLView[TRow], Generic[TRow]):
    """A keyed table; the library's ``tracking`` table holds one row per view."""

    index_columns: tuple[str, ...] = ()

    def __init__(self, datastore: SQLiteDatastore, **kwargs: Any) -> None:
        super().__init__(datastore, **kwargs)
        raw = self.sealed_columns()
        self._columns = [
            (name, "raw" if name in raw else kind)
            for name, kind in columns(self.row_type)
        ]
        self._decoding = sqlite_decoding(self._columns)
        self._select_sql = select_sql(self.table_name, self._columns)
        names = ", ".join(name for name, _ in self._columns)
        marks = ", ".join("?" for _ in self._columns)
        updates = ", ".join(
            f"{name} = excluded.{name}" for name, _ in self._columns[1:]
        )
        self._upsert_sql = (
            f"INSERT INTO {self.table_name} ({names}) VALUES ({marks}) "
            f"ON CONFLICT (session_id) DO UPDATE SET {updates}"
        )

    def construct_create_table_statements(self) -> list[str]:
        statements = super().construct_create_table_statements()
        definitions = ", ".join(
            f"{name} {SQLITE_TYPES[kind]}" + (" PRIMARY KEY" if i == 0 else "")
            for i, (name, kind) in enumerate(columns(self.row_type))
        )
        statements.append(
            f"CREATE TABLE IF NOT EXISTS {self.table_name} ({definitions})"
        )
        statements.extend(self.index_statements())
        if self.plain_table_name:
            # Encryption was turned on: the plaintext rows go (secure_delete
            # zeroes their pages), and so does their position.
            statements += [
                f"DROP TABLE IF EXISTS {self.plain_table_name}",
                "DELETE FROM tracking WHERE application_name LIKE "
                f"'%#{self.view_name.removesuffix('.sealed')}'",
            ]
        return statements

    def index_statements(self) -> list[str]:
        return []

    def create_table(self) -> None:
        """Only look when the tables exist; else create them under the write
        lock (``backends.sqlite.tables``): a reader never fails on another's flush."""
        ensure_tables(self)

    # ---------------------------------------------------------------- rows

    def _encode(self, row: TRow) -> tuple[Any, ...]:
        return tuple(
            encode_column(kind, value, bounded_ints=True)
            for (_, kind), value in zip(
                self._columns, row_values(self._stored(row)), strict=True
            )
        )

    def _decode(self, record: Sequence[Any]) -> TRow:
        return decode_record(self.row_type, self._decoding, record)  # type: ignore[no-any-return]

    def _fetch_stored(
        self, c: SQLiteCursor, sql: str, params: Sequence[Any]
    ) -> list[TRow]:
        c.execute(sql, params)
        decode = self._decode  # a view may refine its rows (the search view's flags)
        return [decode(row) for row in c.fetchall()]

    def _select(self, c: SQLiteCursor, keys: Collection[str]) -> dict[str, TRow]:
        found: dict[str, TRow] = {}
        ordered = sorted(keys)
        for i in range(0, len(ordered), CHUNK):
            chunk = [encode_text(key) for key in ordered[i : i + CHUNK]]
            marks = ", ".join("?" for _ in chunk)
            sql = self._select_sql + f"WHERE session_id IN ({marks})"
            for row in self._fetch(c, sql, chunk):
                found[row.session_id] = row  # type: ignore[attr-defined]
        return found

    def _delete(self, c: SQLiteCursor, session_ids: Collection[str]) -> None:
        ordered = sorted(session_ids)
        for i in range(0, len(ordered), CHUNK):
            chunk = [encode_text(key) for key in ordered[i : i + CHUNK]]
            marks = ", ".join("?" for _ in chunk)
            c.execute(
                f"DELETE FROM {self.table_name} WHERE session_id IN ({marks})", chunk
            )

    def select_all(self) -> list[TRow]:
        return self._read(self._select_sql + "ORDER BY session_id", ())

    def _top_and_positions(
        self, recorder: Any, keys: Sequence[str]
    ) -> tuple[int | None, dict[str, int]]:
        """Two statements in one read transaction."""
        marks = ", ".join("?" for _ in keys)
        with self.datastore.transaction(commit=False) as c:
            c.execute(recorder.select_max_notification_id_statement)
            row = c.fetchone()
            c.execute(
                "SELECT application_name, MAX(notification_id) FROM tracking "
                f"WHERE application_name IN ({marks}) GROUP BY application_name",
                list(keys),
            )
            found = {str(r[0]): r[1] for r in c.fetchall() if r[1] is not None}
        return None if row is None else row[0], found

    def clear(self, application_name: str) -> None:
        with self.datastore.transaction(commit=True) as c:
            c.execute(f"DELETE FROM {self.table_name}")
            c.execute(
                "DELETE FROM tracking WHERE application_name = ?",
                (self.tracking_key(application_name),),
            )


def _scoped(view: SQLiteListingView, scope: Scope | None) -> tuple[str, list[Any]]:
    """``AND column = ?`` (or ``IS NULL``) per column the scope constrains
    (a sealed view compares the filter columns' tokens)."""
    sql, params = "", []
    for column, value in [] if scope is None else view.scope_pairs(scope.columns()):
        if value is None:
            sql += f"AND {column} IS NULL "
        else:
            sql += f"AND {column} = ? "
            params.append(column_param(value))
    return sql, params


def listing_page_query(
    select: str,
    limit: int,
    after: tuple[Number, str] | None,
    where: str = "",
    params: list[Any] | None = None,
) -> tuple[str, list[Any]]:
    """A page of the listing newest first after ``after``: ``select`` (the
    view's ``SELECT … FROM``), then ``where`` (a scope's ``AND …``)."""
    params = [] if params is None else params
    sql = select + "WHERE header IS NOT NULL " + where
    if after is not None:
        created = encode_column("number", after[0], bounded_ints=True)
        sql += "AND (created_at < ? OR (created_at = ? AND session_id > ?)) "
        params += [created, created, encode_text(after[1])]
    sql += "ORDER BY created_at DESC, session_id LIMIT ?"
    params.append(limit)
    return sql, params


class SQLiteListingView(SQLiteView[ListingRow], SQLListingView):
    """The listing, indexed for newest-first keyset paging, overall and per
    ``(cwd, owner)`` and ``owner`` (scoped listings, docs/scope.md)."""

    def index_statements(self) -> list[str]:
        table = self.table_name
        return [
            f"CREATE INDEX IF NOT EXISTS {table}_recent "
            f"ON {table} (created_at DESC, session_id)",
            f"CREATE INDEX IF NOT EXISTS {table}_scope "
            f"ON {table} (cwd, owner, created_at DESC, session_id)",
            f"CREATE INDEX IF NOT EXISTS {table}_owner "
            f"ON {table} (owner, created_at DESC, session_id)",
        ]

    def page_query(
        self,
        *,
        limit: int,
        after: tuple[Number, str] | None = None,
        scope: Scope | None = None,
    ) -> tuple[str, list[Any]]:
        """The SQL and parameters :meth:`select_page` runs (tests explain it)."""
        where, params = _scoped(self, scope)
        return listing_page_query(self._select_sql, limit, after, where, params)

    def select_headers(self, *, scope: Scope | None = None) -> list[dict[str, Any]]:
        where, params = _scoped(self, scope)
        if self.sealed:
            rows = self._read(
                self._select_sql + "WHERE header IS NOT NULL " + where, params
            )
            return [row.header for row in rows if row.header is not None]
        sql = f"SELECT header FROM {self.table_name} WHERE header IS NOT NULL {where}"
        with self.datastore.transaction(commit=False) as c:
            c.execute(sql, params)
            return [decode_column("json", record[0]) for record in c.fetchall()]


class SQLiteTitleView(SQLiteView[TitleRow], TitleView):
    """Latest title event per session."""


class SQLiteLineageView(SQLiteView[LineageRow], LineageView):
    """Parent links, indexed by parent."""

    def index_statements(self) -> list[str]:
        return [
            f"CREATE INDEX IF NOT EXISTS {self.table_name}_parent "
            f"ON {self.table_name} (parent_session)"
        ]

    def select_children(self, parent_id: str) -> list[LineageRow]:
        sql = self._select_sql + "WHERE parent_session = ?"
        return self._read(sql, (encode_text(parent_id),))

    # UNION (not UNION ALL) drops revisited ids, so a cycle ends the recursion.
    def select_subtree(self, session_id: str) -> list[LineageRow]:
        sql = (
            f"WITH RECURSIVE below(id) AS (SELECT ? UNION "
            f"SELECT l.session_id FROM {self.table_name} l "
            f"JOIN below ON l.parent_session = below.id) "
            f"{self._select_sql}WHERE session_id IN (SELECT id FROM below) "
            f"AND session_id != ?"
        )
        key = encode_text(session_id)
        return self._read(sql, (key, key))

    def select_ancestry(self, session_id: str) -> list[LineageRow]:
        sql = (
            f"WITH RECURSIVE above(id) AS (SELECT ? UNION "
            f"SELECT l.parent_session FROM {self.table_name} l "
            f"JOIN above ON l.session_id = above.id "
            f"WHERE l.parent_session IS NOT NULL) "
            f"{self._select_sql}WHERE session_id IN (SELECT id FROM above)"
        )
        return self._read(sql, (encode_text(session_id),))


VIEW_CLASSES = ViewClasses(
    listing=SQLiteListingView, titles=SQLiteTitleView, lineage=SQLiteLineageView
)
