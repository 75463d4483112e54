"""The SQLite application recorder: the library's, plus the exact reads, the
stream writes (:class:`~agentlog.infrastructure.recorders.StreamWrites`), the
write guard and erasure."""

from __future__ import annotations

import json
import time
from functools import partial
from typing import TYPE_CHECKING, Any

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteAggregateRecorder

from agentlog.infrastructure.backends.sqlite.tables import (
    opening_facts,
    statements_ready,
)
from agentlog.infrastructure.eventsourcing_seam import SQLiteRecorderSeam, sqlite_insert
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

    from eventsourcing.sqlite import SQLiteCursor

    from agentlog.infrastructure.recorders import (
        CopyFrom,
        More,
        Place,
        Purge,
        Reseal,
        Row,
        Snapshot,
    )


class SQLiteSnapshotRecorder(SQLiteAggregateRecorder):
    """The library's snapshot recorder; its table is created only when
    missing, checked with the opening's one read (``backends.sqlite.tables``)."""

    def create_table(self) -> None:
        if not statements_ready(self):
            super().create_table()


class SQLiteSessionRecorder(SQLiteRecorderSeam, StreamWrites):
    """The library's SQLite recorder, plus the exact reads
    (:meth:`select_events_at`, :meth:`select_events_at_places`), the stream
    writes, the write guard and erasure.

    Its factory's connections run with ``secure_delete`` on
    (:class:`~agentlog.infrastructure.backends.sqlite.factory.AgentlogSQLiteFactory`).
    """

    flush_snapshots = True
    CHECKPOINT_ATTEMPTS = 10
    CHECKPOINT_WAIT = 0.02
    CHECKPOINT_BUSY_MS = 50

    def checkpoint(self) -> bool:
        """Copy the WAL into the database file and truncate it to zero bytes.

        A reader holding an old snapshot keeps the WAL from being reset; the call
        retries for about a second, then gives up and returns False (the next
        checkpoint, or the last connection closing, truncates it).
        """
        for attempt in range(self.CHECKPOINT_ATTEMPTS):
            with self.datastore.get_connection(commit=True) as connection:
                raw = connection.cursor()
                # TRUNCATE waits for readers through the busy handler: wait
                # briefly here and retry, instead of the connection's long timeout.
                raw.execute("PRAGMA busy_timeout")
                (timeout,) = raw.fetchone()
                raw.execute(f"PRAGMA busy_timeout = {self.CHECKPOINT_BUSY_MS}")
                try:
                    raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                    row = raw.fetchone()
                finally:
                    raw.execute(f"PRAGMA busy_timeout = {int(timeout)}")
            if row is None or row[0] == 0:
                return True
            time.sleep(self.CHECKPOINT_WAIT * (1 + attempt % 4))
        return False

    def insert_in_transaction(
        self,
        c: SQLiteCursor,
        stored_events: Sequence[StoredEvent],
        *,
        copy_from: CopyFrom | None = None,
        snapshot: Snapshot | None = None,
        snapshot_since: int | None = None,
        more: More = (),
        reseal: Reseal | None = None,
        **kwargs: Any,
    ) -> Sequence[int] | None:
        ids = self.library_insert(c, stored_events, **kwargs)
        for batch in more:
            self.library_insert(c, batch)
        if copy_from is not None and reseal is not None:

            def read(source: str, position: int, last: int) -> list[StoredEvent]:
                c.execute(
                    "SELECT originator_version, topic, state FROM "
                    f"{self.events_table_name} WHERE originator_id = ? AND "
                    "originator_version > ? AND originator_version <= ? "
                    "ORDER BY originator_version LIMIT ?",
                    (source, position, last, BATCH),
                )
                return [StoredEvent(source, *row) for row in c.fetchall()]

            copy_resealed(copy_from, reseal, read, partial(self.library_insert, c))
        elif copy_from is not None:
            (target,) = {str(event.originator_id) for event in stored_events}
            c.execute(
                f"INSERT INTO {self.events_table_name} "
                "(originator_id, originator_version, topic, state) "
                "SELECT ?, originator_version, topic, state "
                f"FROM {self.events_table_name} WHERE originator_id = ? "
                "AND originator_version BETWEEN 2 AND ? ORDER BY originator_version",
                (target, *copy_from),
            )
        if snapshot is not None:
            recorder, row = snapshot
            sqlite_insert(recorder, c, [row])
            if snapshot_since is not None:  # a flush's: it replaces those
                self._delete_snapshots_between(
                    c,
                    recorder,
                    str(row.originator_id),
                    snapshot_since,
                    row.originator_version,
                )
        # Checked after the inserts: the first statement of the transaction is a
        # write, so SQLite holds the write lock and no other writer interleaves.
        for session_id, first in first_versions(stored_events).items():
            self._check_continues(c, session_id, first)
        return ids

    def _check_continues(self, c: SQLiteCursor, session_id: str, first: int) -> None:
        def row(where: str, *params: int) -> Row | None:
            c.execute(
                "SELECT originator_version, topic FROM "
                f"{self.events_table_name} WHERE originator_id = ? {where}",
                (session_id, *params),
            )
            found = c.fetchone()
            return None if found is None else (found[0], found[1])

        check_continues(
            session_id,
            first,
            lambda version: row("AND originator_version = ?", version),
            lambda: row("ORDER BY originator_version DESC LIMIT 1"),
        )

    def _write_tombstones(
        self, c: SQLiteCursor, tombstones: Sequence[StoredEvent], purge: Purge
    ) -> None:
        # Freed pages and cells are overwritten with zeros (docs/erasure.md).
        c.execute("PRAGMA secure_delete = ON")
        self.insert_in_transaction(c, tombstones)
        purge(c)

    def _delete_below(self, c: SQLiteCursor, session_id: str, version: int) -> None:
        c.execute(
            f"DELETE FROM {self.events_table_name} "
            "WHERE originator_id = ? AND originator_version < ?",
            (session_id, version),
        )

    def construct_create_table_statements(self) -> list[str]:
        return [
            *super().construct_create_table_statements(),
            f"CREATE TABLE IF NOT EXISTS {ERASE_PENDING} "
            "(session_id TEXT PRIMARY KEY) WITHOUT ROWID",
        ]

    _none_pending = False
    """The opening's read found no erase pending: the open's own check
    (``resume``, ``open_views``) needs no read of its own."""

    def create_table(self) -> None:
        """The library's, run only when a table is missing; the opening's one
        read of the catalog (``backends.sqlite.tables``) answers the rest."""
        facts = opening_facts(self.datastore)
        self._none_pending = facts.erasures_pending is False
        if not statements_ready(self):
            super().create_table()

    def _record_pending(self, c: SQLiteCursor, session_ids: Sequence[str]) -> None:
        c.executemany(
            f"INSERT OR IGNORE INTO {ERASE_PENDING} (session_id) VALUES (?)",
            [(key,) for key in session_ids],
        )

    def erase_pending(self, limit: int) -> list[str]:
        if self._none_pending:  # read with the tables, at this open
            self._none_pending = False
            return []
        with self.datastore.transaction(commit=False) as c:
            c.execute(f"SELECT session_id FROM {ERASE_PENDING} LIMIT ?", (limit,))
            return [str(row[0]) for row in c.fetchall()]

    def erase_done(self, session_ids: Sequence[str]) -> None:
        with self.datastore.transaction(commit=True) as c:
            c.executemany(
                f"DELETE FROM {ERASE_PENDING} WHERE session_id = ?",
                [(key,) for key in session_ids],
            )

    def _delete_snapshots(
        self, c: SQLiteCursor, snapshots: Any, session_ids: Sequence[str]
    ) -> None:
        c.executemany(
            f"DELETE FROM {snapshots.events_table_name} WHERE originator_id = ?",
            [(key,) for key in session_ids],
        )

    def _insert_snapshot(
        self, c: SQLiteCursor, snapshots: Any, row: StoredEvent
    ) -> None:
        sqlite_insert(snapshots, c, [row])

    def _delete_snapshots_between(
        self, c: SQLiteCursor, snapshots: Any, session_id: str, first: int, below: int
    ) -> None:
        c.execute(
            f"DELETE FROM {snapshots.events_table_name} WHERE originator_id = ? "
            "AND originator_version >= ? AND originator_version < ?",
            (session_id, first, below),
        )

    def select_events_at(
        self, originator_id: str, versions: Sequence[int]
    ) -> list[StoredEvent]:
        """The stored events of one stream at exactly these versions, in order."""
        rows: list[StoredEvent] = []
        with self.datastore.transaction(commit=False) as cursor:
            for start in range(0, len(versions), BATCH):
                batch = list(versions[start : start + BATCH])
                marks = ",".join("?" * len(batch))
                cursor.execute(
                    "SELECT originator_version, topic, state FROM "
                    f"{self.events_table_name} WHERE originator_id=? AND "
                    f"originator_version IN ({marks}) ORDER BY originator_version",
                    [originator_id, *batch],
                )
                rows.extend(
                    StoredEvent(originator_id, version, topic, state)
                    for version, topic, state in cursor.fetchall()
                )
        return rows

    def select_events_at_places(self, places: Sequence[Place]) -> list[StoredEvent]:
        """The stored events at these places of any streams, in one statement.

        The places go as one JSON array (no bound on host parameters), joined
        on the primary key; a place without a row is left out. Ids must be
        storable (no lone surrogate): the caller leaves others out.
        """
        if not places:
            return []
        value = json.dumps([list(place) for place in places], ensure_ascii=False)
        with self.datastore.transaction(commit=False) as cursor:
            cursor.execute(
                "SELECT e.originator_id, e.originator_version, e.topic, e.state "
                "FROM json_each(?) AS p CROSS JOIN "
                f"{self.events_table_name} AS e "
                "ON e.originator_id = json_extract(p.value, '$[0]') "
                "AND e.originator_version = json_extract(p.value, '$[1]')",
                (value,),
            )
            return [StoredEvent(*row) for row in cursor.fetchall()]
