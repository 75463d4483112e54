"""What every backend's recorder adds to the library's: exact reads and stream copies.

The backends' recorders live in ``agentlog.infrastructure.backends.<name>.recorders``;
this module holds the parts they share (the stream writes, the write guard).

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

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from eventsourcing.persistence import ApplicationRecorder, StoredEvent

from agentlog.domain.errors import SessionErasedError
from agentlog.domain.topics import ERASED_TOPIC

CopyFrom = tuple[str, int]
"""``(source session id, last version)``: copy versions 2..last of the source."""
Snapshot = tuple[Any, StoredEvent]
"""``(snapshot recorder on the same datastore, its row)``: written in the copy's
transaction, so a fork commits once, or (SQLite, ``flush_snapshots``) in a flush's;
with ``snapshot_since`` (a flush's) the session's snapshots from that version up to
below the row's are deleted in the same transaction (docs/persistence.md#snapshots)."""
Reseal = Callable[[StoredEvent], StoredEvent]
"""Turns a source row into the copy's row (opened with one key, sealed with
another); without it rows are copied byte for byte in the database."""
More = Iterable[Sequence[StoredEvent]]
"""Further batches of rows written in the same transaction, produced lazily (a long
import checks and maps one batch while the previous ones wait uncommitted)."""

BATCH = 500
"""Versions per statement: far below SQLite's bound on host parameters."""
Purge = Callable[[Any], None]
"""Deletes the erased sessions' view rows, given the erase transaction's cursor
(``None`` in memory)."""
ERASE_PENDING = "agentlog_erase_pending"
"""The erased sessions whose work after the commit (key forget, scrub, hooks) is
not done yet: written in the erase's transaction, deleted when the work is done
(docs/erasure.md#after-the-commit)."""


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
    PostgreSQL's one-statement write runs this rule in PL/pgSQL
    (``PostgresSessionRecorder._add_write_function``); the recorder contract
    cases hold both to it.
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
    with a keyword its backend's insert hook understands, and erasure."""

    datastore: Any
    flush_snapshots = False
    """Whether a flush's ``insert_events`` takes the ``snapshot`` keywords (the
    snapshot then commits with the events). Not on PostgreSQL: the library
    pipelines the insert, and a statement queued behind a failed insert (a
    conflict) leaves psycopg's prepared-statement cache wrong."""

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
        keys = [str(tombstone.originator_id) for tombstone in tombstones]
        with self.datastore.transaction(commit=True) as cursor:
            self._write_tombstones(cursor, tombstones, purge)
            for tombstone in tombstones:
                self._delete_below(
                    cursor, str(tombstone.originator_id), tombstone.originator_version
                )
            if snapshots is not None:
                self._delete_snapshots(cursor, snapshots, keys)
            self._record_pending(cursor, keys)

    def erase_pending(self, limit: int) -> list[str]:
        """Up to ``limit`` erased sessions whose work after the commit is pending."""
        raise NotImplementedError  # pragma: no cover

    def erase_done(self, session_ids: Sequence[str]) -> None:
        """The work after these sessions' erase is done: forget the record."""
        raise NotImplementedError  # pragma: no cover

    def _record_pending(self, cursor: Any, session_ids: Sequence[str]) -> None:
        """Record, in the erase's transaction, that its after-work is pending."""
        raise NotImplementedError  # pragma: no cover

    def erase_snapshots(self, snapshots: Any, session_ids: Sequence[str]) -> None:
        """Delete the sessions' snapshots (one a writer stored after the erase)."""
        with self.datastore.transaction(commit=True) as cursor:
            self._delete_snapshots(cursor, snapshots, session_ids)

    def replace_snapshot(self, snapshots: Any, row: StoredEvent, since: int) -> None:
        """Store the snapshot ``row`` with the ``snapshots`` recorder (same
        datastore) and delete its session's snapshots at versions from ``since``
        up to below the row's, in one transaction (docs/persistence.md#snapshots).
        """
        with self.datastore.transaction(commit=True) as cursor:
            self._insert_snapshot(cursor, snapshots, row)
            self._delete_snapshots_between(
                cursor,
                snapshots,
                str(row.originator_id),
                since,
                row.originator_version,
            )

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

    def _insert_snapshot(self, cursor: Any, snapshots: Any, row: StoredEvent) -> None:
        """Insert ``row`` into the ``snapshots`` recorder's table."""
        raise NotImplementedError  # pragma: no cover

    def _delete_snapshots_between(
        self, cursor: Any, snapshots: Any, session_id: str, first: int, below: int
    ) -> None:
        """Delete the session's snapshots at versions ``first`` to ``below - 1``."""
        raise NotImplementedError  # pragma: no cover
