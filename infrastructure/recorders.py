"""The library's recorders plus two operations: exact reads and stream copies.

Deriving messages needs only the events on the surface; a long session holds five
or more log-only rows (stream chunks, boundaries) per message. Reading exactly the
surface rows, instead of ranges that include the chunks between them, is the
difference between decoding the surface and fetching the whole log. A search page
reads its hits' rows, one from each of many sessions, the same way: the library
reads one stream per call, one round trip each on PostgreSQL, so
``select_events_at_places`` reads them all in one statement.

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

import json
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from eventsourcing.persistence import ApplicationRecorder, Notification, StoredEvent
from eventsourcing.popo import POPOApplicationRecorder
from eventsourcing.postgres import PostgresApplicationRecorder
from eventsourcing.sqlite import SQLiteApplicationRecorder
from psycopg.sql import SQL, Composed, Identifier

from agentlog.domain.errors import SessionErasedError
from agentlog.domain.events import Erased

if TYPE_CHECKING:
    from eventsourcing.sqlite import SQLiteConnection, SQLiteCursor, SQLiteDatastore
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
ERASED_TOPIC = Erased.TOPIC
Purge = Callable[[Any], None]
"""Deletes the erased sessions' view rows, given the erase transaction's cursor
(``None`` in memory)."""


def first_versions(stored_events: Sequence[StoredEvent]) -> dict[str, int]:
    """The lowest version written per stream in one insert."""
    firsts: dict[str, int] = {}
    for event in stored_events:
        key = str(event.originator_id)
        version = event.originator_version
        if key not in firsts or version < firsts[key]:
            firsts[key] = version
    return firsts


Row = tuple[int, str]
"""``(version, topic)`` of one stored row."""
Place = tuple[str, int]
"""``(originator id, version)``: where one stored row is."""


def check_continues(
    session_id: str,
    first: int,
    row_at: Callable[[int], Row | None],
    top: Callable[[], Row | None],
) -> None:
    """The guard every stream write passes: it must not write to an erased stream.

    ``row_at(version)`` reads the stored row at a version (``None``: none),
    ``top()`` the stream's highest stored row. The row at ``first - 1`` settles
    it when there is one; otherwise (a new stream, or a row missing below) the
    top row does. An erased stream holds only its tombstone, at its highest
    version, so a stale writer whatever version it meant to write finds either
    no row below (read ``top``: the tombstone) or the tombstone itself
    (docs/erasure.md). Other gaps are the library's business, as before.
    """
    row = row_at(first - 1) if first > 1 else None
    if row is None:
        row = top()
    if row is not None and row[1] == ERASED_TOPIC:
        raise SessionErasedError(session_id)


def copy_resealed(
    copy_from: CopyFrom,
    reseal: Reseal,
    read: Callable[[str, int, int], list[StoredEvent]],
    write: Callable[[list[StoredEvent]], object],
) -> None:
    """Copy the source's versions 2..last a batch at a time, each row through
    ``reseal``: ``read(source, after, last)`` returns up to :data:`BATCH` rows
    above ``after`` in version order, ``write`` stores the resealed batch."""
    source, last = copy_from
    position = 1
    while rows := read(source, position, last):
        write([reseal(row) for row in rows])
        position = rows[-1].originator_version


class StreamWrites(ApplicationRecorder):
    """The two whole-stream writes, each one call of the library's ``insert_events``
    with a keyword its backend's ``_insert_events`` understands, and erasure."""

    datastore: Any

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

    def erase_streams(
        self,
        tombstones: Sequence[StoredEvent],
        purge: Purge,
        snapshots: Any | None,
    ) -> None:
        """Erase streams in one transaction (docs/erasure.md).

        Each tombstone is written one version above its stream's last event
        (checked as every write is: a concurrent append or an earlier erase
        makes it fail, and nothing changes); then ``purge`` deletes the views'
        rows while the events are still readable; then every other row of the
        streams and their snapshots are deleted. The tombstone is written first
        so it takes a notification id above every deleted row (SQLite reuses the
        highest rowid once it is deleted).
        """
        with self.datastore.transaction(commit=True) as cursor:
            self._write_tombstones(cursor, tombstones, purge)
            for tombstone in tombstones:
                self._delete_below(
                    cursor, str(tombstone.originator_id), tombstone.originator_version
                )
            if snapshots is not None:
                keys = [str(tombstone.originator_id) for tombstone in tombstones]
                self._delete_snapshots(cursor, snapshots, keys)

    def erase_snapshots(self, snapshots: Any, session_ids: Sequence[str]) -> None:
        """Delete the sessions' snapshots (one a writer stored after the erase)."""
        with self.datastore.transaction(commit=True) as cursor:
            self._delete_snapshots(cursor, snapshots, session_ids)

    def _write_tombstones(
        self, cursor: Any, tombstones: Sequence[StoredEvent], purge: Purge
    ) -> None:
        """Insert the tombstones (through the write guard), then ``purge``."""
        raise NotImplementedError  # pragma: no cover

    def _delete_below(self, cursor: Any, session_id: str, version: int) -> None:
        """Delete the stream's rows below ``version``."""
        raise NotImplementedError  # pragma: no cover

    def _delete_snapshots(
        self, cursor: Any, snapshots: Any, session_ids: Sequence[str]
    ) -> None:
        """Delete these sessions' rows from the ``snapshots`` recorder's table."""
        raise NotImplementedError  # pragma: no cover


