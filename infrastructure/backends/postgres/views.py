"""PostgreSQL views: tables in the events' schema, written with tracking.

Every view records its position in one table, ``agentlog_view_tracking``,
whichever factory built it (the application's, or a view worker's), so an
in-process ``catch_up`` and a worker process share positions and never apply a
notification twice. Ids are bytes (UTF-8, ``surrogatepass``): they sort by code
point, as in Python. Opening a view runs no DDL once its tables exist.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from eventsourcing.persistence import OperationalError
from psycopg.sql import SQL, Composed, Identifier, Literal

from agentlog.application.ports import ViewClasses
from agentlog.application.projections import (
    VIEW_TRACKING_TABLE,
    LineageView,
    TitleView,
)
from agentlog.application.view_rows import (
    LineageRow,
    ListingRow,
    Number,
    TitleRow,
    columns,
    row_values,
)
from agentlog.infrastructure.eventsourcing_seam import max_tracking_id_in
from agentlog.infrastructure.eventsourcing_seam_postgres import KeyedPostgresTracking
from agentlog.infrastructure.views import (
    column_decoder,
    column_param,
    decode_column,
    encode_column,
    encode_text,
)
from agentlog.infrastructure.views.ddl import schema_ready
from agentlog.infrastructure.views.schema_facts import (
    SchemaFacts,
    forget_facts,
    known_facts,
)
from agentlog.infrastructure.views.sql import SQLListingView, SQLView

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence
    from contextlib import AbstractContextManager

    from eventsourcing.postgres import PostgresDatastore
    from psycopg import Cursor
    from psycopg.rows import DictRow

    from agentlog.application.scope import Scope

TRow = TypeVar("TRow")
PG_TYPES = {
    "text": "bytea",
    "int": "bigint",
    "number": "numeric",
    "json": "bytea",
    "raw": "bytea",
}


class PostgresView(KeyedPostgresTracking, SQLView[TRow], Generic[TRow]):
    """A keyed table; created with the library's tracking table."""

    def __init__(self, datastore: PostgresDatastore, **kwargs: Any) -> None:
        kwargs["tracking_table_name"] = VIEW_TRACKING_TABLE
        super().__init__(datastore, **kwargs)
        raw = self.sealed_columns()
        self._columns = [
            (name, "raw" if name in raw else kind)
            for name, kind in columns(self.row_type)
        ]
        self._decoders = [column_decoder(kind) for _, kind in self._columns]
        schema = Identifier(self.datastore.schema)
        table = Identifier(self.table_name)
        self._table = SQL("{0}.{1}").format(schema, table)
        self._tracking_table = SQL("{0}.{1}").format(
            schema, Identifier(self.tracking_table_name)
        )
        names = SQL(", ").join(Identifier(name) for name, _ in self._columns)
        definitions = SQL(", ").join(
            SQL("{0} {1}{2}").format(
                Identifier(name),
                SQL(PG_TYPES[kind]),
                SQL(" PRIMARY KEY" if i == 0 else ""),
            )
            for i, (name, kind) in enumerate(self._columns)
        )
        self.sql_create_statements.append(
            SQL("CREATE TABLE IF NOT EXISTS {0} ({1})").format(self._table, definitions)
        )
        self.sql_create_statements.extend(self.index_statements())
        if self.plain_table_name:
            # Encryption was turned on: the plaintext rows go, and their position.
            plain = self.view_name.removesuffix(".sealed")
            self.sql_create_statements += [
                SQL("DROP TABLE IF EXISTS {0}.{1}").format(
                    schema, Identifier(self.plain_table_name)
                ),
                SQL("DELETE FROM {0} WHERE application_name LIKE {1}").format(
                    self._tracking_table, Literal(f"%#{plain}")
                ),
            ]
        self._select_sql = SQL("SELECT {0} FROM {1} ").format(names, self._table)
        marks = SQL(", ").join(SQL("%s") for _ in self._columns)
        updates = SQL(", ").join(
            SQL("{0} = EXCLUDED.{0}").format(Identifier(name))
            for name, _ in self._columns[1:]
        )
        self._upsert_sql = SQL(
            "INSERT INTO {0} ({1}) VALUES ({2}) "
            "ON CONFLICT (session_id) DO UPDATE SET {3}"
        ).format(self._table, names, marks, updates)

    def index_statements(self) -> list[Composed]:
        return []

    def _index_name(self, suffix: str) -> Identifier:
        return Identifier(f"{self.table_name}_{suffix}")

    # ------------------------------------------------------------ tracking

    def create_table(self) -> None:
        """Run the library's DDL only if a table or index is missing.

        ``CREATE INDEX IF NOT EXISTS`` takes a SHARE lock on its table even when
        the index exists: each opener waited for every open write on the view
        (and queued the next writers behind it), or failed under a
        ``lock_timeout``. A read of the catalog takes no such lock.
        """
        if not self.tables_ready():
            super().create_table()

    def tables_ready(self) -> bool:
        """Whether the statements would change nothing; records what the
        library's ``create_table`` records about the tracking table."""
        statements = [s.as_string() for s in self.sql_create_statements]
        # The views of one datastore share one read of the catalog; a view
        # that finds something missing forgets it (``views.schema_facts``).
        facts = known_facts(self.datastore, self._read_facts)
        if self.tracking_table_name.lower() not in facts.names:
            forget_facts(self.datastore)
            return False
        previous = facts.migration
        self.tracking_table_exists = True
        self.tracking_migration_previous = previous
        self.tracking_migration_current = previous
        single_row = self.datastore.single_row_tracking
        if (previous is None and single_row) or not schema_ready(
            facts.names, statements
        ):
            forget_facts(self.datastore)
            return False
        if not single_row and previous is not None:
            msg = "Can't do multi-row tracking with single-row tracking table"
            raise OperationalError(msg)
        self.datastore.register_type_adapters()
        return True

    def _read_facts(self) -> SchemaFacts:
        """The schema's tables and indexes and the views' migration row."""
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n "
                "ON n.oid = c.relnamespace WHERE n.nspname = %s",
                (self.datastore.schema,),
            )
            names = frozenset(str(row["relname"]).lower() for row in curs.fetchall())
            previous = None
            if self.tracking_table_name.lower() in names:
                previous = max_tracking_id_in(
                    self, self.table_migration_identifier, curs
                )
        return SchemaFacts(names, previous)

    # ---------------------------------------------------------------- rows

    def _encode(self, row: TRow) -> tuple[Any, ...]:
        return tuple(
            encode_column(kind, value, bounded_ints=False)
            for (_, kind), value in zip(
                self._columns, row_values(self._stored(row)), strict=True
            )
        )

    def _decode(self, record: DictRow) -> TRow:
        values = [
            None if (value := record[name]) is None else decode(value)
            for (name, _), decode in zip(self._columns, self._decoders, strict=True)
        ]
        return self.row_type(*values)  # type: ignore[no-any-return]

    def _fetch_stored(
        self, curs: Cursor[DictRow], sql: Composed, params: Sequence[Any]
    ) -> list[TRow]:
        curs.execute(sql, params)
        return [self._decode(record) for record in curs.fetchall()]

    def _select(self, curs: Cursor[DictRow], keys: Collection[str]) -> dict[str, TRow]:
        if not keys:
            return {}
        sql = self._select_sql + SQL("WHERE session_id = ANY(%s)")
        rows = self._fetch(curs, sql, ([encode_text(key) for key in keys],))
        return {row.session_id: row for row in rows}  # type: ignore[attr-defined]

    def _delete(self, curs: Cursor[DictRow], session_ids: Collection[str]) -> None:
        curs.execute(
            SQL("DELETE FROM {0} WHERE session_id = ANY(%s)").format(self._table),
            ([encode_text(key) for key in session_ids],),
        )

    def select_all(self) -> list[TRow]:
        return self._read(self._select_sql + SQL("ORDER BY session_id"), ())

    def _reading(self) -> AbstractContextManager[Cursor[DictRow]]:
        """A cursor of an autocommit connection: a read of one statement is a
        transaction of its own, without the round trips of ``BEGIN`` and
        ``ROLLBACK`` around it."""
        return self.datastore.cursor()

    def _top_and_positions(
        self, recorder: Any, keys: Sequence[str]
    ) -> tuple[int | None, dict[str, int]]:
        """One statement (one round trip): the log's top first, then each
        key's position, in the key's order (``NULL``: none yet)."""
        statement = SQL(
            "SELECT (SELECT max(notification_id) FROM {0}.{1}) AS top, "
            "ARRAY(SELECT (SELECT max(t.notification_id) FROM {2} AS t "
            "WHERE t.application_name = k.name) "
            "FROM unnest(%s::text[]) WITH ORDINALITY AS k(name, n) "
            "ORDER BY k.n) AS positions"
        ).format(
            Identifier(recorder.datastore.schema),
            Identifier(recorder.events_table_name),
            self._tracking_table,
        )
        with self._reading() as curs:
            curs.execute(statement, (list(keys),), prepare=True)
            row = curs.fetchone()
        assert row is not None
        found = {
            key: position
            for key, position in zip(keys, row["positions"], strict=True)
            if position is not None
        }
        return row["top"], found

    def clear(self, application_name: str) -> None:
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(SQL("DELETE FROM {0}").format(self._table))
            curs.execute(
                SQL("DELETE FROM {0} WHERE application_name = %s").format(
                    self._tracking_table
                ),
                (self.tracking_key(application_name),),
            )


