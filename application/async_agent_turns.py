"""The turn writer for asyncio loops over :class:`AsyncSessions` (docs/agents.md).

The writing methods are :mod:`agentlog.application.agent_turns`'s own (they do no
I/O); only entering and leaving a unit of work awaits the store.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any

from agentlog.application.agent_turns import StepBase, TurnBase, exit_args
from agentlog.domain.errors import AgentlogError, SessionError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from contextlib import AbstractAsyncContextManager
    from types import TracebackType

    from agentlog.application.async_sessions import AsyncSessions
    from agentlog.application.handle import SessionHandle

logger = logging.getLogger(__name__)


class AsyncStep(StepBase):
    """A step of an :class:`AsyncTurn`: ``async with turn.step() as step:``."""

    turn: AsyncTurn

    async def __aenter__(self) -> AsyncStep:
        self._unit = self.turn._unit()
        handle = await self._unit.__aenter__()
        try:
            self.turn._opening(self)
            self._begin(handle)
        except BaseException as error:
            self._leave(failed=True)
            await self._unit.__aexit__(type(error), error, error.__traceback__)
            raise
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        failed = True
        try:
            if error is not None:
                await self._unit.__aexit__(kind, error, traceback)
                return
            try:
                self._finish()
            except BaseException as failure:
                await self._unit.__aexit__(
                    type(failure), failure, failure.__traceback__
                )
                raise
            await self._unit.__aexit__(None, None, None)
            failed = False
        finally:
            self._leave(failed=failed)


@contextlib.asynccontextmanager
async def _on_handle(
    app: AsyncSessions, handle: SessionHandle
) -> AsyncIterator[SessionHandle]:
    """A unit on a ``get_session`` handle: no lock, no flush (the loop flushes),
    but a block that raises still drops what it appended (on the pool: dropping
    may read the store), even when the task is cancelled."""
    mark = len(handle.aggregate.pending_events)
    try:
        yield handle
    except BaseException:
        await app.finish(app.app.roll_back, handle, mark)
        raise


class AsyncTurn(TurnBase):
    """:class:`Turn` for asyncio loops over :class:`AsyncSessions`."""

    _outer: AbstractAsyncContextManager[SessionHandle]

    def __init__(
        self,
        app: AsyncSessions,
        session_id: str,
        *,
        handle: SessionHandle | None = None,
        **options: Any,
    ) -> None:
        super().__init__(session_id, **options)
        self.app = app
        self.handle = handle
        """A ``get_session`` handle to write on directly (no command; the loop
        flushes), or ``None``: each unit is an :meth:`AsyncSessions.command`."""

    def _unit(
        self, *, create: bool = False
    ) -> AbstractAsyncContextManager[SessionHandle]:
        if self.handle is not None:
            return _on_handle(self.app, self.handle)
        if create:
            return self.app.command(
                self.session_id, create=True, cwd=self._cwd, owner=self._owner
            )
        return self.app.command(self.session_id)

    def step(self) -> AsyncStep:
        """A new step: use it as ``async with turn.step() as step:``."""
        return AsyncStep(self)

    async def open(self, *, join: bool = False) -> AsyncTurn:
        """Write the turn's start (what entering its ``async with`` block does).

        ``join`` continues the session's open turn instead, if it has one.
        """
        if self._state != "new":
            raise SessionError(self._reopened())
        unit = self._unit(create=self._create)
        handle = await unit.__aenter__()
        try:
            self._start(handle, join=join)
        except BaseException as error:
            await unit.__aexit__(type(error), error, error.__traceback__)
            raise
        if self.unit == "turn":
            self._outer, self._held = unit, handle
        else:
            await unit.__aexit__(None, None, None)
        self._state = "open"
        return self

    async def close(self, error: BaseException | None = None) -> None:
        """Write the turn's end (what leaving its ``async with`` block does)."""
        if self._state not in ("open", "ending"):
            return
        self._state = "closed"
        if self.unit == "turn":
            outer, handle, self._held = self._outer, self._held, None
            if error is not None or handle is None:
                await outer.__aexit__(*exit_args(error))
                return
            try:
                self._end(handle, None)
            except BaseException as failure:
                await outer.__aexit__(type(failure), failure, failure.__traceback__)
                raise
            await outer.__aexit__(None, None, None)
            return
        try:
            async with self._unit() as handle:
                self._end(handle, error)
        except AgentlogError:
            if error is None:
                raise
            logger.warning(
                "turn %s of session %r: its end could not be written",
                self.number,
                self.session_id,
                exc_info=True,
            )

    async def __aenter__(self) -> AsyncTurn:
        return await self.open()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close(error)
