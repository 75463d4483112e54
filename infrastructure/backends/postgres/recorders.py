"""The PostgreSQL application recorder: the library's, plus the stream writes
(:class:`~agentlog.infrastructure.recorders.StreamWrites`), the write guard,
erasure, :meth:`PostgresSessionRecorder.select_events_at_places` and a flush
in two round trips (:meth:`PostgresSessionRecorder.insert_events`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg
from eventsourcing.persistence import (
    IntegrityError,
    InterfaceError,
    OperationalError,
    StoredEvent,
)
from eventsourcing.utils import retry
from psycopg.sql import SQL, Composed, Identifier, Literal

from agentlog.application.stored_log import VERSION_MAX
from agentlog.domain.errors import SessionErasedError
from agentlog.domain.topics import ERASED_TOPIC
from agentlog.infrastructure.backends.postgres.pooler import listens
from agentlog.infrastructure.eventsourcing_seam_postgres import (
    PollingPostgresSubscription,
    PostgresRecorderSeam,
    postgres_insert,
)
from agentlog.infrastructure.recorders import (
    BATCH,
    ERASE_PENDING,
    StreamWrites,
    check_continues,
    copy_resealed,
    first_versions,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from eventsourcing.persistence import ApplicationRecorder, Subscription
    from psycopg import Connection, Cursor
    from psycopg.rows import DictRow

    from agentlog.infrastructure.recorders import (
        CopyFrom,
        More,
        Place,
        Purge,
        Reseal,
        Row,
        Snapshot,
    )


WRITE_FUNCTION = "agentlog_write_v1"
"""The plain write in one statement (its version in its name: a change is a
new function, and every version's recorder finds its own)."""
ERASED_SQLSTATE = "AGE01"
"""The write function's refusal of a write to an erased stream."""
UNDEFINED_FUNCTION = "42883"


class PostgresSessionRecorder(PostgresRecorderSeam, StreamWrites):
    """The library's PostgreSQL recorder, plus the stream writes and
    :meth:`select_events_at_places`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._add_pending_table()
        events = self._events_table
        # Per stream written: the row just below the first version written and
        # the stream's top row, the two rows ``check_continues`` may consult.
        # Plain parameters, no arrays: PostgreSQL then keeps one generic plan
        # of the prepared statement instead of planning it at every flush.
        self._guard_statement = SQL(
            "(SELECT false AS top, originator_version, topic FROM {0} "
            "WHERE originator_id = %s AND originator_version = %s) "
            "UNION ALL (SELECT true, originator_version, topic FROM {0} "
            "WHERE originator_id = %s ORDER BY originator_version DESC LIMIT 1)"
        ).format(events)
        self._notify_statement = SQL("NOTIFY {0}").format(Identifier(self.channel_name))
        self._add_write_function()
        self.writes_in_one_statement = True
        """Whether a plain write calls the write function (not found: the
        pipelined write, from then on)."""

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """The library's insert; a plain one (a flush) in one round trip.

        The library's pipeline waits for the server six times per flush (its
        transaction block syncs on entry and exit, the write guard reads, the
        insert syncs, the commit, the pipeline's end). A plain write is one
        call of the write function (:meth:`_add_write_function`) in a
        transaction of its own: the table lock, the write guard, the
        notification and the insert, committed as the statement ends. Where
        the function is missing (tables created by an earlier version with
        table creation turned off), the write is pipelined in two round trips
        (:meth:`_insert_pipelined`). Same lock and transaction either way: what
        commits, and in which order, is unchanged.
        """
        plain = not any(kwargs.values())  # no copy, more, snapshot, tracking
        if not plain or not stored_events or self.datastore.enable_db_functions:
            ids: Sequence[int] | None = super().insert_events(stored_events, **kwargs)
            return ids
        written: list[int] = self._insert_plain(stored_events)
        return written

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def _insert_plain(self, stored_events: Sequence[StoredEvent]) -> list[int]:
        """One call of the write function (the library's retry of a lost
        connection, as its ``insert_events``)."""
        if not self.writes_in_one_statement:
            return self._insert_pipelined(stored_events)
        firsts = first_versions(stored_events)
        rows = self._pg_rows(stored_events)
        params = (
            rows,
            list(firsts),
            [first - 1 for first in firsts.values()],
            ERASED_TOPIC,
            f"{self.datastore.lock_timeout}s",
        )
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            try:
                curs.execute(self._write_call, params, prepare=True)
            except psycopg.Error as error:
                if error.sqlstate == ERASED_SQLSTATE:
                    raise SessionErasedError(error.diag.message_detail or "") from None
                if isinstance(error, psycopg.IntegrityError):
                    # A lost race, typed as the library types it. Raised typed
                    # from here, it keeps the connection: one statement out of
                    # a pipeline leaves its prepared statements as they were.
                    raise IntegrityError(str(error)) from error
                if error.sqlstate != UNDEFINED_FUNCTION:
                    raise
            else:
                return [row["id"] for row in curs.fetchall()]
        self.writes_in_one_statement = False  # the function is missing
        return self._insert_pipelined(stored_events)

    def _add_write_function(self) -> None:
        """The write function, created (or replaced) with the tables.

        It is :func:`check_continues` in PL/pgSQL, between the table lock and
        the insert: the row below the first version written, else the stream's
        top row, must not be a tombstone (SQLSTATE ``AGE01``, the stream in
        its detail). It decides in the database so that the write and its
        commit are one round trip; the pipelined write and the other backends
        decide in Python. ``tests/infrastructure/contracts/recorder_cases.py``
        runs the same cases through both.
        """
        schema = Identifier(self.datastore.schema)
        table = SQL("{0}.{1}").format(schema, Identifier(self.events_table_name))
        function = SQL("{0}.{1}").format(schema, Identifier(WRITE_FUNCTION))
        self.sql_create_statements.append(
            SQL(
                "CREATE OR REPLACE FUNCTION {function}("
                "written {schema}.{event_type}[], streams text[], belows bigint[], "
                "tombstone text, lock_wait text) RETURNS SETOF bigint "
                "LANGUAGE plpgsql AS $agentlog$ "
                "DECLARE i integer; decided text; "
                "BEGIN "
                "PERFORM set_config('lock_timeout', lock_wait, true); "
                "LOCK TABLE {table} IN EXCLUSIVE MODE; "
                "FOR i IN 1 .. coalesce(array_length(streams, 1), 0) LOOP "
                "decided := NULL; "
                "SELECT e.topic INTO decided FROM {table} AS e "
                "WHERE e.originator_id = streams[i] "
                "AND e.originator_version = belows[i]; "
                "IF NOT FOUND THEN "
                "SELECT e.topic INTO decided FROM {table} AS e "
                "WHERE e.originator_id = streams[i] "
                "ORDER BY e.originator_version DESC LIMIT 1; "
                "END IF; "
                "IF decided = tombstone THEN "
                "RAISE EXCEPTION 'the stream is erased' "
                "USING ERRCODE = {erased}, DETAIL = streams[i]; "
                "END IF; "
                "END LOOP; "
                "NOTIFY {channel}; "
                "RETURN QUERY INSERT INTO {table} "
                "(originator_id, originator_version, topic, state) "
                "SELECT w.originator_id, w.originator_version, w.topic, w.state "
                "FROM unnest(written) AS w RETURNING notification_id; "
                "END $agentlog$"
            ).format(
                function=function,
                schema=schema,
                event_type=Identifier(self.stored_event_type_name),
                table=table,
                erased=Literal(ERASED_SQLSTATE),
                channel=Identifier(self.channel_name),
            )
        )
        self._write_call = SQL(
            "SELECT w.id FROM {0}(%s, %s::text[], %s::bigint[], %s, %s) AS w(id)"
        ).format(function)

    def _pg_rows(self, stored_events: Sequence[StoredEvent]) -> list[Any]:
        """The rows as the library's composite type."""
        return [
            self.construct_pg_stored_event(
                event.originator_id, event.originator_version, event.topic, event.state
            )
            for event in stored_events
        ]

    def _insert_pipelined(self, stored_events: Sequence[StoredEvent]) -> list[int]:
        """Lock, guard, notify and insert in one wait, the guard deciding in
        Python (:func:`check_continues`), commit in a second."""
        firsts = list(first_versions(stored_events).items())
        rows = self._pg_rows(stored_events)
        error: Exception | None = None
        ids: list[int] = []
        with self.datastore.get_connection() as conn:
            with (
                conn.pipeline() as pipeline,
                conn.cursor() as curs,
                conn.cursor() as insert,
            ):
                try:
                    curs.execute("BEGIN")
                    for statement in self.lock_table_statements:
                        curs.execute(statement, prepare=True)
                    guards = [self._execute_guard(conn, *first) for first in firsts]
                    curs.execute(self._notify_statement, prepare=True)
                    insert.execute(self.insert_events_statement, (rows,), prepare=True)
                    pipeline.sync()  # the first wait: raises a statement's error
                    for (session_id, first), guard in zip(firsts, guards, strict=True):
                        self._check_guard(guard, session_id, first)
                    ids = [row["notification_id"] for row in insert.fetchall()]
                    curs.execute("COMMIT")  # sent and awaited as the pipeline ends
                except Exception as caught:  # re-raised once the pipeline has ended
                    error = caught
            if error is not None:
                # Raised through the pool's connection block, which rolls the
                # transaction back before it takes the connection back.
                raise error
        return ids

    def subscribe(
        self, gt: int | None = None, topics: Sequence[str] = ()
    ) -> Subscription[ApplicationRecorder]:
        """The library's ``LISTEN`` subscription, or a polling one behind a
        transaction-mode pooler (where a ``LISTEN`` hears nothing)."""
        if listens(self.datastore):
            return super().subscribe(gt, topics)
        return PollingPostgresSubscription(recorder=self, gt=gt, topics=topics)

    def insert_in_transaction(
        self,
        curs: Cursor[DictRow],
        stored_events: Sequence[StoredEvent],
        *,
        copy_from: CopyFrom | None = None,
        snapshot: Snapshot | None = None,
        more: More = (),
        reseal: Reseal | None = None,
        **kwargs: Any,
    ) -> None:
        # The table lock serialises every write of the events table, so the
        # guard's reads cannot go stale before the insert.
        self.lock_table(curs)
        for session_id, first in first_versions(stored_events).items():
            with self._execute_guard(curs.connection, session_id, first) as probe:
                self._check_guard(probe, session_id, first)
        # The library locks the table and notifies before inserting the header,
        # so the copied rows take the notification ids after it, in commit order.
        self.library_insert(curs, stored_events, **kwargs)
        for batch in more:
            # Another cursor: the library fetches the first rows' notification ids
            # from this one afterwards. The table is already locked.
            with curs.connection.cursor() as rest:
                self.insert_rows_only(rest, batch)
        if copy_from is not None:
            (target,) = {str(event.originator_id) for event in stored_events}
            table = SQL("{0}.{1}").format(
                Identifier(self.datastore.schema), Identifier(self.events_table_name)
            )
            # Another cursor: the library fetches the header's notification id
            # from this one afterwards.
            with curs.connection.cursor() as copy:
                if reseal is not None:
                    self._copy_resealed(copy, table, copy_from, reseal)
                else:
                    copy.execute(
                        SQL(
                            "INSERT INTO {0} "
                            "(originator_id, originator_version, topic, state) "
                            "SELECT %s, originator_version, topic, state FROM {0} "
                            "WHERE originator_id = %s "
                            "AND originator_version BETWEEN 2 AND %s "
                            "ORDER BY originator_version"
                        ).format(table),
                        (target, *copy_from),
                    )
                if snapshot is not None:
                    recorder, row = snapshot
                    postgres_insert(recorder, copy, [row])

    def _copy_resealed(
        self, curs: Cursor[DictRow], table: Any, copy_from: CopyFrom, reseal: Reseal
    ) -> None:
        """Copy the source's rows a batch at a time, each through ``reseal``."""

        def read(source: str, position: int, last: int) -> list[StoredEvent]:
            curs.execute(
                SQL(
                    "SELECT originator_version, topic, state FROM {0} "
                    "WHERE originator_id = %s AND originator_version > %s "
                    "AND originator_version <= %s ORDER BY originator_version LIMIT %s"
                ).format(table),
                (source, position, last, BATCH),
            )
            return [
                StoredEvent(
                    source, row["originator_version"], row["topic"], row["state"]
                )
                for row in curs.fetchall()
            ]

        def write(batch: list[StoredEvent]) -> None:
            with curs.connection.cursor() as rest:
                self.insert_rows_only(rest, batch)

        copy_resealed(copy_from, reseal, read, write)

    def select_events_at_places(self, places: Sequence[Place]) -> list[StoredEvent]:
        """The stored events at these places of any streams, in one statement
        (one round trip): the places go as two arrays, unnested and joined on
        the primary key; a place without a row is left out. Ids must be
        storable (no NUL): the caller leaves others out."""
        if not places:
            return []
        statement = SQL(
            "SELECT e.originator_id, e.originator_version, e.topic, e.state "
            "FROM unnest(%s::text[], %s::bigint[]) AS p(id, version) "
            "JOIN {0} AS e "
            "ON e.originator_id = p.id AND e.originator_version = p.version"
        ).format(self._events_table)
        ids = [place[0] for place in places]
        versions = [place[1] for place in places]
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(statement, (ids, versions), prepare=True)
            return [
                StoredEvent(
                    row["originator_id"],
                    row["originator_version"],
                    row["topic"],
                    bytes(row["state"]),
                )
                for row in curs.fetchall()
            ]

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def select_snapshot_and_events(
        self, snapshots: object, originator_id: str, lte: int | None = None
    ) -> tuple[StoredEvent | None, list[StoredEvent]] | None:
        """The stream's latest snapshot at or below ``lte`` and its events
        after it (up to ``lte``), in one statement: what the library's
        repository reads in two. ``None``: ``snapshots`` is not a recorder of
        this datastore (the caller reads as the library does)."""
        datastore = getattr(snapshots, "datastore", None)
        table_name = getattr(snapshots, "events_table_name", None)
        if datastore is not self.datastore or not isinstance(table_name, str):
            return None
        statement = self._snapshot_and_events_statement(table_name)
        bound = VERSION_MAX if lte is None else min(lte, VERSION_MAX)
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(
                statement, (originator_id, bound, originator_id, bound), prepare=True
            )
            snapshot: StoredEvent | None = None
            events: list[StoredEvent] = []
            for row in curs.fetchall():
                stored = StoredEvent(
                    originator_id,
                    row["originator_version"],
                    row["topic"],
                    bytes(row["state"]),
                )
                if row["snapshot"]:
                    snapshot = stored
                else:
                    events.append(stored)
        # Sorted here, not by the server: the rows come in order already.
        events.sort(key=_version)
        return snapshot, events

    def _snapshot_and_events_statement(self, snapshots_table: str) -> Composed:
        """Plain parameters (the id and the bound, twice each), so PostgreSQL keeps one
        generic plan; both reads see the statement's one snapshot, so an
        erase (tombstone written, snapshots deleted) is seen whole or not."""
        snapshots = SQL("{0}.{1}").format(
            Identifier(self.datastore.schema), Identifier(snapshots_table)
        )
        return SQL(
            "WITH s AS MATERIALIZED (SELECT originator_id, originator_version, "
            "topic, state FROM {0} WHERE originator_id = %s "
            "AND originator_version <= %s "
            "ORDER BY originator_version DESC LIMIT 1) "
            "SELECT true AS snapshot, originator_version, topic, state FROM s "
            "UNION ALL (SELECT false, e.originator_version, e.topic, e.state "
            "FROM {1} AS e WHERE e.originator_id = %s "
            "AND e.originator_version > coalesce("
            "(SELECT originator_version FROM s), 0) "
            "AND e.originator_version <= %s ORDER BY e.originator_version)"
        ).format(snapshots, self._events_table)

    @property
    def _events_table(self) -> Composed:
        return SQL("{0}.{1}").format(
            Identifier(self.datastore.schema), Identifier(self.events_table_name)
        )

    def _execute_guard(
        self, connection: Connection[Any], session_id: str, first: int
    ) -> Cursor[Any]:
        """A cursor reading the rows the guard of a stream written from
        version ``first`` consults (after the table's lock: they cannot go
        stale); in a pipeline, they are read at its next sync."""
        curs = connection.cursor()
        curs.execute(
            self._guard_statement, (session_id, first - 1, session_id), prepare=True
        )
        return curs

    def _check_guard(self, curs: Cursor[Any], session_id: str, first: int) -> None:
        """Refuse the write (``check_continues``) from the guard's rows: the
        row at ``first - 1`` if there is one, then the stream's top row."""
        rows: dict[bool, Row] = {
            row["top"]: (row["originator_version"], row["topic"])
            for row in curs.fetchall()
        }
        curs.close()
        check_continues(
            session_id, first, _given(rows.get(False)), _given(rows.get(True))
        )

    def _write_tombstones(
        self, curs: Cursor[DictRow], tombstones: Sequence[StoredEvent], purge: Purge
    ) -> None:
        self.insert_in_transaction(curs, tombstones)
        with curs.connection.cursor() as views:
            purge(views)

    @property
    def _pending_table(self) -> Composed:
        return SQL("{0}.{1}").format(
            Identifier(self.datastore.schema), Identifier(ERASE_PENDING)
        )

    def _add_pending_table(self) -> None:
        """Created with the events table (the library runs its statements)."""
        self.sql_create_statements.append(
            SQL("CREATE TABLE IF NOT EXISTS {0} (session_id text PRIMARY KEY)").format(
                self._pending_table
            )
        )

    def _record_pending(
        self, curs: Cursor[DictRow], session_ids: Sequence[str]
    ) -> None:
        curs.execute(
            SQL(
                "INSERT INTO {0} (session_id) SELECT unnest(%s::text[]) "
                "ON CONFLICT DO NOTHING"
            ).format(self._pending_table),
            (list(session_ids),),
        )

    def erase_pending(self, limit: int) -> list[str]:
        # One statement outside a transaction block: every opening reads it.
        with self.datastore.cursor() as curs:
            curs.execute(
                SQL("SELECT session_id FROM {0} LIMIT %s").format(self._pending_table),
                (limit,),
            )
            return [str(row["session_id"]) for row in curs.fetchall()]

    def erase_done(self, session_ids: Sequence[str]) -> None:
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(
                SQL("DELETE FROM {0} WHERE session_id = ANY(%s)").format(
                    self._pending_table
                ),
                (list(session_ids),),
            )

    def vacuum_full(self) -> None:
        """Rewrite every table of the store's schema (``VACUUM FULL``): the
        only way PostgreSQL drops deleted rows' bytes from the table and index
        pages now (a plain ``VACUUM`` leaves them until the space is reused).
        Each table is locked while it is rewritten (docs/erasure.md)."""
        schema = self.datastore.schema
        with self.datastore.get_connection() as connection:
            previous = connection.autocommit
            connection.autocommit = True  # VACUUM runs outside a transaction
            try:
                rows = connection.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = %s "
                    "ORDER BY tablename",
                    (schema,),
                ).fetchall()
                for row in rows:
                    name = row["tablename"] if isinstance(row, dict) else row[0]
                    connection.execute(
                        SQL("VACUUM FULL {0}.{1}").format(
                            Identifier(schema), Identifier(name)
                        )
                    )
            finally:
                connection.autocommit = previous

    def _delete_below(
        self, curs: Cursor[DictRow], session_id: str, version: int
    ) -> None:
        curs.execute(
            SQL(
                "DELETE FROM {0} WHERE originator_id = %s AND originator_version < %s"
            ).format(self._events_table),
            (session_id, version),
        )

    def _insert_snapshot(
        self, curs: Cursor[DictRow], snapshots: Any, row: StoredEvent
    ) -> None:
        postgres_insert(snapshots, curs, [row])

    def _delete_snapshots_between(
        self,
        curs: Cursor[DictRow],
        snapshots: Any,
        session_id: str,
        first: int,
        below: int,
    ) -> None:
        curs.execute(
            SQL(
                "DELETE FROM {0}.{1} WHERE originator_id = %s "
                "AND originator_version >= %s AND originator_version < %s"
            ).format(
                Identifier(snapshots.datastore.schema),
                Identifier(snapshots.events_table_name),
            ),
            (session_id, first, below),
        )

    def _delete_snapshots(
        self, curs: Cursor[DictRow], snapshots: Any, session_ids: Sequence[str]
    ) -> None:
        curs.execute(
            SQL("DELETE FROM {0}.{1} WHERE originator_id = ANY(%s)").format(
                Identifier(snapshots.datastore.schema),
                Identifier(snapshots.events_table_name),
            ),
            (list(session_ids),),
        )


def _version(event: StoredEvent) -> int:
    return event.originator_version


def _given(row: Row | None) -> Callable[..., Row | None]:
    """A reader of the guard's row that was read already."""
    return lambda *_: row
