"""Opening a SQLite view without the write lock once its tables exist.

The library creates a recorder's tables in a deferred transaction (``BEGIN``).
Its first statement, ``CREATE TABLE IF NOT EXISTS tracking``, only reads when
the table exists, so the transaction starts as a reader; a later statement that
writes (a missing table or index, the search view's cleanup ``DELETE``) must then
upgrade it to a writer. In WAL mode SQLite refuses that upgrade at once with
``SQLITE_BUSY`` while another connection writes, without calling the busy
handler (waiting could deadlock), so a fresh reader failed with "database is
locked" while any other process flushed.

So a view first looks, in a read transaction: if every table and index its
statements create exists, every one they drop is gone and the library's
migration row is recorded, it writes nothing. Otherwise it creates them in a
``BEGIN IMMEDIATE`` transaction, which takes the write lock before reading
anything and so waits for it through the busy handler like any other write.

The look is one read for the whole opening (``views.schema_facts``): the
events, snapshots and views recorders of one datastore answer from the
catalog read by the first of them, which also tells whether an erase left
work pending, so a cold open makes one read where it made six.
"""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from typing import TYPE_CHECKING

from eventsourcing.persistence import OperationalError
from eventsourcing.sqlite import SQLiteCursor, SQLiteTransaction

from agentlog.infrastructure.eventsourcing_seam import (
    create_tables_in,
    max_tracking_id_in,
)
from agentlog.infrastructure.recorders import ERASE_PENDING
from agentlog.infrastructure.views.ddl import schema_ready
from agentlog.infrastructure.views.schema_facts import (
    SchemaFacts,
    forget_facts,
    known_facts,
    remember_facts,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from eventsourcing.sqlite import (
        SQLiteDatastore,
        SQLiteRecorder,
        SQLiteTrackingRecorder,
    )

MIGRATION = "__migration__"


def existing_names(c: SQLiteCursor) -> set[str]:
    """The tables and indexes of the main database (lowercase)."""
    c.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")
    return {str(row[0]).lower() for row in c.fetchall()}


def read_facts(datastore: SQLiteDatastore) -> SchemaFacts:
    """The catalog, the migration row and whether an erase is pending, in one
    read transaction."""
    migration, pending = None, None
    with datastore.transaction(commit=False) as c:
        names = existing_names(c)
        if "tracking" in names:
            c.execute(
                "SELECT MAX(notification_id) FROM tracking WHERE application_name = ?",
                (MIGRATION,),
            )
            migration = c.fetchone()[0]
        if ERASE_PENDING.lower() in names:
            c.execute(f"SELECT 1 FROM {ERASE_PENDING} LIMIT 1")
            pending = c.fetchone() is not None
    return SchemaFacts(frozenset(names), migration, pending)


def opening_facts(datastore: SQLiteDatastore) -> SchemaFacts:
    """A fresh read of the catalog, kept for the rest of the opening (the
    application recorder's check, the first of an opening)."""
    return remember_facts(datastore, read_facts(datastore))


def statements_ready(recorder: SQLiteRecorder) -> bool:
    """Whether a recorder's ``CREATE … IF NOT EXISTS`` statements would change
    nothing, from the opening's one read; else forgets that read."""
    datastore = recorder.datastore
    facts = known_facts(datastore, lambda: read_facts(datastore))
    if schema_ready(facts.names, recorder.create_table_statements):
        return True
    forget_facts(datastore)
    return False


class ImmediateTransaction(SQLiteTransaction):
    """The library's transaction, begun with ``BEGIN IMMEDIATE``: the write lock
    is taken first, waiting through the busy handler, before anything is read."""

    def __enter__(self) -> SQLiteCursor:
        cursor = self.connection.cursor()
        try:
            cursor.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as error:
            # The library's exit translates the driver's error into its own.
            self.__exit__(type(error), error, error.__traceback__)
            raise  # not reached: __exit__ re-raises
        return cursor


@contextmanager
def immediate_transaction(datastore: SQLiteDatastore) -> Iterator[SQLiteCursor]:
    """A committed write transaction that holds the write lock from its start."""
    with (
        datastore.get_connection(commit=True) as connection,
        ImmediateTransaction(connection, commit=True) as cursor,
        cursor,
    ):
        yield cursor


def ensure_tables(recorder: SQLiteTrackingRecorder) -> None:
    """``create_table`` of a library ``SQLiteTrackingRecorder`` subclass that
    writes only when something is missing, and then under the write lock.

    Sets the library's migration attributes as its own ``create_table`` does,
    then runs its table creation (tracking migration, the statements, the
    migration row) unchanged, inside :func:`immediate_transaction`.
    """
    migration = recorder.table_migration_identifier
    statements = recorder.create_table_statements
    ready = _known_ready(recorder, statements, migration)
    if not ready:
        forget_facts(recorder.datastore)
        with recorder.datastore.transaction(commit=False) as c:
            ready = _ready(recorder, c, statements, migration)
    if not ready:
        with immediate_transaction(recorder.datastore) as c:
            # Another opener may have created them while this one waited.
            if not _ready(recorder, c, statements, migration):
                create_tables_in(recorder, c)
    if (
        not recorder.datastore.single_row_tracking
        and recorder.tracking_migration_current is not None
    ):
        msg = "Can't do multi-row tracking with single-row tracking table"
        raise OperationalError(msg)


def tables_ready(recorder: SQLiteTrackingRecorder) -> bool:
    """Whether the recorder's tables exist (read only, so a read-only file can
    tell a view that was never built)."""
    with recorder.datastore.transaction(commit=False) as c:
        return schema_ready(existing_names(c), recorder.create_table_statements)


def _known_ready(
    recorder: SQLiteTrackingRecorder, statements: list[str], key: str
) -> bool:
    """:func:`_ready` answered from the opening's one read of the catalog;
    False (check again) when anything is missing."""
    if _tracking_key(recorder, key) != MIGRATION:
        return False
    datastore = recorder.datastore
    facts = known_facts(datastore, lambda: read_facts(datastore))
    previous = facts.migration
    migrated = previous is not None or not datastore.single_row_tracking
    if not (migrated and schema_ready(facts.names, statements)):
        return False
    recorder.tracking_table_exists = True
    recorder.tracking_migration_previous = previous
    recorder.tracking_migration_current = previous
    return True


def _tracking_key(recorder: SQLiteTrackingRecorder, key: str) -> str:
    """The row the recorder reads ``key``'s position from."""
    mapped = getattr(recorder, "tracking_key", None)
    return key if mapped is None else str(mapped(key))


def _ready(
    recorder: SQLiteTrackingRecorder, c: SQLiteCursor, statements: list[str], key: str
) -> bool:
    """Whether the recorder's tables are complete; records what the library's
    ``create_table`` records about the tracking table either way."""
    names = existing_names(c)
    exists = "tracking" in names
    previous = max_tracking_id_in(recorder, key, c) if exists else None
    recorder.tracking_table_exists = exists
    recorder.tracking_migration_previous = previous
    recorder.tracking_migration_current = previous
    migrated = previous is not None or not recorder.datastore.single_row_tracking
    return migrated and schema_ready(names, statements)
