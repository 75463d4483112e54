"""``AsyncSessions`` and ``AsyncSessionQuery``: the same operations for asyncio.

Every call that may touch the store runs on a thread pool (the library's
recorders are synchronous), so the event loop never waits on I/O. Appending
stays a plain method of the handle: it does no I/O. A command's lock is taken
in two steps: an asyncio lock per session (tasks wait on the loop, never on a
pool thread, so waiting tasks cannot starve the pool), then the session's
in-process lock, shared with synchronous callers of the same ``Sessions``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from agentlog.application.handle import SessionHandle
from agentlog.application.locks import acting_as
from agentlog.application.query import SessionQuery
from agentlog.application.sessions import Sessions
from agentlog.domain.errors import (
    SessionBusyError,
    SessionConflictError,
    SessionQueryError,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence

    from agentlog.application.agent_turns import Unit
    from agentlog.application.async_agent_turns import AsyncTurn
    from agentlog.application.erasure import Erasure, RetentionReport
    from agentlog.application.query import SessionSummaryPage
    from agentlog.application.scope import Scope, ScopedSessionQuery
    from agentlog.domain.json import Envelope
    from agentlog.domain.step_output import Content

P = ParamSpec("P")
T = TypeVar("T")

DEFAULT_WORKERS = 8


@dataclass(slots=True)
class _TaskLock:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    owner: object = None
    depth: int = 0
    users: int = 0


class AsyncSessionLocks:
    """Per-session asyncio locks, re-entrant for the task that holds one."""

    def __init__(self) -> None:
        self._entries: dict[str, _TaskLock] = {}

    async def acquire(self, session_id: str, owner: object, timeout: float) -> int:
        entry = self._entries.setdefault(session_id, _TaskLock())
        if entry.owner is owner:
            entry.depth += 1
            return entry.depth
        entry.users += 1
        try:
            await asyncio.wait_for(entry.lock.acquire(), timeout)
        except TimeoutError:
            entry.users -= 1
            self._forget(session_id, entry)
            raise SessionBusyError(session_id, timeout) from None
        except BaseException:
            entry.users -= 1
            self._forget(session_id, entry)
            raise
        entry.owner = owner
        entry.depth = 1
        return 1

    def release(self, session_id: str, owner: object) -> None:
        entry = self._entries[session_id]
        assert entry.owner is owner
        entry.depth -= 1
        if entry.depth == 0:
            entry.owner = None
            entry.users -= 1
            entry.lock.release()
            self._forget(session_id, entry)

    def _forget(self, session_id: str, entry: _TaskLock) -> None:
        if entry.users == 0 and self._entries.get(session_id) is entry:
            del self._entries[session_id]


class AsyncSessions:
    """A :class:`Sessions` for asyncio code: coroutines and ``async with command``.

    Safe from any number of concurrent tasks. Blocking work runs on
    ``executor`` (default: a pool of ``DEFAULT_WORKERS`` threads owned by this
    object and shut down by :meth:`close`).
    """

    def __init__(
        self,
        app: Sessions | None = None,
        *,
        executor: ThreadPoolExecutor | None = None,
        **options: Any,
    ) -> None:
        self.app = app if app is not None else Sessions(**options)
        self._own_executor = executor is None
        self.executor = executor or ThreadPoolExecutor(
            DEFAULT_WORKERS, thread_name_prefix="agentlog"
        )
        self._locks = AsyncSessionLocks()

    async def run(
        self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run a blocking call on the pool and await it."""
        loop = asyncio.get_running_loop()
        call = functools.partial(function, *args, **kwargs)
        # The task's context goes along: a read inside this task's command then
        # sees the command's own pending events (``current_owner``).
        context = contextvars.copy_context()
        return await loop.run_in_executor(self.executor, context.run, call)

    async def finish(
        self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Like :meth:`run`, but a cancelled caller still waits for the call.

        For steps that must not be left half-done (taking a lock, flushing,
        rolling back): the work completes, then the cancellation propagates.
        """
        task = asyncio.ensure_future(self.run(function, *args, **kwargs))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            await task
            raise

    # ----------------------------------------------------------- unit of work

    @contextlib.asynccontextmanager
    async def command(
        self,
        session_id: str,
        *,
        create: bool = False,
        cwd: str | None = None,
        owner: str | None = None,
        timeout: float | None = None,
    ) -> AsyncIterator[SessionHandle]:
        """:meth:`Sessions.command` for tasks: re-entrant per task, same contract."""
        app = self.app
        holder = asyncio.current_task()
        wait = app.command_timeout if timeout is None else timeout
        depth = await self._locks.acquire(session_id, holder, wait)
        acting = acting_as(holder)
        acting.__enter__()
        try:
            if depth == 1:
                await self._hold(session_id, holder, wait)
            try:
                handle = await self.run(
                    app.unit_of_work.handle_for_command,
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
                        await self.finish(app.saver.flush_command, handle)
                except BaseException:
                    # A cancelled task still leaves nothing half-written.
                    await self.finish(
                        app.unit_of_work.roll_back, handle, mark, created=depth == 1
                    )
                    raise
            finally:
                if depth == 1:
                    app.locks.release(session_id, holder)
        finally:
            acting.__exit__(None, None, None)
            self._locks.release(session_id, holder)

    async def _hold(self, session_id: str, owner: object, wait: float) -> None:
        """Take the in-process lock (shared with threads) on a pool thread."""
        task = asyncio.ensure_future(
            self.run(self.app.locks.acquire, session_id, owner, wait)
        )
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            # The pool thread may still get the lock: give it back when it does.
            def give_back(done: asyncio.Future[int]) -> None:
                if not done.cancelled() and done.exception() is None:
                    self.app.locks.release(session_id, owner)

            task.add_done_callback(give_back)
            raise

    async def run_with_retry(
        self,
        session_id: str,
        command: Callable[[SessionHandle], Awaitable[T]],
        *,
        attempts: int = 100,
        wait: float = 0.01,
        create: bool = False,
        cwd: str | None = None,
        owner: str | None = None,
    ) -> T:
        """Run ``command`` as a unit of work; re-run it whole after a conflict
        (``create``, ``cwd``, ``owner``: as for :meth:`command`)."""
        for attempt in range(attempts):
            try:
                async with self.command(
                    session_id, create=create, cwd=cwd, owner=owner
                ) as handle:
                    return await command(handle)
            except SessionConflictError:
                if attempt == attempts - 1:
                    raise
                await asyncio.sleep(wait * (attempt + 1))
        raise AssertionError("unreachable")  # pragma: no cover

    # ------------------------------------------------------- the operations

    async def create_session(self, *args: Any, **kwargs: Any) -> SessionHandle:
        return await self.run(self.app.create_session, *args, **kwargs)

    async def get_session(self, session_id: str) -> SessionHandle:
        return await self.run(self.app.get_session, session_id)

    async def flush(self, handle: SessionHandle | None = None) -> None:
        await self.run(self.app.flush, handle)

    async def discard(self, handle: SessionHandle) -> int:
        return await self.run(self.app.discard, handle)

    async def fork(
        self,
        source: str | SessionHandle,
        boundary: object = None,
        child_session_id: str | None = None,
    ) -> SessionHandle:
        return await self.run(self.app.fork, source, boundary, child_session_id)

    async def repair(self, session_id: str) -> list[Envelope]:
        return await self.run(self.app.repair, session_id)

    async def append_out_of_band(
        self, handle: SessionHandle, event_type: str, data: Any
    ) -> Envelope:
        return await self.run(self.app.append_out_of_band, handle, event_type, data)

    async def erase(
        self, session_id: str, *, reason: str, descendants: bool = False
    ) -> list[Erasure]:
        """:meth:`Sessions.erase` on the pool (it waits for a command holding
        the session in this process, as a synchronous erase does)."""
        return await self.run(
            self.app.erase, session_id, reason=reason, descendants=descendants
        )

    async def erasures(self) -> list[Erasure]:
        return await self.run(self.app.erasures)

    async def erase_older_than(
        self, cutoff: int, *, reason: str, dry_run: bool = False
    ) -> RetentionReport:
        return await self.run(
            self.app.erase_older_than, cutoff, reason=reason, dry_run=dry_run
        )

    async def is_stored(self, session_id: str) -> bool:
        return await self.run(self.app.is_stored, session_id)

    async def header(self, session_id: str) -> dict[str, Any]:
        return await self.run(self.app.header, session_id)

    async def read_events(
        self, session_id: str, after: int | None = None, limit: int | None = None
    ) -> list[Envelope]:
        return await self.run(self.app.read_events, session_id, after, limit)

    async def messages(
        self, session_id: str, *, last: int | None = None, at: int | None = None
    ) -> list[dict[str, Any]]:
        return await self.run(self.app.messages, session_id, last=last, at=at)

    async def close(self, handle: SessionHandle | None = None) -> None:
        """Close one handle, or flush everything, close the store and the pool."""
        await self.run(self.app.close, handle)
        if handle is None and self._own_executor:
            self.executor.shutdown(wait=False)

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
    ) -> AsyncTurn:
        """:meth:`Sessions.turn` for tasks: ``async with app.turn(id) as t:``.

        Given a ``get_session`` handle instead of an id, it writes on that handle
        and the loop flushes (``await app.flush(handle)``).
        """
        from agentlog.application.async_agent_turns import AsyncTurn

        handle = session if isinstance(session, SessionHandle) else None
        return AsyncTurn(
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

    def query(self, **options: Any) -> AsyncSessionQuery:
        """The read side, as coroutines, on the same pool."""
        return AsyncSessionQuery(SessionQuery(self.app, **options), self)


class AsyncSessionQuery:
    """:class:`SessionQuery` as coroutines (each read runs on the pool).

    ``scoped`` and ``for_caller`` give the same coroutines inside a scope
    (docs/scope.md); a scoped one has no way back to the unscoped reads.
    """

    def __init__(
        self, query: SessionQuery | ScopedSessionQuery, sessions: AsyncSessions
    ) -> None:
        self.query = query
        self._sessions = sessions
        self._run = sessions.run

    def _unscoped(self) -> SessionQuery:
        if not isinstance(self.query, SessionQuery):
            msg = "this query is scoped already; scope the unscoped query instead"
            raise SessionQueryError.invalid_scope(msg)
        return self.query

    def scoped(self, scope: Scope) -> AsyncSessionQuery:
        """:meth:`SessionQuery.scoped`, as coroutines."""
        return AsyncSessionQuery(self._unscoped().scoped(scope), self._sessions)

    async def for_caller(self, caller_session_id: str) -> AsyncSessionQuery:
        """:meth:`SessionQuery.for_caller` (it reads the caller's header)."""
        query = await self._run(self._unscoped().for_caller, caller_session_id)
        return AsyncSessionQuery(query, self._sessions)

    async def list_sessions(self) -> list[Any]:
        return await self._run(self.query.list_sessions)

    async def list_summaries(self, *args: Any, **kwargs: Any) -> SessionSummaryPage:
        return await self._run(self.query.list_summaries, *args, **kwargs)

    async def read_title(self, session_id: str) -> Any:
        return await self._run(self.query.read_title, session_id)

    async def list_events(self, session_id: str) -> Sequence[Any]:
        return await self._run(self.query.list_events, session_id)

    async def read_surface(self, session_id: str, *, at: object = None) -> Any:
        return await self._run(self.query.read_surface, session_id, at=at)

    async def read_messages(self, session_id: str, *, at: object = None) -> Any:
        return await self._run(self.query.read_messages, session_id, at=at)

    async def read_event(self, session_id: str, seq: object, **window: Any) -> Any:
        return await self._run(self.query.read_event, session_id, seq, **window)

    async def trace_event(self, session_id: str, seq: object) -> Any:
        return await self._run(self.query.trace_event, session_id, seq)

    async def trace_session(self, session_id: str) -> Any:
        return await self._run(self.query.trace_session, session_id)

    async def filter_sessions(self, session_filter: object = None) -> list[Any]:
        return await self._run(self.query.filter_sessions, session_filter)

    async def filter_events(
        self, session_id: str, event_filter: object = None
    ) -> list[Any]:
        return await self._run(self.query.filter_events, session_id, event_filter)

    async def search_sessions(self, query: object, **options: Any) -> Any:
        return await self._run(self.query.search_sessions, query, **options)

    async def search_events(
        self, session_id: str, query: object, **options: Any
    ) -> Any:
        return await self._run(self.query.search_events, session_id, query, **options)
