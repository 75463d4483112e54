"""The PostgreSQL half of :mod:`~agentlog.infrastructure.eventsourcing_seam`.

The same rule holds: the library privates the PostgreSQL backend uses are named
here and nowhere else, pinned by ``tests/infrastructure/test_eventsourcing_seam.py``.
It is a module of its own because ``eventsourcing.postgres`` imports ``psycopg``
and loads libpq, more than the whole ``agentlog ls`` of a SQLite store costs.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, ClassVar

from eventsourcing.persistence import IntegrityError, StoredEvent, Tracking
from eventsourcing.postgres import (
    PostgresApplicationRecorder,
    PostgresSubscription,
    PostgresTrackingRecorder,
)
from psycopg.sql import SQL, Identifier

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from psycopg import Cursor
    from psycopg.rows import DictRow


class PostgresRecorderSeam(PostgresApplicationRecorder):
    """The library's PostgreSQL recorder, its insert hook under public names
    (as :class:`SQLiteRecorderSeam`)."""

    def _insert_stored_events(
        self, curs: Cursor[DictRow], stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> None:
        self.insert_in_transaction(curs, stored_events, **kwargs)

    def insert_in_transaction(
        self, curs: Cursor[DictRow], stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> None:
        """Insert ``stored_events`` in the transaction of cursor ``curs``."""
        self.library_insert(curs, stored_events, **kwargs)

    def library_insert(
        self, curs: Cursor[DictRow], stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> None:
        """The library's insert: lock the table, notify, insert, fetch ids."""
        super()._insert_stored_events(curs, stored_events, **kwargs)

    def insert_rows_only(
        self, curs: Cursor[Any], stored_events: Sequence[StoredEvent]
    ) -> None:
        """Insert rows, nothing else (the table is locked already)."""
        super(PostgresApplicationRecorder, self)._insert_stored_events(
            curs, stored_events
        )

    def lock_table(self, curs: Cursor[DictRow]) -> None:
        """The library's lock of the events table (serialises every writer)."""
        self._lock_table(curs)


class PollingPostgresSubscription(PostgresSubscription):
    """The library's PostgreSQL subscription, woken by a clock, not ``LISTEN``.

    Behind a transaction-mode pooler a ``LISTEN`` is registered on a server
    session the client gives back at once, so no notification would ever wake
    the library's pull thread. Its listen thread (``_listen``) here sets the
    pull thread's event (``_has_been_notified``) every :attr:`poll_seconds`
    instead, checking ``_has_been_stopped`` as often as the library does.
    """

    poll_seconds: ClassVar[float] = 0.5
    tick_seconds: ClassVar[float] = 0.1

    def _listen(self) -> None:
        waited = 0.0
        while not self._has_been_stopped and not self._thread_error:
            time.sleep(self.tick_seconds)
            waited += self.tick_seconds
            if waited >= self.poll_seconds:
                waited = 0.0
                self._has_been_notified.set()


def postgres_insert(
    recorder: Any, curs: Cursor[Any], rows: Sequence[StoredEvent]
) -> None:
    """Insert rows with another PostgreSQL recorder of the same datastore (a
    snapshot recorder), in the transaction of cursor ``curs``."""
    recorder._insert_stored_events(curs, rows)


class KeyedPostgresTracking(PostgresTrackingRecorder):
    """The library's PostgreSQL tracking, positions kept under ``tracking_key``."""

    tracking_key: Callable[[str], str]  # the view's

    def _insert_tracking(self, curs: Cursor[DictRow], tracking: Tracking) -> None:
        key = self.tracking_key(tracking.application_name)
        super()._insert_tracking(curs, Tracking(key, tracking.notification_id))

    def _max_tracking_id(
        self, application_name: str, curs: Cursor[DictRow]
    ) -> int | None:
        return super()._max_tracking_id(self.tracking_key(application_name), curs)

    def advance_tracking(
        self, curs: Cursor[DictRow], tracking: Tracking, after: int
    ) -> None:
        """Record ``tracking`` if the view's position is ``after`` (none: 0),
        else raise ``IntegrityError``; a concurrent writer of the same view
        waits for this transaction, then finds the position moved."""
        if not self.datastore.single_row_tracking:
            self._insert_tracking(curs, tracking)
            return
        table = SQL("{0}.{1}").format(
            Identifier(self.datastore.schema), Identifier(self.tracking_table_name)
        )
        curs.execute(
            SQL(
                "INSERT INTO {0} (application_name, notification_id) "
                "SELECT %(key)s, %(id)s WHERE %(after)s = 0 OR EXISTS "
                "(SELECT 1 FROM {0} WHERE application_name = %(key)s) "
                "ON CONFLICT (application_name) DO UPDATE "
                "SET notification_id = EXCLUDED.notification_id "
                "WHERE {0}.notification_id = %(after)s "
                "RETURNING notification_id"
            ).format(table),
            {
                "key": self.tracking_key(tracking.application_name),
                "id": tracking.notification_id,
                "after": after,
            },
            prepare=True,
        )
        if curs.fetchone() is None:
            msg = (
                f"position {tracking.notification_id} of "
                f"{tracking.application_name} not recorded: the view left {after}"
            )
            raise IntegrityError(msg)
