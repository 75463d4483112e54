"""The listing read straight from a SQLite file, for a query-only open.

``open_query`` (docs/query.md#query-only-opening) lists without building the
library's application: one connection of its own, opened for reading and
writing but never creating a file; per page one statement that reads the log's
top, the three views' positions, the library's migration row and whether an
erase is pending; then the page, with the listing view's own SQL and decoding
(``backends.sqlite.views``). Whenever that check does not show views that are
current on a store with nothing pending (or any statement fails: a missing
table, a file that is not a store), it answers ``None`` and the query opens the
store in full, which creates, catches up, finishes the erase or names the
error. So a page read here is the page the full open would read.

A read-only store is never caught up nor has its erasures finished by an open
(docs/configuration.md#read-only-stores): there, the page is read at once.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from eventsourcing.utils import strtobool

from agentlog.application.projections import LineageView, ListingView, TitleView
from agentlog.application.view_rows import ListingRow, columns
from agentlog.infrastructure.backends.sqlite.opening import (
    is_read_only,
    read_only_uri,
)
from agentlog.infrastructure.backends.sqlite.tables import MIGRATION
from agentlog.infrastructure.backends.sqlite.views import (
    decode_record,
    listing_page_query,
    select_sql,
    sqlite_decoding,
)
from agentlog.infrastructure.crypto import ENCRYPTION_ENV_VAR, OFF
from agentlog.infrastructure.recorders import ERASE_PENDING
from agentlog.infrastructure.store_url import READ_ONLY_ENV_VAR

if TYPE_CHECKING:
    from eventsourcing.utils import Environment

    from agentlog.application.view_rows import Number

EVENTS_TABLE = "stored_events"
"""The library's SQLite events table (its application recorder's default)."""
DEFAULT_LOCK_TIMEOUT = 5.0
"""The library's own, when ``SQLITE_LOCK_TIMEOUT`` is unset."""


LISTING_KINDS = columns(ListingRow)
LISTING_SELECT = select_sql(ListingView.table_name, LISTING_KINDS)
LISTING_DECODING = sqlite_decoding(LISTING_KINDS)
VIEWS = (ListingView, TitleView, LineageView)
_POSITION = "(SELECT notification_id FROM tracking WHERE application_name = ?)"
CHECK_SQL = (
    f"SELECT (SELECT MAX(rowid) FROM {EVENTS_TABLE}), "
    + ", ".join([_POSITION] * (len(VIEWS) + 1))
    + f", EXISTS (SELECT 1 FROM {ERASE_PENDING})"
)
"""The log's top, each view's position, the migration row, an erase pending."""


def listing_shortcut(env: Environment) -> SQLiteListingShortcut | None:
    """The shortcut for the store ``env`` opens, or ``None`` when that store's
    listing is not the plain one this reads: encryption on (sealed views), a
    recorder or tracking layout of the caller's own, an in-memory database."""
    path = env.get("SQLITE_DBNAME") or ""
    if (
        not path
        or path == ":memory:"
        or path.startswith("file:")
        or env.get("APPLICATION_RECORDER_TOPIC")
        or not strtobool(env.get("SQLITE_SINGLE_ROW_TRACKING") or "t")
        or (env.get(ENCRYPTION_ENV_VAR) or "").strip().lower() not in OFF
    ):
        return None
    timeout = (env.get("SQLITE_LOCK_TIMEOUT") or "").strip()
    read_only = is_read_only(path, env.get(READ_ONLY_ENV_VAR, "") == "y")
    return SQLiteListingShortcut(
        read_only_uri(path) if read_only else _writable_uri(path),
        application_name=env.name,
        read_only=read_only,
        timeout=float(timeout) if timeout.isdigit() else DEFAULT_LOCK_TIMEOUT,
    )


def _writable_uri(path: str) -> str:
    """The file, opened as the store opens it but never created (``mode=rw``)."""
    return "file:" + quote(os.path.abspath(path)) + "?mode=rw"


class SQLiteListingShortcut:
    """Listing pages of one SQLite store (implements ``ports.ListingShortcut``).

    Thread-safe: one connection, used under a lock.
    """

    def __init__(
        self, uri: str, *, application_name: str, read_only: bool, timeout: float
    ) -> None:
        self._uri = uri
        self._timeout = timeout
        self._read_only = read_only
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        keys = [f"{application_name}#{view.view_name}" for view in VIEWS]
        self._check_params = [*keys, MIGRATION]

    def page(
        self, limit: int, after: tuple[Number, str] | None
    ) -> list[ListingRow] | None:
        """Up to ``limit`` rows newest first after ``after``; ``None`` when the
        full open must answer (see the module's docstring)."""
        sql, params = listing_page_query(LISTING_SELECT, limit, after)
        with self._lock:
            try:
                connection = self._connect()
                if not self._read_only and not self._current(connection):
                    return None
                records = connection.execute(sql, params).fetchall()
            except sqlite3.Error:
                return None
        decoding = LISTING_DECODING
        return [decode_record(ListingRow, decoding, record) for record in records]

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            self._connection = sqlite3.connect(
                self._uri,
                uri=True,
                timeout=self._timeout,
                isolation_level=None,
                check_same_thread=False,
            )
        return self._connection

    def _current(self, connection: sqlite3.Connection) -> bool:
        """Whether every view holds the whole log, the library's tables were
        migrated and no erase is pending, in one statement."""
        found: Any = connection.execute(CHECK_SQL, self._check_params).fetchone()
        top, *positions, migration, pending = found
        return (
            migration is not None
            and not pending
            and all((position or 0) >= (top or 0) for position in positions)
        )

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None
