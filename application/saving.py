"""Saving: a live handle's pending events become one transaction of the store.

:meth:`SessionSaver.flush` is the durability checkpoint of a session; a command's
flush settles a commit whose reply was lost by asking the store
(:meth:`SessionSaver.flush_command`); a flush that crosses a tenth of the snapshot
interval stores a snapshot (on SQLite in the flush's transaction), which replaces
the earlier snapshots of its interval (docs/persistence.md#snapshots).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from eventsourcing.persistence import IntegrityError

from agentlog.application.locks import thread_owner
from agentlog.application.store_errors import (
    UNAVAILABLE,
    is_read_only,
    store_errors,
    unavailable_message,
)
from agentlog.domain.errors import (
    AgentlogError,
    SessionClosedError,
    SessionConflictError,
    SessionErasedError,
    StaleSessionError,
    StoreReadOnlyError,
    StoreUnavailableError,
)
from agentlog.domain.events import SessionEvent
from agentlog.domain.session import Session, SessionCreated, SessionSnapshot

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentlog.application.handle import SessionHandle
    from agentlog.application.sessions import Sessions


@runtime_checkable
class SnapshotReplacer(Protocol):
    """A recorder that stores a snapshot and drops the ones it replaces in one
    transaction (``agentlog.infrastructure.recorders``)."""

    def replace_snapshot(self, snapshots: Any, row: Any, since: int) -> None: ...


SNAPSHOTS_PER_INTERVAL = 10
"""How often per ``AGENTLOG_SNAPSHOT_INTERVAL`` a flush renews the latest snapshot;
each replaces the earlier ones of its interval, so one per interval is kept."""
NODES_PER_PERIOD_EVENT = 20
"""A long surface renews less often: the period is at least its node count divided
by this, in events. A snapshot holds about 6 bytes per node, so renewals write at
most about 120 bytes per event, however long the session."""
SETTLE_ATTEMPTS = 5
SETTLE_WAIT = 0.05
logger = logging.getLogger(__name__)


class SessionSaver:
    """Flushes live handles of one ``Sessions`` and settles uncertain commits."""

    def __init__(self, app: Sessions) -> None:
        self.app = app

    def flush(self, handle: SessionHandle) -> None:
        """Save one handle's pending events in one transaction (``Sessions``)."""
        if handle.closed:
            raise SessionClosedError(handle.id)
        if handle.stale:
            raise StaleSessionError(handle.id)
        app = self.app
        aggregate = handle.aggregate
        pending = list(aggregate.pending_events)
        if not pending:
            return
        first_version = pending[0].originator_version
        failures = app.connection_failures()
        due = self.snapshot_due(
            aggregate.version, first_version - 1, len(aggregate.surface)
        )
        with_events = due and self.snapshots_with_events()
        try:
            self._save(aggregate, pending, with_snapshot=with_events)
        except SessionErasedError:
            # Erased meanwhile (by another process, or before this handle was
            # taken over): nothing is written, and the handle is done.
            logger.info("flush of session %r refused: it was erased", handle.id)
            app.live.forget(handle)
            handle.stale = True
            raise
        except IntegrityError as error:
            # The PostgreSQL recorder retries a lost connection itself: a retry of
            # a commit whose reply was lost meets its own rows, which is not a
            # conflict. Only then (or after an earlier lost flush) are the stored
            # rows compared with ours: two writers may append identical bytes.
            retried = app.connection_failures() != failures
            with store_errors():
                saved = (retried or handle.uncertain) and self.already_saved(pending)
            if not saved:
                handle.stale = True
                with store_errors():
                    erased = app.is_erased(handle.id)
                if erased:
                    # The tombstone took the version this flush meant to write.
                    app.live.forget(handle)
                    raise SessionErasedError(handle.id) from error
                logger.info(
                    "conflict on session %r at seq %d: another writer saved first",
                    handle.id,
                    max(first_version - 2, 0),
                )
                raise SessionConflictError(
                    handle.id, max(first_version - 2, 0)
                ) from error
            logger.info(
                "session %r: the flush that lost its connection had committed",
                handle.id,
            )
            del aggregate.pending_events[: len(pending)]
        except UNAVAILABLE as error:
            if is_read_only(error):
                msg = "the store is read-only: writes are refused"
                raise StoreReadOnlyError(msg) from error
            handle.uncertain = True
            logger.warning(
                "store unavailable while flushing session %r; %d event(s) kept "
                "for the next flush: %s",
                handle.id,
                len(pending),
                error,
            )
            raise StoreUnavailableError(unavailable_message(error)) from error
        else:
            if due and not with_events:
                self.snapshot(aggregate)
        handle.uncertain = False
        app.live.saved(handle, evict=True)

    def _save(
        self, aggregate: Session, pending: list[Any], *, with_snapshot: bool
    ) -> None:
        """``Application.save``: record and notify; ``with_snapshot``: with the
        aggregate's snapshot, replacing the earlier ones of its interval, in the
        same transaction (the recorder's ``snapshot`` keywords, as a fork's copy).

        The library collects (removes) the aggregate's pending events before
        recording them; if recording fails they are put back, so the next flush
        saves them exactly once (or finds them stored, see ``already_saved``).
        """
        app = self.app
        kwargs: dict[str, Any] = {}
        if with_snapshot and app.snapshots is not None:
            row = app.mapper.to_stored_event(SessionSnapshot.take(aggregate))
            kwargs["snapshot"] = (app.snapshots.recorder, row)
            kwargs["snapshot_since"] = self.kept_below(aggregate.version)
        try:
            app.save(aggregate, **kwargs)
        except BaseException:
            aggregate.pending_events[:0] = pending
            raise

    def flush_idle(self) -> None:
        """Flush every dirty live handle no command in another thread holds."""
        app = self.app
        owner = thread_owner()
        for live in app.live.dirty():
            if live.stale or live.closed:
                continue
            if not app.locks.try_hold(live.id, owner):
                continue
            try:
                self.flush(live)
            finally:
                app.locks.release(live.id, owner)

    def flush_command(self, handle: SessionHandle) -> None:
        """Flush a command's events; after an outage, find out if they committed.

        A connection lost during the commit leaves the outcome unknown, and a
        failed request must store nothing while an acknowledged one is never
        lost: so the store is asked. Committed: the command succeeded. Not
        committed: the error stands (the block is rolled back; safe to retry).
        Unreachable still: the handle is closed and the error says the outcome is
        unknown (the next command reads what the store holds).
        """
        try:
            self.flush(handle)
        except StoreUnavailableError as error:
            outcome = self.settle(handle)
            if outcome is True:
                return
            if outcome is None:
                self.app.live.forget(handle)
                msg = f"{error}; whether the command was stored is unknown"
                raise StoreUnavailableError(msg) from error.__cause__
            raise

    def settle(self, handle: SessionHandle) -> bool | None:
        """Whether the handle's pending events are stored (``None``: cannot tell)."""
        pending = list(handle.aggregate.pending_events)
        for attempt in range(SETTLE_ATTEMPTS):
            try:
                with store_errors():
                    saved = self.already_saved(pending)
            except StoreUnavailableError:
                time.sleep(SETTLE_WAIT * (attempt + 1))
                continue
            if saved:
                logger.info(
                    "session %r: the commit that lost its connection had succeeded",
                    handle.id,
                )
                del handle.aggregate.pending_events[: len(pending)]
                handle.uncertain = False
                self.app.live.saved(handle)
            return saved
        return None

    def connection_failures(self) -> int:
        """Connections this thread lost so far (the factory counts, if it can)."""
        count = getattr(self.app.factory, "connection_failures", None)
        return int(count()) if callable(count) else 0

    def already_saved(self, pending: list[Any]) -> bool:
        """Whether the store holds exactly these events (a commit, reply lost)."""
        events = [
            event
            for event in pending
            if isinstance(event, (SessionEvent, SessionCreated))
        ]
        if not events:
            return False
        app = self.app
        rows = app.recorder.select_events(
            events[0].originator_id,
            gt=events[0].originator_version - 1,
            lte=events[-1].originator_version,
        )
        # Compared as plain bytes: a sealed state differs at every encryption.
        mapper = app.session_mapper
        mine = [mapper.plain_state(event) for event in events]
        if len(rows) != len(mine):
            return False
        try:
            return all(
                row.topic == topic and mapper.decode_bytes(row) == plain
                for row, (topic, plain) in zip(rows, mine, strict=True)
            )
        except AgentlogError:
            return False  # a row we cannot read (another key, corrupt) is not ours

    def snapshot_due(self, version: int, previous_version: int, nodes: int) -> bool:
        """Whether rows stored from ``previous_version`` up to ``version`` went past
        a multiple of the renewal period: a tenth of the interval, or a twentieth
        of the surface's ``nodes`` if more (a snapshot's size grows with them), at
        most the interval (docs/persistence.md#snapshots)."""
        interval = self.app.snapshot_interval
        every = min(
            interval,
            max(1, interval // SNAPSHOTS_PER_INTERVAL, nodes // NODES_PER_PERIOD_EVENT),
        )
        # Version 1 is the header's and nothing else's (the mapper reads it so).
        return (
            interval > 0
            and version > 1
            and version // every != previous_version // every
        )

    def snapshots_with_events(self) -> bool:
        """Whether a snapshot can commit in the events' transaction: the recorder
        takes it with a flush (SQLite) and both tables share one datastore."""
        app = self.app
        snapshots = None if app.snapshots is None else app.snapshots.recorder
        datastore = getattr(snapshots, "datastore", None)
        return (
            getattr(app.recorder, "flush_snapshots", False) is True
            and datastore is not None
            and datastore is getattr(app.recorder, "datastore", None)
        )

    def snapshot_if_due(self, aggregate: Session, previous_version: int) -> None:
        """Snapshot an aggregate whose rows were stored without a flush (an
        import's stream insert) when a flush of them would have."""
        if self.snapshot_due(
            aggregate.version, previous_version, len(aggregate.surface)
        ):
            self.snapshot(aggregate)

    def take_snapshot(
        self, aggregate_id: str, version: int | None, replay: Callable[[], None]
    ) -> None:
        """Snapshot the session at or past ``version`` (``Sessions.take_snapshot``).

        The live aggregate, when it holds nothing unsaved and has reached
        ``version``, is the stored state at its own version: it is snapshotted
        as it is, with no read (the library's ``replay`` rebuilds it from the
        store, up to an interval of rows per snapshot). Otherwise ``replay``.
        """
        live = self.app.live.get(aggregate_id)
        aggregate = None if live is None else live.aggregate
        if (
            aggregate is not None
            and version is not None
            and not aggregate.pending_events
            and aggregate.version >= version
        ):
            self.snapshot(aggregate)
            return
        try:
            replay()
            self.app.eraser.after_snapshot(aggregate_id)
        except IntegrityError:
            pass  # another writer saved this snapshot first
        except UNAVAILABLE:
            logger.warning(
                "snapshot of session %r skipped: store unavailable", aggregate_id
            )

    def kept_below(self, version: int) -> int:
        """The lowest version of the snapshots a new one at ``version`` replaces:
        the last multiple of the interval, so one snapshot per interval stays."""
        interval = self.app.snapshot_interval
        return version // interval * interval if interval > 0 else version

    def snapshot(self, aggregate: Session) -> None:
        """Store a snapshot of ``aggregate`` as it is now (its pending events saved),
        replacing the session's earlier snapshots of the same interval.

        Never raises for the store: a snapshot only speeds loading up, and the
        events it summarises are already stored.
        """
        app = self.app
        if app.snapshots is None:
            return
        snapshot = SessionSnapshot.take(aggregate)
        recorder = app.recorder
        try:
            if isinstance(recorder, SnapshotReplacer):
                recorder.replace_snapshot(
                    app.snapshots.recorder,
                    app.mapper.to_stored_event(snapshot),
                    self.kept_below(aggregate.version),
                )
            else:
                app.snapshots.put([snapshot])
            app.eraser.after_snapshot(aggregate.id)
        except IntegrityError:
            pass  # another writer saved this snapshot first
        except UNAVAILABLE:
            logger.warning(
                "snapshot of session %r skipped: store unavailable", aggregate.id
            )