class SQLiteSessionRecorder(SQLiteApplicationRecorder, StreamWrites):
    """The library's SQLite recorder, plus the exact reads
    (:meth:`select_events_at`, :meth:`select_events_at_places`), the stream
    writes, the write guard and erasure.

    Every connection of the store's pool runs with ``secure_delete`` on: a
    deleted or rewritten row's bytes are overwritten with zeros wherever SQLite
    frees them (cells, overflow and index pages, FTS5 segments the index merges
    away), not only when a session is erased, so no old copy of a view row or an
    index segment outlives the row (docs/erasure.md).
    """

    CHECKPOINT_ATTEMPTS = 10
    CHECKPOINT_WAIT = 0.02
    CHECKPOINT_BUSY_MS = 50

    def __init__(self, datastore: SQLiteDatastore, **kwargs: Any) -> None:
        super().__init__(datastore, **kwargs)
        pool = datastore.pool
        create = pool._create_connection
        if not getattr(create, "secure_delete", False):

            def secure() -> SQLiteConnection:
                connection = create()
                connection._sqlite_conn.execute("PRAGMA secure_delete = ON")
                return connection

            secure.secure_delete = True  # type: ignore[attr-defined]
            pool._create_connection = secure  # type: ignore[method-assign]

    def checkpoint(self) -> bool:
        """Copy the WAL into the database file and truncate it to zero bytes.

        A reader holding an old snapshot keeps the WAL from being reset; the call
        retries for about a second, then gives up and returns False (the next
        checkpoint, or the last connection closing, truncates it).
        """
        for attempt in range(self.CHECKPOINT_ATTEMPTS):
            with self.datastore.get_connection(commit=True) as connection:
                raw = connection._sqlite_conn
                # TRUNCATE waits for readers through the busy handler: wait
                # briefly here and retry, instead of the connection's long timeout.
                (timeout,) = raw.execute("PRAGMA busy_timeout").fetchone()
                raw.execute(f"PRAGMA busy_timeout = {self.CHECKPOINT_BUSY_MS}")
                try:
                    row = raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                finally:
                    raw.execute(f"PRAGMA busy_timeout = {int(timeout)}")
            if row is None or row[0] == 0:
                return True
            time.sleep(self.CHECKPOINT_WAIT * (1 + attempt % 4))
        return False

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

            def read(source: str, position: int, last: int) -> list[StoredEvent]:
                c.execute(
                    "SELECT originator_version, topic, state FROM "
                    f"{self.events_table_name} WHERE originator_id = ? AND "
                    "originator_version > ? AND originator_version <= ? "
                    "ORDER BY originator_version LIMIT ?",
                    (source, position, last, BATCH),
                )
                return [StoredEvent(source, *row) for row in c.fetchall()]

            copy_resealed(copy_from, reseal, read, partial(super()._insert_events, c))
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
        self._insert_events(c, tombstones)
        purge(c)

    def _delete_below(self, c: SQLiteCursor, session_id: str, version: int) -> None:
        c.execute(
            f"DELETE FROM {self.events_table_name} "
            "WHERE originator_id = ? AND originator_version < ?",
            (session_id, version),
        )

    def _delete_snapshots(
        self, c: SQLiteCursor, snapshots: Any, session_ids: Sequence[str]
    ) -> None:
        c.executemany(
            f"DELETE FROM {snapshots.events_table_name} WHERE originator_id = ?",
            [(key,) for key in session_ids],
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
                    StoredEvent(
                        originator_id=originator_id,
                        originator_version=row[0],
                        topic=row[1],
                        state=row[2],
                    )
                    for row in cursor.fetchall()
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


class PostgresSessionRecorder(PostgresApplicationRecorder, StreamWrites):
    """The library's PostgreSQL recorder, plus the stream writes and
    :meth:`select_events_at_places`."""

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
        # The table lock serialises every write of the events table, so the
        # guard's reads cannot go stale before the insert.
        self._lock_table(curs)
        with curs.connection.cursor() as probe:
            for session_id, first in first_versions(stored_events).items():
                self._check_continues(probe, session_id, first)
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
                super(PostgresApplicationRecorder, self)._insert_stored_events(
                    rest, batch
                )

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
        self._insert_stored_events(curs, tombstones)
        with curs.connection.cursor() as views:
            purge(views)

    def _delete_below(
        self, curs: Cursor[DictRow], session_id: str, version: int
    ) -> None:
        curs.execute(
            SQL(
                "DELETE FROM {0} WHERE originator_id = %s AND originator_version < %s"
            ).format(self._events_table),
            (session_id, version),
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


class POPOSessionRecorder(POPOApplicationRecorder):
    """The library's in-memory recorder, plus the write guard and erasure.

    An erased row's slot in the notification list holds ``None``: notification
    ids are list positions, so the list never shrinks.
    """

    def _assert_uniqueness(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> None:
        super()._assert_uniqueness(stored_events, **kwargs)
        for session_id, first in first_versions(stored_events).items():
            index = self._stored_events_index.get(session_id) or {}
            check_continues(
                session_id,
                first,
                partial(self._row, index),
                partial(self._top, index),
            )

    def _top(self, index: dict[int, int]) -> Row | None:
        return self._row(index, next(reversed(index), 0))

    def _row(self, index: dict[int, int], version: int) -> Row | None:
        position = index.get(version)
        if position is None:
            return None
        row = self._stored_events[position]
        return None if row is None else (version, row.topic)

    def erase_streams(
        self,
        tombstones: Sequence[StoredEvent],
        purge: Purge,
        snapshots: Any | None,
    ) -> None:
        with self._database_lock:
            self._insert_events(tombstones)
            purge(None)
            for tombstone in tombstones:
                key = str(tombstone.originator_id)
                self._drop_below(self, key, tombstone.originator_version)
                if snapshots is not None:
                    with snapshots._database_lock:
                        self._drop_below(snapshots, key, None)
        self._notify_listeners()

    def erase_snapshots(self, snapshots: Any, session_ids: Sequence[str]) -> None:
        with snapshots._database_lock:
            for key in session_ids:
                self._drop_below(snapshots, key, None)

    @staticmethod
    def _drop_below(recorder: Any, session_id: str, version: int | None) -> None:
        index = recorder._stored_events_index.get(session_id) or {}
        for stored in [v for v in index if version is None or v < version]:
            recorder._stored_events[index.pop(stored)] = None

    def select_notifications(
        self,
        start: int | None,
        limit: int,
        stop: int | None = None,
        topics: Sequence[str] = (),
        *,
        inclusive_of_start: bool = True,
    ) -> Sequence[Notification]:
        """The library's read, skipping erased slots."""
        with self._database_lock:
            first = 1 if start is None else start + (0 if inclusive_of_start else 1)
            last = len(self._stored_events) if stop is None else stop
            found: list[Notification] = []
            for position in range(max(first, 1), last + 1):
                if position > len(self._stored_events) or len(found) == limit:
                    break
                row = self._stored_events[position - 1]
                if row is None or (topics and row.topic not in topics):
                    continue
                found.append(
                    Notification(
                        id=position,
                        originator_id=row.originator_id,
                        originator_version=row.originator_version,
                        topic=row.topic,
                        state=row.state,
                    )
                )
            return found
