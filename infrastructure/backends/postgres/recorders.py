"""The PostgreSQL application recorder: the library's, plus the stream writes
(:class:`~agentlog.infrastructure.recorders.StreamWrites`), the write guard,
erasure and :meth:`PostgresSessionRecorder.select_events_at_places`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eventsourcing.persistence import StoredEvent
from psycopg.sql import SQL, Composed, Identifier

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
    from collections.abc import Sequence

    from eventsourcing.persistence import ApplicationRecorder, Subscription
    from psycopg import Cursor
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


class PostgresSessionRecorder(PostgresRecorderSeam, StreamWrites):
    """The library's PostgreSQL recorder, plus the stream writes and
    :meth:`select_events_at_places`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._add_pending_table()

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
        snapshot_since: int | None = None,
        more: More = (),
        reseal: Reseal | None = None,
        **kwargs: Any,
    ) -> None:
        # The table lock serialises every write of the events table, so the
        # guard's reads cannot go stale before the insert.
        self.lock_table(curs)
        with curs.connection.cursor() as probe:
            for session_id, first in first_versions(stored_events).items():
                self._check_continues(probe, session_id, first)
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
            # Another cursor, as above; a flush's snapshot replaces the earlier
            # ones of its interval (``snapshot_since``).
            with curs.connection.cursor() as extra:
                recorder, row = snapshot
                postgres_insert(recorder, extra, [row])
                if snapshot_since is not None:
                    self._delete_snapshots_between(
                        extra,
                        recorder,
                        str(row.originator_id),
                        snapshot_since,
                        row.originator_version,
                    )

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

    @property
    def _events_table(self) -> Composed:
        return SQL("{0}.{1}").format(
            Identifier(self.datastore.schema), Identifier(self.events_table_name)
        )

    def _check_continues(self, probe: Cursor[Any], session_id: str, first: int) -> None:
        def row(where: str, *params: int) -> Row | None:
            probe.execute(
                SQL(
                    "SELECT originator_version, topic FROM {0} "
                    "WHERE originator_id = %s " + where
                ).format(self._events_table),
                (session_id, *params),
            )
            found = probe.fetchone()
            return (
                None if found is None else (found["originator_version"], found["topic"])
            )

        check_continues(
            session_id,
            first,
            lambda version: row("AND originator_version = %s", version),
            lambda: row("ORDER BY originator_version DESC LIMIT 1"),
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
        with self.datastore.transaction(commit=False) as curs:
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