def _scoped(
    view: PostgresListingView, scope: Scope | None
) -> tuple[Composed, list[Any]]:
    """``AND column = %s`` (or ``IS NULL``) per column the scope constrains
    (a sealed view compares the filter columns' tokens)."""
    parts: list[Composed] = []
    params: list[Any] = []
    for column, value in [] if scope is None else view.scope_pairs(scope.columns()):
        if value is None:
            parts.append(SQL("AND {0} IS NULL ").format(Identifier(column)))
        else:
            parts.append(SQL("AND {0} = %s ").format(Identifier(column)))
            params.append(column_param(value))
    return SQL("").join(parts), params


class PostgresListingView(PostgresView[ListingRow], SQLListingView):
    """The listing, indexed for newest-first keyset paging, overall and per
    ``(cwd, owner)`` and ``owner`` (scoped listings, docs/scope.md)."""

    def index_statements(self) -> list[Composed]:
        return [
            SQL(
                "CREATE INDEX IF NOT EXISTS {0} ON {1} (created_at DESC, session_id)"
            ).format(self._index_name("recent"), self._table),
            SQL(
                "CREATE INDEX IF NOT EXISTS {0} ON {1} "
                "(cwd, owner, created_at DESC, session_id)"
            ).format(self._index_name("scope"), self._table),
            SQL(
                "CREATE INDEX IF NOT EXISTS {0} ON {1} "
                "(owner, created_at DESC, session_id)"
            ).format(self._index_name("owner"), self._table),
        ]

    def page_query(
        self,
        *,
        limit: int,
        after: tuple[Number, str] | None = None,
        scope: Scope | None = None,
    ) -> tuple[Composed, list[Any]]:
        """The SQL and parameters :meth:`select_page` runs (tests explain it)."""
        where, params = _scoped(self, scope)
        sql = self._select_sql + SQL("WHERE header IS NOT NULL ") + where
        if after is not None:
            sql += SQL(
                "AND (created_at < %s OR (created_at = %s AND session_id > %s)) "
            )
            params += [after[0], after[0], encode_text(after[1])]
        sql += SQL("ORDER BY created_at DESC, session_id LIMIT %s")
        params.append(limit)
        return sql, params

    def select_headers(self, *, scope: Scope | None = None) -> list[dict[str, Any]]:
        where, params = _scoped(self, scope)
        if self.sealed:
            sql = self._select_sql + SQL("WHERE header IS NOT NULL ") + where
            return [row.header for row in self._read(sql, params) if row.header]
        sql = SQL("SELECT header FROM {0} WHERE header IS NOT NULL ").format(
            self._table
        )
        with self._reading() as curs:
            curs.execute(sql + where, params)
            return [
                decode_column("json", record["header"]) for record in curs.fetchall()
            ]


