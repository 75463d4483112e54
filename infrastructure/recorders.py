"""The library's recorders plus two operations: exact reads and stream copies.

Deriving messages needs only the events on the surface; a long session holds five
or more log-only rows (stream chunks, boundaries) per message. Reading exactly the
surface rows, instead of ranges that include the chunks between them, is the
difference between decoding the surface and fetching the whole log.

A fork of a stored session copies the parent's rows in the database
(:meth:`copy_stream`): the rows were validated when they were appended, and a
row's state (its log line) names no session, so it is copied byte for byte with
its version (seq) unchanged; with per-session encryption each row is instead read a
batch at a time and sealed again under the child's key (``reseal``), still in the
same transaction (docs/encryption.md). The copy rides the library's ``insert_events``
keyword hook, the way a process recorder adds its tracking row: the child's header
row and the copied rows commit in one transaction, with the library's own table
locking and notification, in constant memory however long the parent is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from eventsourcing.persistence import ApplicationRecorder, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder
from eventsourcing.sqlite import SQLiteApplicationRecorder
from psycopg.sql import SQL, Identifier

if TYPE_CHECKING:
    from eventsourcing.sqlite import SQLiteCursor
    from psycopg import Cursor
    from psycopg.rows import DictRow

CopyFrom = tuple[str, int]
"""``(source session id, last version)``: copy versions 2..last of the source."""
Snapshot = tuple[Any, StoredEvent]
"""``(snapshot recorder on the same datastore, its row)``: written in the copy's
transaction, so a fork commits once."""
Reseal = Callable[[StoredEvent], StoredEvent]
"""Turns a source row into the copy's row (opened with one key, sealed with
another); without it rows are copied byte for byte in the database."""
More = Iterable[Sequence[StoredEvent]]
"""Further batches of rows written in the same transaction, produced lazily (a long
import checks and maps one batch while the previous ones wait uncommitted)."""

BATCH = 500
"""Versions per statement: far below SQLite's bound on host parameters."""


class StreamWrites(ApplicationRecorder):
    """The two whole-stream writes, each one call of the library's ``insert_events``
    with a keyword its backend's ``_insert_events`` understands."""

    def copy_stream(
        self,
        header: StoredEvent,
        source_id: str,
        last: int,
        snapshot: Snapshot | None = None,
        reseal: Reseal | None = None,
    ) -> None:
        """Store ``header``, a copy of ``source_id``'s versions 2..``last`` and
        ``snapshot``, in one transaction (each copied row through ``reseal``)."""
        self.insert_events(
            [header], copy_from=(source_id, last), snapshot=snapshot, reseal=reseal
        )

    def insert_stream(self, first: Sequence[StoredEvent], more: More) -> None:
        """Store ``first`` and every batch of ``more`` in one transaction: all or
        nothing, however long the stream, holding one batch at a time."""
        self.insert_events(first, more=more)


class SQLiteSessionRecorder(SQLiteApplicationRecorder, StreamWrites):
    """The library's SQLite recorder, plus :meth:`select_events_at` and the stream
    writes."""

    def _insert_events(
        self,
        c: SQLiteCursor,
        stored_events: Sequence[StoredEvent],
        *,
        copy_from: CopyFrom | None = None,
        snapshot: Snapshot | None = None,
        more: More = (),
        reseal: Reseal | None = None,
        **kwargs: Any,
    ) -> Sequence[int] | None:
        ids = super()._insert_events(c, stored_events, **kwargs)
        for batch in more:
            super()._insert_events(c, batch)
        if copy_from is not None and reseal is not None:
            source, last = copy_from
            position = 1
            while True:
                c.execute(
                    "SELECT originator_version, topic, state FROM "
                    f"{self.events_table_name} WHERE originator_id = ? AND "
                    "originator_version > ? AND originator_version <= ? "
                    "ORDER BY originator_version LIMIT ?",
                    (source, position, last, BATCH),
                )
                rows = c.fetchall()
                if not rows:
                    break
                super()._insert_events(
                    c, [reseal(StoredEvent(source, *row)) for row in rows]
                )
                position = rows[-1][0]
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
            recorder._insert_events(c, [row])
        return ids

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
                    StoredEvent(
                        originator_id=originator_id,
                        originator_version=row[0],
                        topic=row[1],
                        state=row[2],
                    )
                    for row in cursor.fetchall()
                )
        return rows


class PostgresSessionRecorder(PostgresApplicationRecorder, StreamWrites):
    """The library's PostgreSQL recorder, plus the stream writes."""

    def _insert_stored_events(
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
        # The library locks the table and notifies before inserting the header,
        # so the copied rows take the notification ids after it, in commit order.
        super()._insert_stored_events(curs, stored_events, **kwargs)
        for batch in more:
            # Another cursor: the library fetches the first rows' notification ids
            # from this one afterwards. The table is already locked.
            with curs.connection.cursor() as rest:
                super(PostgresApplicationRecorder, self)._insert_stored_events(
                    rest, batch
                )
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
                    recorder._insert_stored_events(copy, [row])

    def _copy_resealed(
        self, curs: Cursor[DictRow], table: Any, copy_from: CopyFrom, reseal: Reseal
    ) -> None:
        """Copy the source's rows a batch at a time, each through ``reseal``."""
        source, last = copy_from
        position = 1
        while True:
            curs.execute(
                SQL(
                    "SELECT originator_version, topic, state FROM {0} "
                    "WHERE originator_id = %s AND originator_version > %s "
                    "AND originator_version <= %s ORDER BY originator_version LIMIT %s"
                ).format(table),
                (source, position, last, BATCH),
            )
            rows = curs.fetchall()
            if not rows:
                return
            batch = [
                reseal(
                    StoredEvent(
                        source, row["originator_version"], row["topic"], row["state"]
                    )
                )
                for row in rows
            ]
            with curs.connection.cursor() as rest:
                super(PostgresApplicationRecorder, self)._insert_stored_events(
                    rest, batch
                )
            position = rows[-1]["originator_version"]
