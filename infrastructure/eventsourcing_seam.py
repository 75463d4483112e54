"""Every use of an ``eventsourcing`` private name, in one place.

agentlog extends the library's recorders through the hooks its own subclasses
use (``_insert_events`` and friends, a pool's ``_create_connection``). Those
names are not public API: the pin ``eventsourcing<9.6`` keeps them stable, and
``tests/infrastructure/test_eventsourcing_seam.py`` pins the behaviour relied on
here, so an upgrade that changes them fails in one module and its test, not
all over the backends. Nothing outside this module and its PostgreSQL half,
:mod:`~agentlog.infrastructure.eventsourcing_seam_postgres` (apart so that a
SQLite or in-memory store never imports ``psycopg``), names a library private.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from eventsourcing.persistence import (
    ConnectionPoolClosedError,
    IntegrityError,
    InterfaceError,
    StoredEvent,
    Tracking,
)
from eventsourcing.popo import POPOApplicationRecorder, POPOTrackingRecorder
from eventsourcing.sqlite import (
    SQLiteApplicationRecorder,
    SQLiteConnectionPool,
    SQLiteDatastore,
    SQLiteTrackingRecorder,
)

from agentlog.infrastructure.backends.sqlite.opening import (
    missing_folder,
    retrying_locked,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import TracebackType

    from eventsourcing.sqlite import SQLiteConnection, SQLiteCursor

TRecorder = TypeVar("TRecorder")

# ------------------------------------------------------------------ SQLite pool


class SecureDeletePool(SQLiteConnectionPool):
    """The library's SQLite pool; each new connection runs ``secure_delete``.

    Deleted or rewritten rows are overwritten with zeros wherever SQLite frees
    them (docs/erasure.md). ``_create_connection`` is the pool's one hook for
    a new connection (the library's abstract method).
    """

    def _create_connection(self) -> SQLiteConnection:
        # Retried while another process switches a fresh file to WAL.
        try:
            connection = retrying_locked(super()._create_connection)
        except InterfaceError as error:  # the library's for sqlite3's own
            folder = missing_folder(self.db_name)
            if folder is None:
                raise
            msg = f"{error}: no such folder: {folder}"
            raise InterfaceError(msg) from error
        connection.cursor().execute("PRAGMA secure_delete = ON")
        return connection


class SecureDeleteDatastore(SQLiteDatastore):
    """The library's SQLite datastore, its pool a :class:`SecureDeletePool`."""

    def __init__(
        self,
        db_name: str,
        *,
        lock_timeout: int | None = None,
        single_row_tracking: bool = True,
        originator_id_type: Literal["uuid", "text"] = "uuid",
    ) -> None:
        super().__init__(
            db_name,
            lock_timeout=lock_timeout,
            single_row_tracking=single_row_tracking,
            originator_id_type=originator_id_type,
        )
        self.pool.close()  # the library's, never used: no connection was made
        self.pool = SecureDeletePool(db_name=db_name, lock_timeout=lock_timeout)

    @classmethod
    def like(
        cls, datastore: SQLiteDatastore, *, db_name: str | None = None
    ) -> SecureDeleteDatastore:
        """One with the settings of ``datastore`` (the library factory's), on
        ``db_name`` when given (a read-only URI)."""
        return cls(
            db_name or datastore.pool.db_name,
            lock_timeout=datastore.pool.lock_timeout,
            single_row_tracking=datastore.single_row_tracking,
            originator_id_type=datastore.originator_id_type,
        )


# ------------------------------------------------------ application recorders


class SQLiteRecorderSeam(SQLiteApplicationRecorder):
    """The library's SQLite recorder, its insert hook under public names.

    The library's ``insert_events`` runs ``_insert_events(cursor, rows,
    **kwargs)`` inside its transaction; here that is :meth:`insert_in_transaction`
    (override it, keywords and all), and :meth:`library_insert` is the library's
    own insert.
    """

    def _insert_events(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        return self.insert_in_transaction(c, stored_events, **kwargs)

    def insert_in_transaction(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """Insert ``stored_events`` in the transaction of cursor ``c``."""
        return self.library_insert(c, stored_events, **kwargs)

    def library_insert(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """The library's insert (with notification ids), in ``c``'s transaction."""
        return super()._insert_events(c, stored_events, **kwargs)


def sqlite_insert(recorder: Any, c: SQLiteCursor, rows: Sequence[StoredEvent]) -> None:
    """Insert rows with another SQLite recorder of the same datastore (a
    snapshot recorder), in the transaction of cursor ``c``."""
    recorder._insert_events(c, rows)


class POPORecorderSeam(POPOApplicationRecorder):
    """The library's in-memory recorder, its rows and lock under public names.

    Rows are a list (a row's notification id is its position + 1) and an index
    per stream from version to position; an erased row's slot holds ``None``.
    """

    def _assert_uniqueness(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> None:
        super()._assert_uniqueness(stored_events, **kwargs)
        self.check_writes(stored_events)

    def check_writes(self, stored_events: Sequence[StoredEvent]) -> None:
        """Refuse a write (raise) before anything is stored; under the lock."""

    @property
    def database_lock(self) -> Any:
        return self._database_lock

    def insert_locked(self, stored_events: Sequence[StoredEvent]) -> None:
        """The library's insert; the caller holds :attr:`database_lock`."""
        self._insert_events(stored_events)

    def notify(self) -> None:
        """Tell the library's listeners (``subscribe``) that rows were added."""
        self._notify_listeners()

    def row_count(self) -> int:
        return len(self._stored_events)

    def row_at(self, position: int) -> StoredEvent | None:
        """The row at a list position (``None``: erased)."""
        row: StoredEvent | None = self._stored_events[position]
        return row


def popo_stream_index(recorder: Any, session_id: str) -> dict[int, int]:
    """A POPO recorder's positions of one stream's rows, by version."""
    index: dict[int, int] = recorder._stored_events_index.get(session_id) or {}
    return index


def popo_lock(recorder: Any) -> Any:
    """A POPO recorder's lock (a snapshot recorder's too)."""
    return recorder._database_lock


def popo_drop_below(recorder: Any, session_id: str, version: int | None) -> None:
    """Empty the slots of a stream's rows below ``version`` (all: ``None``)."""
    index = popo_stream_index(recorder, session_id)
    for stored in [v for v in index if version is None or v < version]:
        recorder._stored_events[index.pop(stored)] = None


def popo_drop_between(recorder: Any, session_id: str, first: int, below: int) -> None:
    """Empty the slots of a stream's rows at versions ``first`` to ``below - 1``."""
    index = popo_stream_index(recorder, session_id)
    for stored in [v for v in index if first <= v < below]:
        recorder._stored_events[index.pop(stored)] = None


class ClosedPOPOLock:
    """What a closed POPO recorder holds instead of its lock: entering refuses.

    Every read and write of the library's POPO recorders (and of ours, which
    take :attr:`POPORecorderSeam.database_lock` or :func:`popo_lock`) enters
    ``_database_lock`` first, so this one check closes all of them, as a closed
    pool closes a SQL store. A call already inside the lock finishes.
    """

    def __init__(self, lock: Any) -> None:
        self.lock = lock
        """The lock it replaced, for :func:`popo_connection`."""

    def __enter__(self) -> None:
        msg = "the in-memory store is closed"
        raise ConnectionPoolClosedError(msg)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        return None


def popo_close(recorder: Any) -> None:
    """Refuse every later read and write of a POPO recorder (any kind)."""
    if not isinstance(recorder._database_lock, ClosedPOPOLock):
        recorder._database_lock = ClosedPOPOLock(recorder._database_lock)


def popo_connection(recorder: TRecorder) -> TRecorder:
    """Another handle on a POPO recorder's rows, closed on its own.

    A shallow copy shares the rows, the stream index, the listeners and the
    lock (every attribute is a container mutated in place, never rebound), as
    two connections share one database; :func:`popo_close` on either rebinds
    only that handle's lock. Made from a closed handle, it is open.
    """
    shared = copy.copy(recorder)
    lock = shared._database_lock  # type: ignore[attr-defined]
    if isinstance(lock, ClosedPOPOLock):
        shared._database_lock = lock.lock  # type: ignore[attr-defined]
    return shared


# ---------------------------------------------------------- tracking recorders


class KeyedSQLiteTracking(SQLiteTrackingRecorder):
    """The library's SQLite tracking, positions kept under ``tracking_key``
    (one row per view in the shared ``tracking`` table)."""

    tracking_key: Callable[[str], str]  # the view's

    def _insert_tracking(self, c: SQLiteCursor, tracking: Tracking) -> None:
        key = self.tracking_key(tracking.application_name)
        super()._insert_tracking(c, Tracking(key, tracking.notification_id))

    def _max_tracking_id(self, application_name: str, c: SQLiteCursor) -> int | None:
        return super()._max_tracking_id(self.tracking_key(application_name), c)

    def advance_tracking(self, c: SQLiteCursor, tracking: Tracking, after: int) -> None:
        """Record ``tracking`` if the view's position is ``after`` (none: 0),
        else raise ``IntegrityError`` (as ``KeyedPostgresTracking``)."""
        if not self.datastore.single_row_tracking:
            self._insert_tracking(c, tracking)
            return
        c.execute(
            "INSERT INTO tracking (application_name, notification_id) "
            "SELECT :key, :id WHERE :after = 0 OR EXISTS "
            "(SELECT 1 FROM tracking WHERE application_name = :key) "
            "ON CONFLICT (application_name) DO UPDATE "
            "SET notification_id = excluded.notification_id "
            "WHERE tracking.notification_id = :after "
            "RETURNING notification_id",
            {
                "key": self.tracking_key(tracking.application_name),
                "id": tracking.notification_id,
                "after": after,
            },
        )
        if c.fetchone() is None:
            msg = (
                f"position {tracking.notification_id} of "
                f"{tracking.application_name} not recorded: the view left {after}"
            )
            raise IntegrityError(msg)


class KeyedPOPOTracking(POPOTrackingRecorder):
    """The library's in-memory tracking, positions kept under ``tracking_key``."""

    tracking_key: Callable[[str], str]  # the view's

    def _track(self, tracking: Tracking) -> Tracking:
        key = self.tracking_key(tracking.application_name)
        return Tracking(key, tracking.notification_id)

    def _assert_tracking_uniqueness(self, tracking: Tracking) -> None:
        super()._assert_tracking_uniqueness(self._track(tracking))

    def _insert_tracking(self, tracking: Tracking) -> None:
        super()._insert_tracking(self._track(tracking))

    @property
    def database_lock(self) -> Any:
        return self._database_lock

    def max_tracking_id(self, application_name: str) -> int | None:
        with self._database_lock:
            return self._max_tracking_ids[self.tracking_key(application_name)]

    def insert_tracking_locked(self, tracking: Tracking) -> None:
        """Record the position; the caller holds :attr:`database_lock`."""
        self._insert_tracking(tracking)

    def forget_tracking(self, application_name: str) -> None:
        """Drop the position (the view starts again from the first event)."""
        self._max_tracking_ids.pop(self.tracking_key(application_name), None)


def insert_tracking(recorder: Any, cursor: Any, tracking: Tracking) -> None:
    """Record a position with a SQL tracking recorder, in ``cursor``'s transaction."""
    recorder._insert_tracking(cursor, tracking)


def max_tracking_id_in(recorder: Any, name: str, cursor: Any) -> int | None:
    """A SQL tracking recorder's position for ``name``, read with ``cursor``."""
    found: int | None = recorder._max_tracking_id(name, cursor)
    return found


def create_tables_in(recorder: Any, cursor: Any) -> None:
    """The library's table creation of a SQLite recorder (tracking migration,
    its statements, the migration row), in ``cursor``'s transaction."""
    recorder._create_table(cursor)