class PostgresTitleView(PostgresView[TitleRow], TitleView):
    """Latest title event per session."""


class PostgresLineageView(PostgresView[LineageRow], LineageView):
    """Parent links, indexed by parent."""

    def index_statements(self) -> list[Composed]:
        return [
            SQL("CREATE INDEX IF NOT EXISTS {0} ON {1} (parent_session)").format(
                self._index_name("parent"), self._table
            )
        ]

    def select_children(self, parent_id: str) -> list[LineageRow]:
        sql = self._select_sql + SQL("WHERE parent_session = %s")
        return self._read(sql, (encode_text(parent_id),))

    # UNION (not UNION ALL) drops revisited ids, so a cycle ends the recursion.
    def select_subtree(self, session_id: str) -> list[LineageRow]:
        sql = SQL(
            "WITH RECURSIVE below(id) AS (SELECT %s::bytea UNION "
            "SELECT l.session_id FROM {0} l JOIN below ON l.parent_session = below.id) "
            "{1}WHERE session_id IN (SELECT id FROM below) AND session_id != %s"
        ).format(self._table, self._select_sql)
        key = encode_text(session_id)
        return self._read(sql, (key, key))

    def select_ancestry(self, session_id: str) -> list[LineageRow]:
        sql = SQL(
            "WITH RECURSIVE above(id) AS (SELECT %s::bytea UNION "
            "SELECT l.parent_session FROM {0} l JOIN above ON l.session_id = above.id "
            "WHERE l.parent_session IS NOT NULL) "
            "{1}WHERE session_id IN (SELECT id FROM above)"
        ).format(self._table, self._select_sql)
        return self._read(sql, (encode_text(session_id),))


VIEW_CLASSES = ViewClasses(
    listing=PostgresListingView, titles=PostgresTitleView, lineage=PostgresLineageView
)
