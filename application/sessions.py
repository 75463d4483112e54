"""``Sessions``: the event-sourced application that creates, appends, forks and reads.

Appends are synchronous and in memory (the live handle's pending events are the
write-behind buffer); :meth:`Sessions.flush` is the durability checkpoint: one
transaction per session. Persistence comes from the environment only
(``PERSISTENCE_MODULE`` and the library's settings), so the same code runs on POPO in
tests and on SQLite or PostgreSQL in production.

``Sessions`` is the façade; each concern is a named collaborator in its own module:
the store's configuration (:mod:`~agentlog.application.configuration`), the live
cache (:mod:`~agentlog.application.live`, ``live``), the per-session locks
(``locks``), observers (``observers``), loading and take-over (``loader``), the unit
of work (``unit_of_work``), saving (``saver``), forking
(:mod:`~agentlog.application.forking`), reads (``reads``) and erasure (``eraser``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, TypeVar

from agentlog.application.configuration import ConfiguredApplication
from agentlog.application.erasure import SessionEraser
from agentlog.application.erasure_facade import ErasureFacade
from agentlog.application.forking import fork_session
from agentlog.application.handle import SessionHandle, check_handle
from agentlog.application.history import MessageHistory
from agentlog.application.live import LiveSessions
from agentlog.application.live_view import LiveSessionsView
from agentlog.application.loading import SessionLoader
from agentlog.application.locks import DEFAULT_COMMAND_TIMEOUT, SessionLocks
from agentlog.application.observers import CreatedObserver, EventObserver, Observers
from agentlog.application.out_of_band import OutOfBandAppends
from agentlog.application.save_pipeline import SavePipeline
from agentlog.application.saving import SessionSaver
from agentlog.application.session_reads import SessionReads
from agentlog.application.stored_log import StoredLog
from agentlog.application.unit_of_work import UnitOfWork
from agentlog.domain.header import check_format_version
from agentlog.domain.session import (
    Clock,
    Session,
    SessionSnapshot,
    now_ms,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from contextlib import AbstractContextManager

    from eventsourcing.utils import EnvType

    from agentlog.application.agent_turns import Turn, Unit
    from agentlog.domain.json import Envelope
    from agentlog.domain.step_output import Content

T = TypeVar("T")

DEFAULT_SNAPSHOT_INTERVAL = 500
DEFAULT_MAX_LIVE = 1024
logger = logging.getLogger(__name__)


class Sessions(ErasureFacade, LiveSessionsView, SavePipeline):
    """Creates, appends, flushes, forks, repairs and reads agent sessions.

    Thread-safe: any number of threads may share one ``Sessions`` and call its
    methods. A :class:`SessionHandle` is not: hold it in one thread, inside
    :meth:`command` (or in a single-threaded loop with :meth:`get_session`).
    """

    name = ConfiguredApplication.name  # the library names each subclass anew
    snapshot_class = SessionSnapshot
    SNAPSHOT_INTERVAL = "AGENTLOG_SNAPSHOT_INTERVAL"
    MAX_LIVE = "AGENTLOG_MAX_LIVE"

    def __init__(
        self,
        env: EnvType | None = None,
        *,
        store: str | None = None,
        create_tables: bool = True,
        invariants: bool = True,
        clock: Clock = now_ms,
        max_live: int | None = None,
        command_timeout: float = DEFAULT_COMMAND_TIMEOUT,
        freshness_check: bool = True,
        strict_types: bool = False,
    ) -> None:
        """Open the store ``store`` names (see :meth:`construct_env` for the rest).

        ``create_tables=False`` never creates anything (run ``agentlog migrate``
        once instead); ``max_live`` bounds the live handles kept after they are
        flushed; ``command_timeout`` is how long :meth:`command` waits for a
        session another thread holds. ``freshness_check=False`` skips the store
        version check of reads and commands on live handles: only for a store
        this process alone writes (docs/service.md#isolation).
        ``strict_types`` makes every append refuse an undeclared type in a core
        family (``user/mesage``) instead of storing a plugin event
        (docs/agents.md#strict-types).
        """
        self.locks = SessionLocks()
        """Per-session in-process locks, shared by commands, erasure and async."""
        self.live = LiveSessions(self.locks, DEFAULT_MAX_LIVE)
        """This process's live handles (see :class:`LiveSessions`)."""
        self.observers = Observers(self.live)
        super().__init__(env, store=store, create_tables=create_tables)
        self.invariants = invariants
        self.clock = clock
        self.snapshot_interval = int(
            self.env.get(self.SNAPSHOT_INTERVAL) or DEFAULT_SNAPSHOT_INTERVAL
        )
        self.live.max_live = (
            int(self.env.get(self.MAX_LIVE) or DEFAULT_MAX_LIVE)
            if max_live is None
            else max_live
        )
        self.command_timeout = command_timeout
        self.freshness_check = freshness_check
        self.strict_types = strict_types
        """Appends refuse undeclared types in core families (see ``__init__``)."""
        self.stored_log = StoredLog(self)
        self.history = MessageHistory(self.recorder, self.stored_log.envelope)
        self.loader = SessionLoader(self)
        # The library reads these per instance (save snapshots through them).
        self.snapshotting_projectors = {Session: self.loader.project}  # type: ignore[misc]
        self.saver = SessionSaver(self)
        self.unit_of_work = UnitOfWork(self)
        self.reads = SessionReads(self)
        self.out_of_band = OutOfBandAppends(self)
        self.eraser = SessionEraser(self)
        # An erase that committed but could not finish (keys, scrub) before its
        # process stopped or failed is finished now (docs/erasure.md).
        if not self.read_only:
            self.eraser.resume()

    @property
    def snapshot_interval(self) -> int:
        """Events per kept snapshot (``AGENTLOG_SNAPSHOT_INTERVAL``; 0: none).

        A flush snapshots more often than that and each snapshot replaces the
        earlier ones of its interval (:meth:`SessionSaver.snapshot_if_due`,
        docs/persistence.md#snapshots); the library's own ``save`` step is not
        used (``snapshotting_intervals`` stays unset).
        """
        return self._snapshot_interval

    @snapshot_interval.setter
    def snapshot_interval(self, value: int) -> None:
        self._snapshot_interval = value

    def take_snapshot(
        self,
        aggregate_id: str,
        version: int | None = None,
        projector_func: Any = None,
    ) -> None:
        """The library's snapshot step of ``save``, from the live aggregate.

        Overridden because the library rebuilds the aggregate from the store up
        to ``version``, while the aggregate ``save`` just stored is at hand:
        see :meth:`SessionSaver.take_snapshot`.
        """
        self.saver.take_snapshot(
            aggregate_id,
            version,
            lambda: super(Sessions, self).take_snapshot(
                aggregate_id, version, projector_func or self.loader.project
            ),
        )

    @property
    def max_live(self) -> int:
        """How many idle, flushed handles stay live (least recently used go)."""
        return self.live.max_live

    @max_live.setter
    def max_live(self, value: int) -> None:
        self.live.max_live = value

    # ------------------------------------------------------------- observers

    def subscribe(
        self,
        *,
        created: CreatedObserver | None = None,
        event: EventObserver | None = None,
    ) -> Callable[[], None]:
        """Observe creations and appends; returns an unsubscribe.

        See docs/events.md#observers-and-lifecycle.
        """
        return self.observers.subscribe(created=created, event=event)

    def publish_event(self, handle: SessionHandle, envelope: Envelope) -> None:
        """Tell each observer, in order; a failing observer is logged and skipped.

        Observers are fire-and-forget: their errors never reach the appender and
        never change what is recorded.
        """
        self.observers.publish(handle, envelope)

    # -------------------------------------------------------------- creation

    def create_session(
        self,
        cwd: str | None = None,
        session_id: str | None = None,
        seed: Sequence[Mapping[str, Any]] | None = None,
        parent_session: str | None = None,
        *,
        created_at: int | None = None,
        seed_length: int | None = None,
        delegation_depth: int | None = None,
        owner: str | None = None,
        strict: bool = False,
        origin: str | None = None,
    ) -> SessionHandle:
        """Start a live session; it is stored at its first flush or close.

        ``owner`` (a tenant or user id) is an immutable header field that session
        filters select by (docs/events.md#header); forks inherit it. ``origin``
        says why a child exists (``"subagent"``: a delegated agent's session, as
        the original harness's later logs mark it); forks do not inherit it.

        A seed (forked or imported history) passes the seed rules and checks (a)–(c) of
        docs/events.md#the-append-pipeline, and the turn invariants too when ``strict``.
        """
        return self.loader.create(
            cwd=cwd,
            session_id=session_id,
            seed=seed,
            parent_session=parent_session,
            created_at=created_at,
            seed_length=seed_length,
            delegation_depth=delegation_depth,
            owner=owner,
            strict=strict,
            origin=origin,
        )

    def get_session(self, session_id: str) -> SessionHandle:
        """The live handle of a session, taking a stored session over if needed.

        For a single-threaded agent loop: the handle is shared by every caller of
        this method, so two threads appending to it would mix their work. Services
        use :meth:`command`.

        Taking over repairs: a stored session whose last turn is open gets the
        closers of docs/repair.md appended and saved exactly once. A session
        already live in this process is returned as is (never repaired).
        """
        return self.loader.get_session(session_id)

    def load_aggregate(self, session_id: str, *, at: int | None = None) -> Session:
        """The stored session's decision state: latest snapshot plus the tail
        (``at``: as of that seq, from the latest snapshot at or before it)."""
        return self.loader.load_aggregate(session_id, at=at)

    def repair(self, session_id: str) -> list[Envelope]:
        """Close an open stored turn now (what ``get_session`` does on take-over)."""
        return self.loader.repair(session_id)

    # ----------------------------------------------------------- unit of work

    def command(
        self,
        session_id: str,
        *,
        create: bool = False,
        cwd: str | None = None,
        owner: str | None = None,
        timeout: float | None = None,
    ) -> AbstractContextManager[SessionHandle]:
        """Hold a session for one request: flushed on success, discarded on error.

        The block has the session to itself within this process (a re-entrant
        per-session lock; waiting longer than ``timeout`` raises
        :class:`~agentlog.domain.errors.SessionBusyError`). When the outermost
        block ends normally its events are flushed in one transaction; when any
        block raises (whatever the exception), every event it appended is
        discarded and the exception propagates. ``create`` starts the session if
        it does not exist (with ``cwd`` and ``owner`` in its header; an existing
        session keeps its own). Across processes, a concurrent writer makes the flush
        raise :class:`SessionConflictError`; :meth:`run_with_retry` re-runs the
        whole block.
        """
        return self.unit_of_work.command(
            session_id, create=create, cwd=cwd, owner=owner, timeout=timeout
        )

    def run_with_retry(
        self,
        session_id: str,
        command: Callable[[SessionHandle], T],
        *,
        attempts: int = 100,
        wait: float = 0.01,
        create: bool = False,
        cwd: str | None = None,
        owner: str | None = None,
    ) -> T:
        """Run ``command`` as a unit of work (:meth:`command`); retry on conflict.

        The command must be safe to re-run on a freshly loaded session: on a
        :class:`SessionConflictError` its events are dropped, the session is
        reloaded from the store and the whole command runs again, up to
        ``attempts`` times (the library's :func:`~eventsourcing.utils.retry`, with
        jittered waits). Any other error discards the command's events and
        propagates. ``create``, ``cwd`` and ``owner`` are :meth:`command`'s: two
        processes creating one session both succeed, one as the second writer.
        """
        return self.unit_of_work.run_with_retry(
            session_id,
            command,
            attempts=attempts,
            wait=wait,
            create=create,
            cwd=cwd,
            owner=owner,
        )

    def roll_back(self, handle: SessionHandle, mark: int) -> None:
        """Drop the handle's pending events after the first ``mark`` (a failed
        block's); see :meth:`UnitOfWork.roll_back`."""
        self.unit_of_work.roll_back(handle, mark)

    def flush_command(self, handle: SessionHandle) -> None:
        """Flush a command's events, settling a commit whose reply was lost."""
        self.saver.flush_command(handle)

    def discard(self, handle: SessionHandle) -> int:
        """Drop a handle's unflushed events and close it; returns how many.

        The session stays as stored; open it again to append.
        """
        dropped = handle.unflushed
        self.live.forget(handle)
        if dropped:
            logger.info(
                "discarded %d unflushed event(s) of session %r", dropped, handle.id
            )
        return dropped

    # ----------------------------------------------------------------- flush

    def flush(self, handle: SessionHandle | None = None) -> None:
        """Save pending events: one transaction per session, or every live session.

        A created session is stored at its first flush, even with no events
        (docs/service.md#sessions-exist-when-created). A concurrency conflict raises
        :class:`SessionConflictError` and marks the handle stale. An unreachable
        store raises :class:`StoreUnavailableError` and keeps the pending events,
        so the next flush saves them exactly once (if the lost transaction did
        commit, the next flush finds its own rows and counts them as saved).
        Without a handle, sessions held by a command in another thread are
        skipped: their command flushes them.
        """
        if handle is None:
            self.saver.flush_idle()
            return
        check_handle(handle, "flush")
        self.saver.flush(handle)

    def connection_failures(self) -> int:
        """Connections this thread lost so far (the factory counts, if it can)."""
        return self.saver.connection_failures()

    def close(self, handle: SessionHandle | None = None) -> None:
        """Flush and close one handle; without one, flush everything and shut down.

        A closed handle refuses appends (:class:`SessionClosedError`).
        """
        if handle is not None:
            check_handle(handle, "close")
            if not handle.stale and not handle.closed:
                self.flush(handle)
            self.live.forget(handle)
            return
        try:
            self.flush()
        finally:
            self.live.close_all()
            super().close()

    def append_out_of_band(
        self, handle: SessionHandle, event_type: str, data: Any
    ) -> Envelope:
        """Append a log-only event from outside the agent loop.

        See docs/titles.md#producers.

        Inside an open turn the event rides that turn's checkpoint. Otherwise it is
        wrapped in a zero-step turn (``trigger: {kind: "session-title"}``), closed
        even when the inner append fails, and flushed at once.
        """
        return self.out_of_band.append(handle, event_type, data)

    # ------------------------------------------------------------------ fork

    def fork(
        self,
        source: str | SessionHandle,
        boundary: object = None,
        child_session_id: str | None = None,
    ) -> SessionHandle:
        """Seed a child with the source's events up to a ``turn/end``.

        See docs/fork.md#fork.
        """
        return fork_session(self, source, boundary, child_session_id)

    # ----------------------------------------------------------------- reads

    def is_stored(self, session_id: str) -> bool:
        """Whether the store holds this session (at least its first flushed batch)."""
        return self.reads.is_stored(session_id)

    def stored_header(self, session_id: str) -> dict[str, Any]:
        return self.reads.stored_header(session_id)

    def stored_length(self, session_id: str) -> int:
        """How many events the store holds for the session (one indexed read)."""
        return self.reads.stored_length(session_id)

    def is_erased(self, session_id: str) -> bool:
        """Whether the session's stream holds a tombstone (docs/erasure.md)."""
        return self.reads.is_erased(session_id)

    def header(self, session_id: str) -> dict[str, Any]:
        """The session's header (live first, then stored), as a fresh copy."""
        return self.reads.header(session_id)

    def read_events(
        self,
        session_id: str,
        after: int | None = None,
        limit: int | None = None,
    ) -> list[Envelope]:
        """Events with seq greater than ``after``, in order, at most ``limit``.

        A live session's unflushed events are included. Every call returns fresh
        copies; reading never writes.
        """
        return self.reads.read_events(session_id, after, limit)

    def messages(
        self, session_id: str, *, last: int | None = None, at: int | None = None
    ) -> list[dict[str, Any]]:
        """The derived LLM message history, or its ``last`` N; ``at``: as it was
        right after the event with that seq (what a model call there received).

        See docs/surface.md#derived-messages and #as-of-reads.

        Live sessions include their unflushed events; see
        :class:`~agentlog.application.history.MessageHistory` for what is read
        and cached.
        """
        return self.reads.messages(session_id, last=last, at=at)

    def turn(
        self,
        session: str | SessionHandle,
        *,
        user: Content | None = None,
        source: Mapping[str, Any] | None = None,
        trigger: Mapping[str, Any] | None = None,
        unit: Unit = "step",
        strict: bool = True,
        create: bool = False,
        cwd: str | None = None,
        owner: str | None = None,
    ) -> Turn:
        """A turn for an agent loop to write: ``with app.turn(id, user=...) as t:``.

        agentlog numbers it and its steps, marks and pairs the events, and writes
        each step (or, with ``unit="turn"``, the whole turn) as one unit of work
        (docs/agents.md). Given a ``get_session`` handle instead of an id, it
        writes on that handle and the loop flushes.
        """
        from agentlog.application.agent_turns import Turn

        handle = session if isinstance(session, SessionHandle) else None
        return Turn(
            self,
            session if isinstance(session, str) else session.id,
            handle=handle,
            user=user,
            source=source,
            trigger=trigger,
            unit=unit,
            strict=strict,
            create=create,
            cwd=cwd,
            owner=owner,
        )


__all__ = ["SessionHandle", "Sessions", "check_format_version"]
