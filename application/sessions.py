"""``Sessions``: the event-sourced application that creates, appends, forks and reads.

Appends are synchronous and in memory (the live handle's pending events are the
write-behind buffer); :meth:`Sessions.flush` is the durability checkpoint: one
transaction per session. Persistence comes from the environment only
(``PERSISTENCE_MODULE`` and the library's settings), so the same code runs on POPO in
tests and on SQLite or PostgreSQL in production.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import IntegrityError
from eventsourcing.persistence import PersistenceError as EventSourcingPersistenceError
from eventsourcing.utils import retry

from agentlog.application.as_of import surface_as_of
from agentlog.application.erasure import Erasure, RetentionReport, SessionEraser
from agentlog.application.fork_copy import can_copy, fork_by_copy
from agentlog.application.handle import SessionHandle
from agentlog.application.history import MessageHistory
from agentlog.application.locks import (
    DEFAULT_COMMAND_TIMEOUT,
    SessionLocks,
    thread_owner,
)
from agentlog.application.store_errors import (
    UNAVAILABLE,
    store_errors,
    unavailable_message,
)
from agentlog.application.stored_log import StoredLog
from agentlog.domain.errors import (
    AgentlogError,
    SessionAlreadyExistsError,
    SessionClosedError,
    SessionConflictError,
    SessionErasedError,
    SessionError,
    SessionForkError,
    SessionNotFoundError,
    StaleSessionError,
    StoreUnavailableError,
    StoreURLError,
)
from agentlog.domain.events import Erased, SessionEvent
from agentlog.domain.fork import resolve_fork_boundary
from agentlog.domain.header import check_format_version, is_storable_text
from agentlog.domain.json import loads
from agentlog.domain.session import (
    Clock,
    Session,
    SessionCreated,
    SessionSnapshot,
    check_known_session_id,
    check_session_id,
    make_header,
    now_ms,
    project_session,
)
from agentlog.domain.vocabulary import check_legacy, check_reserved_type
from agentlog.infrastructure.crypto import EncryptionSettings, encryption_settings
from agentlog.infrastructure.mapper import SessionMapper
from agentlog.infrastructure.store_url import STORE_ENV_VAR, parse_store_url

if TYPE_CHECKING:
    from eventsourcing.persistence import Mapper
    from eventsourcing.utils import Environment, EnvType

    from agentlog.application.agent_turns import Turn, Unit
    from agentlog.domain.json import Envelope
    from agentlog.domain.step_output import Content

CreatedObserver = Callable[["SessionHandle"], None]
EventObserver = Callable[["SessionHandle", "Envelope"], None]

T = TypeVar("T")

POSTGRES_FACTORY_TOPIC = (
    "agentlog.infrastructure.backends.postgres.factory:AgentlogPostgresFactory"
)
POPO_FACTORY_TOPIC = (
    "agentlog.infrastructure.backends.memory.factory:AgentlogPOPOFactory"
)
DEFAULT_SNAPSHOT_INTERVAL = 500
DEFAULT_MAX_LIVE = 1024
SETTLE_ATTEMPTS = 5
SETTLE_WAIT = 0.05
REPAIR_ATTEMPTS = 5
logger = logging.getLogger(__name__)


class Sessions(Application[str]):
    """Creates, appends, flushes, forks, repairs and reads agent sessions.

    Thread-safe: any number of threads may share one ``Sessions`` and call its
    methods. A :class:`SessionHandle` is not: hold it in one thread, inside
    :meth:`command` (or in a single-threaded loop with :meth:`get_session`).
    """

    name = "Sessions"
    env: ClassVar[dict[str, str]] = {
        "MAPPER_TOPIC": "agentlog.infrastructure.mapper:SessionMapper",
        "IS_SNAPSHOTTING_ENABLED": "y",
    }
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
    ) -> None:
        """Open the store ``store`` names (see :meth:`construct_env` for the rest).

        ``create_tables=False`` never creates anything (run ``agentlog migrate``
        once instead); ``max_live`` bounds the live handles kept after they are
        flushed; ``command_timeout`` is how long :meth:`command` waits for a
        session another thread holds.
        """
        # _mutex guards the two tables; _locks serialises commands per session.
        self._mutex = threading.RLock()
        self._live: OrderedDict[str, SessionHandle] = OrderedDict()
        self._dirty: dict[str, SessionHandle] = {}
        self._locks = SessionLocks()
        self._out_of_band: set[str] = set()
        self._created_observers: list[CreatedObserver] = []
        self._event_observers: list[EventObserver] = []
        self._store_url = store
        self._store_display = ""
        self._create_tables = create_tables
        self._encryption: EncryptionSettings | None = None
        try:
            super().__init__(env)
        except (EventSourcingPersistenceError, OSError) as error:
            self._close_partly_open()
            where = f" {self._store_display}" if self._store_display else ""
            msg = f"cannot open the store{where}: {error}".strip()
            raise StoreUnavailableError(msg) from error
        except AgentlogError:
            self._close_partly_open()
            raise
        except Exception as error:
            # A driver's own error (a backend killed while the tables are made):
            # every failure at open is typed (docs/errors.md).
            self._close_partly_open()
            where = f" {self._store_display}" if self._store_display else ""
            reason = " ".join(str(error).split()) or type(error).__name__
            msg = f"cannot open the store{where}: {reason}"
            raise StoreUnavailableError(msg) from error
        self.invariants = invariants
        self.clock = clock
        self.snapshot_interval = int(
            self.env.get(self.SNAPSHOT_INTERVAL) or DEFAULT_SNAPSHOT_INTERVAL
        )
        self.max_live = (
            int(self.env.get(self.MAX_LIVE) or DEFAULT_MAX_LIVE)
            if max_live is None
            else max_live
        )
        self.command_timeout = command_timeout
        self.stored_log = StoredLog(self)
        self.history = MessageHistory(self.recorder, self.stored_log.envelope)
        self.eraser = SessionEraser(self)
        # An erase that committed but could not finish (keys, scrub) before its
        # process stopped or failed is finished now (docs/erasure.md).
        self.eraser.resume()

    def construct_env(self, name: str, env: EnvType | None = None) -> Environment:
        """One way to name a store, honoured everywhere.

        ``store=URL``; else ``AGENTLOG_STORE``, then the library's own variables
        (``PERSISTENCE_MODULE``…), first in the ``env`` given, then in the
        process environment; else in memory. Code beats the process environment.
        """
        given = dict(env or {})
        url = self._store_url or given.get(STORE_ENV_VAR)
        if not url and "PERSISTENCE_MODULE" not in given:
            url = os.environ.get(STORE_ENV_VAR)
        if url:
            config = parse_store_url(url)
            self._store_display = config.display
            given.update(config.env)
        if not self._create_tables:
            given["CREATE_TABLE"] = "n"
        environment = super().construct_env(name, given)
        module = environment.get("PERSISTENCE_MODULE")
        if module == "eventsourcing.sqlite":
            # Adds an exact read of surface rows (backends.sqlite.recorders).
            environment.setdefault(
                "APPLICATION_RECORDER_TOPIC",
                "agentlog.infrastructure.backends.sqlite.recorders:SQLiteSessionRecorder",
            )
        elif module == "eventsourcing.postgres":
            # URL parameters, an early connection check and locked table creation.
            environment["PERSISTENCE_MODULE"] = POSTGRES_FACTORY_TOPIC
        elif module in (None, "", "eventsourcing.popo"):
            # The write guard and erasure of docs/erasure.md, in memory too.
            environment["PERSISTENCE_MODULE"] = POPO_FACTORY_TOPIC
        # Session ids are strings: an inherited ORIGINATOR_ID_TYPE=uuid would make
        # writes commit and every read fail, so it is forced here.
        for key in environment.create_keys("ORIGINATOR_ID_TYPE"):
            environment[key] = "text"
        # Checked before any connection is made: a bad setting opens nothing.
        self._encryption = encryption_settings(environment)
        return environment

    def construct_mapper(self) -> Mapper[str]:
        """The library's mapper (``MAPPER_TOPIC``), given the per-session keys
        when ``AGENTLOG_ENCRYPTION=per-session`` (docs/encryption.md)."""
        mapper = super().construct_mapper()
        if self._encryption is not None:
            # Imported here: the key stores bring psycopg, which a store without
            # encryption never needs at start-up (the command line's import time).
            from agentlog.infrastructure.keystore import open_key_store

            if not isinstance(mapper, SessionMapper):
                msg = "per-session encryption needs agentlog's SessionMapper"
                raise StoreURLError(msg)
            mapper.keys = open_key_store(
                self._encryption.keystore, self._encryption.master_key, self.env
            )
        return mapper

    def _close_partly_open(self) -> None:
        """Close what a failed ``__init__`` had opened (a pool, a key store)."""
        mapper = getattr(self, "mapper", None)
        if isinstance(mapper, SessionMapper) and mapper.keys is not None:
            mapper.keys.close()
        factory = getattr(self, "factory", None)
        if factory is not None:
            with contextlib.suppress(Exception):
                factory.close()

    def forget_keys(self, session_ids: Iterable[str]) -> int:
        """Delete these sessions' data keys (crypto-shredding; docs/encryption.md).

        :meth:`erase` does this after every erase it commits; call it directly
        only to shred without erasing. Without per-session encryption there are
        no keys and this returns 0.
        Every stored copy of those sessions' rows, backups included, can no
        longer be decrypted; reading them raises ``SessionKeyForgottenError``
        (a :class:`SessionNotFoundError`).
        """
        keys = self.mapper.keys if isinstance(self.mapper, SessionMapper) else None
        return 0 if keys is None else keys.forget(session_ids)

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
        if created is not None:
            self._created_observers.append(created)
        if event is not None:
            self._event_observers.append(event)

        def unsubscribe() -> None:
            if created is not None and created in self._created_observers:
                self._created_observers.remove(created)
            if event is not None and event in self._event_observers:
                self._event_observers.remove(event)

        return unsubscribe

    def publish_event(self, handle: SessionHandle, envelope: Envelope) -> None:
        """Tell each observer, in order; a failing observer is logged and skipped.

        Observers are fire-and-forget: their errors never reach the appender and
        never change what is recorded.
        """
        with self._mutex:
            if self._live.get(handle.id) is handle:
                self._live.move_to_end(handle.id)
                self._dirty[handle.id] = handle
        for observer in list(self._event_observers):
            try:
                observer(handle, envelope)
            except Exception:
                logger.exception(
                    "observer %r failed on session %r seq %s (event kept)",
                    observer,
                    handle.id,
                    envelope.get("seq"),
                )

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
    ) -> SessionHandle:
        """Start a live session; nothing is stored until its first non-empty flush.

        ``owner`` (a tenant or user id) is an immutable header field that session
        filters select by (docs/events.md#header); forks inherit it.

        A seed (forked or imported history) passes the seed rules and checks (a)–(c) of
        docs/events.md#the-append-pipeline, and the turn invariants too when ``strict``.
        """
        if session_id is None:
            session_id = str(uuid.uuid4())
        check_session_id(session_id)
        self._refuse_live(session_id)
        header = make_header(
            session_id,
            created_at=created_at,
            cwd=cwd,
            parent_session=parent_session,
            seed_length=seed_length,
            delegation_depth=delegation_depth,
            owner=owner,
            clock=self.clock,
        )
        if self.is_stored(session_id):
            msg = (
                f'session "{session_id}" already has a persisted log; load it with '
                "get_session instead of creating it"
            )
            raise SessionAlreadyExistsError(msg)
        if self.is_erased(session_id):
            raise SessionErasedError(session_id)
        aggregate = Session.create(
            session_id,
            header,
            seed=seed,
            strict=strict,
            invariants=self.invariants,
            clock=self.clock,
        )
        return self._announce(self._enter(aggregate, new=True))

    def _announce(self, handle: SessionHandle) -> SessionHandle:
        """Tell the creation observers; a failing one undoes the registration."""
        try:
            for observer in list(self._created_observers):
                observer(handle)
        except BaseException:
            self._forget(handle)
            raise
        return handle

    def _refuse_live(self, session_id: str) -> None:
        live = self._live.get(session_id)
        if live is not None and not live.stale:
            msg = f'session "{session_id}" already exists'
            raise SessionAlreadyExistsError(msg)

    def _enter(self, aggregate: Session, *, new: bool = False) -> SessionHandle:
        """Make ``aggregate`` the session's live handle (the newest one wins)."""
        aggregate.invariants = self.invariants
        aggregate.clock = self.clock
        handle = SessionHandle(self, aggregate)
        with self._mutex:
            if new:
                self._refuse_live(aggregate.id)
            previous = self._live.pop(aggregate.id, None)
            if previous is not None and not previous.stale:
                previous.closed = True
            self._live[aggregate.id] = handle
            if aggregate.pending_events:
                self._dirty[aggregate.id] = handle
            else:
                self._dirty.pop(aggregate.id, None)
            self._evict()
        return handle

    def _forget(self, handle: SessionHandle) -> None:
        """Close ``handle`` and drop it from the live tables (if it is there)."""
        handle.closed = True
        with self._mutex:
            if self._live.get(handle.id) is handle:
                del self._live[handle.id]
            if self._dirty.get(handle.id) is handle:
                del self._dirty[handle.id]

    def _evict(self) -> None:
        """Close the least recently used clean, idle handles beyond ``max_live``.

        Called with the mutex held. A handle with unflushed events, or held by a
        command, is never evicted: its work would be lost.
        """
        excess = len(self._live) - self.max_live
        if excess <= 0:
            return
        evicted: list[SessionHandle] = []
        for session_id, handle in self._live.items():
            if len(evicted) == excess:
                break
            if session_id in self._dirty or self._locks.is_held(session_id):
                continue
            evicted.append(handle)
        for handle in evicted:
            handle.closed = True
            del self._live[handle.id]
        if evicted:
            logger.debug(
                "evicted %d idle flushed session handle(s) (max_live=%d)",
                len(evicted),
                self.max_live,
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
        check_known_session_id(session_id)
        with self._mutex:
            handle = self._live.get(session_id)
            if handle is not None and not handle.stale:
                self._live.move_to_end(session_id)
                return handle
        for attempt in range(REPAIR_ATTEMPTS):
            aggregate = self.load_aggregate(session_id)
            handle = self._enter(aggregate)
            if not aggregate.closers():
                return handle
            aggregate.repair()
            try:
                self.flush(handle)
            except SessionConflictError:
                # Another writer appended (or repaired) first: read again.
                logger.info(
                    "repair of session %r lost a conflict; reading it again",
                    session_id,
                )
                if attempt == REPAIR_ATTEMPTS - 1:
                    raise
                continue
            logger.info("repaired session %r on take-over", session_id)
            return handle
        raise AssertionError("unreachable")  # pragma: no cover

    # ----------------------------------------------------------- unit of work

    @contextlib.contextmanager
    def command(
        self,
        session_id: str,
        *,
        create: bool = False,
        cwd: str | None = None,
        owner: str | None = None,
        timeout: float | None = None,
    ) -> Iterator[SessionHandle]:
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
        if create:
            check_session_id(session_id)
        else:
            check_known_session_id(session_id)
        holder = thread_owner()
        wait = self.command_timeout if timeout is None else timeout
        with self.holding(session_id, holder, wait) as depth:
            handle = self._command_handle(
                session_id,
                outermost=depth == 1,
                create=create,
                cwd=cwd,
                owner=owner,
            )
            mark = len(handle.aggregate.pending_events)
            try:
                yield handle
                if depth == 1:
                    self.flush_command(handle)
            except BaseException:
                self.roll_back(handle, mark)
                raise

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
            outcome = self._settle(handle)
            if outcome is True:
                return
            if outcome is None:
                self._forget(handle)
                msg = f"{error}; whether the command was stored is unknown"
                raise StoreUnavailableError(msg) from error.__cause__
            raise

    def _settle(self, handle: SessionHandle) -> bool | None:
        """Whether the handle's pending events are stored (``None``: cannot tell)."""
        pending = list(handle.aggregate.pending_events)
        for attempt in range(SETTLE_ATTEMPTS):
            try:
                with store_errors():
                    saved = self._already_saved(pending)
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
                with self._mutex:
                    if self._dirty.get(handle.id) is handle:
                        del self._dirty[handle.id]
            return saved
        return None

    @contextlib.contextmanager
    def holding(self, session_id: str, owner: Any, timeout: float) -> Iterator[int]:
        """Hold the session's in-process lock for ``owner``; yields the depth."""
        depth = self._locks.acquire(session_id, owner, timeout)
        try:
            yield depth
        finally:
            self._locks.release(session_id, owner)

    def _command_handle(
        self,
        session_id: str,
        *,
        outermost: bool,
        create: bool,
        cwd: str | None,
        owner: str | None,
    ) -> SessionHandle:
        """The handle a command works on, starting from the stored state."""
        with self._mutex:
            handle = self._live.get(session_id)
        if handle is not None and not handle.stale:
            if outermost and handle.unflushed:
                # Work appended outside any command (a get_session loop in this
                # process) is saved first, so the block starts from stored state.
                self.flush(handle)
            return self.get_session(session_id)
        if create and not self.is_stored(session_id):
            try:
                return self.create_session(cwd=cwd, session_id=session_id, owner=owner)
            except SessionAlreadyExistsError:
                # Another process stored it between the two checks: work on theirs,
                # as if this command had come second.
                logger.info(
                    "session %r was created concurrently; loading it", session_id
                )
        return self.get_session(session_id)

    def roll_back(self, handle: SessionHandle, mark: int) -> None:
        """Drop the handle's pending events after the first ``mark``.

        The aggregate is rebuilt from the store plus the kept events (the events
        already folded into it cannot be unfolded). If that read fails, the handle
        is closed and the next command reads the session again.
        """
        pending = handle.aggregate.pending_events
        dropped = len(pending) - mark
        if dropped <= 0 and not handle.stale:
            return
        logger.info(
            "discarding %d event(s) of a failed command on session %r",
            max(dropped, 0),
            handle.id,
        )
        if handle.stale:
            self._forget(handle)
            return
        try:
            rebuilt = self._rebuilt(handle.id, list(pending[:mark]))
        except Exception:
            logger.warning(
                "could not rebuild session %r after a failed command; its handle "
                "is closed and the next command reads it again",
                handle.id,
                exc_info=True,
            )
            self._forget(handle)
            return
        handle.replace_aggregate(rebuilt)
        with self._mutex:
            if not rebuilt.pending_events and self._dirty.get(handle.id) is handle:
                del self._dirty[handle.id]

    def _rebuilt(self, session_id: str, keep: list[Any]) -> Session:
        """The stored session (or a new one) with the ``keep`` events re-applied."""
        aggregate: Session
        if keep and isinstance(keep[0], SessionCreated):
            aggregate = keep[0].mutate(None)
            rest = keep[1:]
        else:
            aggregate = self.load_aggregate(session_id)
            rest = keep
        for event in rest:
            if event.originator_version != aggregate.version + 1:
                raise SessionConflictError(session_id, aggregate.seq)
            aggregate.apply_envelope(event.envelope)
            aggregate.version = event.originator_version
        aggregate.pending_events.extend(keep)
        aggregate.invariants = self.invariants
        aggregate.clock = self.clock
        return aggregate

    def discard(self, handle: SessionHandle) -> int:
        """Drop a handle's unflushed events and close it; returns how many.

        The session stays as stored; open it again to append.
        """
        dropped = handle.unflushed
        self._forget(handle)
        if dropped:
            logger.info(
                "discarded %d unflushed event(s) of session %r", dropped, handle.id
            )
        return dropped

    def run_with_retry(
        self,
        session_id: str,
        command: Callable[[SessionHandle], T],
        *,
        attempts: int = 100,
        wait: float = 0.01,
    ) -> T:
        """Run ``command`` as a unit of work (:meth:`command`); retry on conflict.

        The command must be safe to re-run on a freshly loaded session: on a
        :class:`SessionConflictError` its events are dropped, the session is
        reloaded from the store and the whole command runs again, up to
        ``attempts`` times (the library's :func:`~eventsourcing.utils.retry`, with
        jittered waits). Any other error discards the command's events and
        propagates.
        """
        if not callable(command):
            msg = (
                f"run_with_retry needs a callable command, got {type(command).__name__}"
            )
            raise SessionError(msg)

        def attempt() -> T:
            try:
                with self.command(session_id) as handle:
                    return command(handle)
            except SessionConflictError:
                logger.info(
                    "conflict on session %r; re-running the command", session_id
                )
                raise

        retrying: Callable[[], T] = retry(
            SessionConflictError, max_attempts=attempts, wait=wait
        )(attempt)
        return retrying()

    def repair(self, session_id: str) -> list[Envelope]:
        """Close an open stored turn now (what ``get_session`` does on take-over)."""
        check_known_session_id(session_id)
        live = self._live.get(session_id)
        if live is not None and not live.stale:
            return []
        aggregate = self.load_aggregate(session_id)
        closers = aggregate.repair()
        if closers:
            handle = SessionHandle(self, aggregate)
            self.flush(handle)
            logger.info("repaired session %r (%d closer(s))", session_id, len(closers))
        return closers

    def load_aggregate(self, session_id: str, *, at: int | None = None) -> Session:
        """The stored session's decision state: latest snapshot plus the tail
        (``at``: as of that seq, from the latest snapshot at or before it)."""
        check_known_session_id(session_id)
        version = None if at is None else at + 2
        try:
            with store_errors():
                aggregate = self.repository.get(
                    session_id, version=version, projector_func=self._project_checked
                )
        except AggregateNotFoundError:
            raise SessionNotFoundError(session_id) from None
        assert isinstance(aggregate, Session)
        check_format_version(session_id, aggregate.header)
        if aggregate.corruption is not None:
            raise aggregate.corruption
        aggregate.invariants = self.invariants
        aggregate.clock = self.clock
        return aggregate

    def _project_checked(
        self, aggregate: Session | None, events: Any
    ) -> Session | None:
        return project_session(aggregate, _refusing_legacy(events))

    # ----------------------------------------------------------------- flush

    def flush(self, handle: SessionHandle | None = None) -> None:
        """Save pending events: one transaction per session, or every live session.

        A session whose only pending event is its creation is not saved (nothing is
        persisted before the first event). A concurrency conflict raises
        :class:`SessionConflictError` and marks the handle stale. An unreachable
        store raises :class:`StoreUnavailableError` and keeps the pending events,
        so the next flush saves them exactly once (if the lost transaction did
        commit, the next flush finds its own rows and counts them as saved).
        Without a handle, sessions held by a command in another thread are
        skipped: their command flushes them.
        """
        if handle is None:
            self._flush_idle()
            return
        _check_handle(handle, "flush")
        if handle.closed:
            raise SessionClosedError(handle.id)
        if handle.stale:
            raise StaleSessionError(handle.id)
        aggregate = handle.aggregate
        pending = list(aggregate.pending_events)
        if not any(isinstance(event, SessionEvent) for event in pending):
            return
        first_version = pending[0].originator_version
        failures = self.connection_failures()
        try:
            self.events.put(pending)
        except SessionErasedError:
            # Erased meanwhile (by another process, or before this handle was
            # taken over): nothing is written, and the handle is done.
            logger.info("flush of session %r refused: it was erased", handle.id)
            self._forget(handle)
            handle.stale = True
            raise
        except IntegrityError as error:
            # The PostgreSQL recorder retries a lost connection itself: a retry of
            # a commit whose reply was lost meets its own rows, which is not a
            # conflict. Only then (or after an earlier lost flush) are the stored
            # rows compared with ours: two writers may append identical bytes.
            retried = self.connection_failures() != failures
            with store_errors():
                saved = (retried or handle.uncertain) and self._already_saved(pending)
            if not saved:
                handle.stale = True
                with store_errors():
                    erased = self.is_erased(handle.id)
                if erased:
                    # The tombstone took the version this flush meant to write.
                    self._forget(handle)
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
        except UNAVAILABLE as error:
            handle.uncertain = True
            logger.warning(
                "store unavailable while flushing session %r; %d event(s) kept "
                "for the next flush: %s",
                handle.id,
                len(pending),
                error,
            )
            raise StoreUnavailableError(unavailable_message(error)) from error
        handle.uncertain = False
        del aggregate.pending_events[: len(pending)]
        with self._mutex:
            if not aggregate.pending_events and self._dirty.get(handle.id) is handle:
                del self._dirty[handle.id]
            self._evict()
        self._take_live_snapshot(aggregate, first_version - 1)

    def connection_failures(self) -> int:
        """Connections this thread lost so far (the factory counts, if it can)."""
        count = getattr(self.factory, "connection_failures", None)
        return int(count()) if callable(count) else 0

    def _already_saved(self, pending: list[Any]) -> bool:
        """Whether the store holds exactly these events (a commit, reply lost)."""
        events = [event for event in pending if isinstance(event, SessionEvent)]
        if not events:
            return False
        rows = self.recorder.select_events(
            events[0].originator_id,
            gt=events[0].originator_version - 1,
            lte=events[-1].originator_version,
        )
        # Compared as plain bytes: a sealed state differs at every encryption.
        assert isinstance(self.mapper, SessionMapper)
        mapper = self.mapper
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

    def _flush_idle(self) -> None:
        owner = thread_owner()
        with self._mutex:
            dirty = list(self._dirty.values())
        for live in dirty:
            if live.stale or live.closed:
                continue
            if not self._locks.try_hold(live.id, owner):
                continue
            try:
                self.flush(live)
            finally:
                self._locks.release(live.id, owner)

    def _take_live_snapshot(self, aggregate: Session, previous_version: int) -> None:
        """Snapshot the live aggregate itself (the library's way replays the log)."""
        if self.snapshots is None or self.snapshot_interval <= 0:
            return
        interval = self.snapshot_interval
        if aggregate.version // interval == previous_version // interval:
            return
        try:
            self.snapshots.put([SessionSnapshot.take(aggregate)])
            self.eraser.after_snapshot(aggregate.id)
        except IntegrityError:
            pass  # another writer saved this snapshot first
        except UNAVAILABLE:
            # A snapshot only speeds loading up: the events are already stored.
            logger.warning(
                "snapshot of session %r skipped: store unavailable", aggregate.id
            )

    def close(self, handle: SessionHandle | None = None) -> None:
        """Flush and close one handle; without one, flush everything and shut down.

        A closed handle refuses appends (:class:`SessionClosedError`).
        """
        if handle is not None:
            _check_handle(handle, "close")
            if not handle.stale and not handle.closed:
                self.flush(handle)
            self._forget(handle)
            return
        try:
            self.flush()
        finally:
            with self._mutex:
                for live in self._live.values():
                    live.closed = True
                self._live.clear()
                self._dirty.clear()
            super().close()
            if isinstance(self.mapper, SessionMapper) and self.mapper.keys is not None:
                self.mapper.keys.close()

    def live_session(self, session_id: str) -> SessionHandle | None:
        """The open handle of ``session_id`` in this process, if any."""
        if type(session_id) is not str:
            return None
        return self._live.get(session_id)

    def live_sessions(self) -> list[SessionHandle]:
        with self._mutex:
            return list(self._live.values())

    def is_live(self, session_id: str) -> bool:
        return self.live_session(session_id) is not None

    def unflushed_sessions(self) -> list[SessionHandle]:
        """Live handles with events not yet stored (or never stored at all).

        Every other live handle equals its stored copy, so a listing reads these
        only: its cost does not grow with the number of live handles.
        """
        with self._mutex:
            return list(self._dirty.values())

    def append_out_of_band(
        self, handle: SessionHandle, event_type: str, data: Any
    ) -> Envelope:
        """Append a log-only event from outside the agent loop.

        See docs/titles.md#producers.

        Inside an open turn the event rides that turn's checkpoint. Otherwise it is
        wrapped in a zero-step turn (``trigger: {kind: "session-title"}``), closed
        even when the inner append fails, and flushed at once.
        """
        with self._mutex:
            if handle.id in self._out_of_band:
                msg = (
                    f'session "{handle.id}" already has an out-of-band append in '
                    "progress"
                )
                raise SessionError(msg)
            self._out_of_band.add(handle.id)
        try:
            aggregate = handle.aggregate
            if aggregate.turns.open_turn is not None:
                return handle.append(event_type, data)
            turn = aggregate.turns.next_turn
            handle.append(
                "turn/start", {"turn": turn, "trigger": {"kind": "session-title"}}
            )
            try:
                return handle.append(event_type, data)
            finally:
                handle.append(
                    "turn/end", {"turn": turn, "reason": {"kind": "completed"}}
                )
                self.flush(handle)
        finally:
            self._out_of_band.discard(handle.id)

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
        if child_session_id is not None:
            check_session_id(child_session_id)
        if not isinstance(source, SessionHandle):
            check_known_session_id(source)
        if child_session_id is not None and (
            child_session_id in self._live or self.is_stored(child_session_id)
        ):
            raise SessionForkError(
                f'session "{child_session_id}" already exists',
                SessionForkError.SESSION_ALREADY_EXISTS,
            )
        if child_session_id is not None and self.is_erased(child_session_id):
            raise SessionErasedError(child_session_id)
        source_id = source.id if isinstance(source, SessionHandle) else source
        live = self._live.get(source_id)
        if isinstance(source, SessionHandle):
            if live is None and not self.is_stored(source_id):
                raise SessionForkError(
                    f'session "{source_id}" not found',
                    SessionForkError.SESSION_NOT_FOUND,
                )
            if live is not None and live is not source:
                raise SessionForkError(
                    f'session "{source_id}" is not the live store instance',
                    SessionForkError.SESSION_NOT_LIVE,
                )
        if live is not None:
            header = live.aggregate.header
            length = live.seq
        else:
            try:
                header = self.stored_header(source_id)
            except SessionNotFoundError:
                raise SessionForkError(
                    f'session "{source_id}" not found',
                    SessionForkError.SESSION_NOT_FOUND,
                ) from None
            length = self.stored_length(source_id)

        def type_at(seq: int) -> str:
            return str(self.read_events(source_id, after=seq - 1, limit=1)[0]["type"])

        last = resolve_fork_boundary(source_id, boundary, length, type_at)
        cwd = header.get("cwd")
        owner = header.get("owner")
        if live is None and last is not None and can_copy(self):
            # A stored parent: copy its validated rows in the store.
            child_id = child_session_id or str(uuid.uuid4())
            self._refuse_live(child_id)
            child = fork_by_copy(
                self,
                source_id,
                last,
                cwd=cwd if isinstance(cwd, str) else None,
                owner=owner if isinstance(owner, str) else None,
                child_id=child_id,
                project=self._project_checked,
                clock=self.clock,
                snapshot=self.snapshot_interval > 0,
            )
            return self._announce(self._enter(child, new=True))
        seed = [] if last is None else self.read_events(source_id, limit=last + 1)
        return self.create_session(
            cwd=cwd if isinstance(cwd, str) else None,
            owner=owner if isinstance(owner, str) else None,
            session_id=child_session_id,
            seed=seed,
            parent_session=source_id,
            seed_length=len(seed),
            strict=self.invariants,
        )

    # ----------------------------------------------------------------- reads

    def is_stored(self, session_id: str) -> bool:
        """Whether the store holds this session (at least its first flushed batch)."""
        check_session_id(session_id)
        if not is_storable_text(session_id):
            return False
        with store_errors():
            return bool(self.recorder.select_events(session_id, lte=1, limit=1))

    def stored_header(self, session_id: str) -> dict[str, Any]:
        check_known_session_id(session_id)
        with store_errors():
            return self.stored_log.header(session_id)

    def stored_length(self, session_id: str) -> int:
        """How many events the store holds for the session (one indexed read)."""
        with store_errors():
            rows = self.recorder.select_events(session_id, desc=True, limit=1)
        if not rows or rows[0].topic == Erased.TOPIC:
            raise SessionNotFoundError(session_id)
        return rows[0].originator_version - 1

    def is_erased(self, session_id: str) -> bool:
        """Whether the session's stream holds a tombstone (docs/erasure.md)."""
        check_session_id(session_id)
        if not is_storable_text(session_id):
            return False
        with store_errors():
            rows = self.recorder.select_events(session_id, desc=True, limit=1)
        return bool(rows) and rows[0].topic == Erased.TOPIC

    # --------------------------------------------------------------- erasure

    def erase(
        self, session_id: str, *, reason: str, descendants: bool = False
    ) -> list[Erasure]:
        """Erase a stored session everywhere, in one transaction.

        See docs/erasure.md. Its events, snapshots and every view row about it
        go; a content-free tombstone (id, time, ``reason``) stays for the audit
        (:meth:`erasures`). Afterwards every read says the session does not
        exist. ``descendants`` erases its stored forks too, in the same
        transaction. A missing or erased id raises
        :class:`SessionNotFoundError`.
        """
        with store_errors():
            return self.eraser.erase(session_id, reason=reason, descendants=descendants)

    def erasures(self) -> list[Erasure]:
        """The audit: every erasure in the store (id, time, reason), oldest first."""
        with store_errors():
            return self.eraser.erasures()

    def erase_older_than(
        self,
        cutoff: int,
        *,
        reason: str,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
        vacuum_full: bool = False,
    ) -> RetentionReport:
        """Erase every session whose last event is older than ``cutoff`` (epoch ms).

        See docs/erasure.md#retention. A session appended to while this runs is
        kept; ``vacuum_full`` rewrites a PostgreSQL store's tables afterwards.
        """
        with store_errors():
            return self.eraser.erase_older_than(
                cutoff,
                reason=reason,
                dry_run=dry_run,
                progress=progress,
                vacuum_full=vacuum_full,
            )

    def drop_erased(self, session_id: str) -> None:
        """Forget an erased session in this process: its handle and caches."""
        with self._mutex:
            handle = self._live.pop(session_id, None)
            self._dirty.pop(session_id, None)
        if handle is not None:
            handle.closed = True
            handle.stale = True
        self.history.forget(session_id)

    def header(self, session_id: str) -> dict[str, Any]:
        """The session's header (live first, then stored), as a fresh copy."""
        check_known_session_id(session_id)
        live = self._live.get(session_id)
        if live is not None:
            return live.header
        header = self.stored_header(session_id)
        check_format_version(session_id, header)
        return header

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
        check_known_session_id(session_id)
        _check_count("after", after, minimum=-1)
        _check_count("limit", limit, minimum=0)
        start = 0 if after is None else after + 1
        live = self._live.get(session_id)
        if live is None:
            events = self._read_stored(session_id, start, None, limit)
            if not events and not self.is_stored(session_id):
                raise SessionNotFoundError(session_id)
            return events
        pending = [
            event
            for event in live.aggregate.pending_events
            if isinstance(event, SessionEvent)
        ]
        stored_end = pending[0].seq if pending else live.seq
        events = []
        if start < stored_end:
            events = self._read_stored(session_id, start, stored_end - 1, limit)
        for event in pending:
            if limit is not None and len(events) >= limit:
                break
            if event.seq >= start:
                events.append(loads(event.encoded))
        return events

    def _read_stored(
        self, session_id: str, start: int, last: int | None, limit: int | None
    ) -> list[Envelope]:
        with store_errors():
            return self.stored_log.events(session_id, start, last, limit)

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
        check_known_session_id(session_id)
        _check_count("last", last, minimum=0)
        _check_count("at", at, minimum=0)
        if at is not None:
            state = surface_as_of(self, session_id, at)
            return self.history.of_nodes(
                session_id, state.nodes, state.pending, last=last
            )
        live = self._live.get(session_id)
        aggregate = (
            live.aggregate if live is not None else self.load_aggregate(session_id)
        )
        if aggregate.corruption is not None:
            raise aggregate.corruption
        return self.history.messages(aggregate, last=last)

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


def _check_handle(handle: object, operation: str) -> None:
    if not isinstance(handle, SessionHandle):
        msg = f"{operation} needs a SessionHandle, got {type(handle).__name__}"
        raise SessionError(msg)


def _check_count(name: str, value: object, *, minimum: int) -> None:
    """A read argument: ``None`` or an integer of at least ``minimum``."""
    if value is not None and (type(value) is not int or value < minimum):
        msg = f"{name} must be an integer of at least {minimum}, or None"
        raise SessionError(msg)


def _refusing_legacy(events: Iterable[Any]) -> Iterator[Any]:
    """Pass events through, refusing legacy shapes.

    See docs/persistence.md#format-versions-and-legacy-shapes.
    """
    for event in events:
        if isinstance(event, SessionEvent):
            envelope = event.envelope
            check_legacy(
                event.originator_id, envelope["type"], envelope["data"], event.seq
            )
            check_reserved_type(event.originator_id, envelope["type"], event.seq)
        yield event


__all__ = ["SessionHandle", "Sessions", "check_format_version"]
