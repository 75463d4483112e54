"""The unit of work: one request holds a session, and stores all or nothing.

:meth:`UnitOfWork.command` takes the session's in-process lock
(:class:`~agentlog.application.locks.SessionLocks`), gives the block a handle that
starts from the stored state, flushes on success and rolls back on any error;
:meth:`UnitOfWork.run_with_retry` re-runs a whole command after a conflict.
``AsyncSessions`` shares the same steps (:meth:`handle_for_command`,
:meth:`roll_back`) around its own task locks. :meth:`UnitOfWork.run_optimistic`
skips the read of the stored version before the block and relies on the flush's
version check instead, for a block that is safe to run again.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any, TypeVar

from eventsourcing.utils import retry

from agentlog.application.locks import thread_owner
from agentlog.domain.errors import (
    SessionAlreadyExistsError,
    SessionConflictError,
    SessionError,
)
from agentlog.domain.session import (
    Session,
    SessionCreated,
    check_known_session_id,
    check_session_id,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from agentlog.application.handle import SessionHandle
    from agentlog.application.sessions import Sessions

T = TypeVar("T")
logger = logging.getLogger(__name__)


class UnitOfWork:
    """Commands over the sessions of one ``Sessions``: lock, work, flush or undo."""

    def __init__(self, app: Sessions) -> None:
        self.app = app

    @contextlib.contextmanager
    def command(
        self,
        session_id: str,
        *,
        create: bool = False,
        cwd: str | None = None,
        owner: str | None = None,
        timeout: float | None = None,
        fresh: bool = True,
    ) -> Iterator[SessionHandle]:
        """Hold a session for one request (see ``Sessions.command``).

        ``fresh=False`` starts on a live handle without reading the store's
        version first (see :meth:`run_optimistic`, its one caller).
        """
        if create:
            check_session_id(session_id)
        else:
            check_known_session_id(session_id)
        app = self.app
        holder = thread_owner()
        wait = app.command_timeout if timeout is None else timeout
        with self.holding(session_id, holder, wait) as depth:
            handle = self.handle_for_command(
                session_id,
                outermost=depth == 1,
                create=create,
                cwd=cwd,
                owner=owner,
                fresh=fresh,
            )
            mark = len(handle.aggregate.pending_events)
            try:
                yield handle
                if depth == 1:
                    app.saver.flush_command(handle)
            except BaseException:
                self.roll_back(handle, mark, created=depth == 1)
                raise

    @contextlib.contextmanager
    def holding(self, session_id: str, owner: Any, timeout: float) -> Iterator[int]:
        """Hold the session's in-process lock for ``owner``; yields the depth."""
        locks = self.app.locks
        depth = locks.acquire(session_id, owner, timeout)
        try:
            yield depth
        finally:
            locks.release(session_id, owner)

    def handle_for_command(
        self,
        session_id: str,
        *,
        outermost: bool,
        create: bool,
        cwd: str | None,
        owner: str | None,
        fresh: bool = True,
    ) -> SessionHandle:
        """The handle a command works on, starting from the stored state
        (``fresh=False``: from the live handle's, unchecked).

        Called with the session's lock held (by a thread or a task).
        """
        app = self.app
        handle = self._current(session_id, outermost=outermost, fresh=fresh)
        if handle is None and create and not app.is_stored(session_id):
            try:
                handle = app.create_session(cwd=cwd, session_id=session_id, owner=owner)
            except SessionAlreadyExistsError:
                # Another process stored it between the two checks: work on theirs,
                # as if this command had come second.
                logger.info(
                    "session %r was created concurrently; loading it", session_id
                )
        if handle is None:
            handle = app.get_session(session_id)
        handle.commands += 1
        return handle

    def _current(
        self, session_id: str, *, outermost: bool, fresh: bool = True
    ) -> SessionHandle | None:
        """The live handle if it is usable as the command's start, else ``None``.

        Work appended outside any command (a ``get_session`` loop in this
        process) is saved first, so the block starts from stored state. A handle
        the store has moved past (another process wrote) is dropped, so the
        command loads the session again instead of working on an old state.
        """
        app = self.app
        handle = app.live.get(session_id)
        if handle is None or handle.stale:
            return None
        if not outermost:
            return app.get_session(session_id)
        if handle.unflushed:
            app.saver.flush(handle)
        if (
            fresh
            and app.freshness_check
            and not handle.aggregate.pending_events
            and app.reads.stored_version(session_id) != handle.aggregate.version
        ):
            logger.info(
                "session %r moved on in the store; loading it again", session_id
            )
            app.live.forget(handle)
            return None
        return app.get_session(session_id)

    def roll_back(
        self, handle: SessionHandle, mark: int, *, created: bool = False
    ) -> None:
        """Drop the handle's pending events after the first ``mark``.

        The aggregate is rebuilt from the store plus the kept events (the events
        already folded into it cannot be unfolded). If that read fails, the handle
        is closed and the next command reads the session again. A session the
        failed outermost command ``created`` (never stored) is dropped whole.
        """
        live = self.app.live
        pending = handle.aggregate.pending_events
        if created and pending and isinstance(pending[0], SessionCreated):
            logger.info(
                "dropping session %r: the command that created it failed", handle.id
            )
            live.forget(handle)
            return
        dropped = len(pending) - mark
        if dropped <= 0 and not handle.stale:
            return
        logger.info(
            "discarding %d event(s) of a failed command on session %r",
            max(dropped, 0),
            handle.id,
        )
        if handle.stale:
            live.forget(handle)
            return
        try:
            rebuilt = self.rebuilt(handle.id, list(pending[:mark]))
        except Exception:
            logger.warning(
                "could not rebuild session %r after a failed command; its handle "
                "is closed and the next command reads it again",
                handle.id,
                exc_info=True,
            )
            live.forget(handle)
            return
        handle.replace_aggregate(rebuilt)
        live.saved(handle)

    def rebuilt(self, session_id: str, keep: list[Any]) -> Session:
        """The stored session (or a new one) with the ``keep`` events re-applied."""
        app = self.app
        aggregate: Session
        if keep and isinstance(keep[0], SessionCreated):
            aggregate = Session.from_created(keep[0])
            rest = keep[1:]
        else:
            aggregate = app.load_aggregate(session_id)
            rest = keep
        for event in rest:
            if event.originator_version != aggregate.version + 1:
                raise SessionConflictError(session_id, aggregate.seq)
            aggregate.apply_envelope(event.envelope)
            aggregate.version = event.originator_version
        aggregate.pending_events.extend(keep)
        aggregate.invariants = app.invariants
        aggregate.clock = app.clock
        return aggregate

    def run_optimistic(
        self,
        session_id: str,
        command: Callable[[SessionHandle], T],
        *,
        create: bool = False,
        cwd: str | None = None,
        owner: str | None = None,
    ) -> T:
        """Run ``command`` as a unit of work without first reading the stored version.

        The freshness check of :meth:`command` costs a read before every block.
        Here the block runs on the live handle as it is, and the flush's own
        version check (optimistic concurrency on the seq) finds out whether
        another process wrote meanwhile: then, as when the block fails while the
        store has moved past the handle, the session is loaded again and
        ``command`` runs once more as an ordinary (fresh) command. So the block
        never ends up stored on an old state, as with :meth:`command`; it must be
        safe to re-run (it only appends, as the OpenAI Agents session's writes).
        """
        taken: SessionHandle | None = None
        start = 0

        def attempt(handle: SessionHandle) -> T:
            nonlocal taken, start
            if not handle.aggregate.pending_events:  # else new: nothing to miss
                taken, start = handle, handle.aggregate.version
            return command(handle)

        try:
            with self.command(
                session_id, create=create, cwd=cwd, owner=owner, fresh=False
            ) as handle:
                return attempt(handle)
        except SessionConflictError:
            pass
        except Exception:
            if taken is None or not self._moved(session_id, start):
                raise
            # As the freshness check would have: take the session over again.
            self.app.live.forget(taken)
        logger.info("session %r moved on in the store; running again", session_id)
        with self.command(session_id, create=create, cwd=cwd, owner=owner) as handle:
            return command(handle)

    def _moved(self, session_id: str, version: int) -> bool:
        """Whether the store's version of the session is no longer ``version``
        (``False`` when the store cannot tell: the block's error stands)."""
        if not self.app.freshness_check:
            return False
        try:
            return self.app.reads.stored_version(session_id) != version
        except Exception:
            return False

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
        """Run ``command`` as a unit of work; retry on conflict (``Sessions``)."""
        if not callable(command):
            msg = (
                f"run_with_retry needs a callable command, got {type(command).__name__}"
            )
            raise SessionError(msg)

        def attempt() -> T:
            try:
                with self.command(
                    session_id, create=create, cwd=cwd, owner=owner
                ) as handle:
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
