"""When a live stream looks at the notification log again.

On a store that can tell (PostgreSQL: a ``LISTEN`` on the events' channel,
one connection per server), every stream is woken when any process commits a
write, and otherwise looks only every :data:`LISTENING_SECONDS`. On a store
that cannot (SQLite, memory, PostgreSQL behind a transaction-mode pooler) each
stream looks every :data:`POLL_SECONDS`.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from agentlog.application.ports import backend_of
from agentlog.infrastructure.backends.backend import Backend

if TYPE_CHECKING:
    from agentlog.application.sessions import Sessions
    from agentlog.infrastructure.backends.backend import Closeable

POLL_SECONDS = 0.5
LISTENING_SECONDS = 15.0
"""A listening stream's look without a wake-up (a heartbeat's interval)."""


class LiveSignal:
    """Wakes the live streams of one server.

    A stream takes :meth:`mark` before it reads the log, then waits on that
    mark: a write committed between its read and its wait has set the mark
    already, so it is never missed. The listener starts with the first stream.
    """

    def __init__(self, app: Sessions) -> None:
        self._app = app
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None
        self._listener: Closeable | None = None
        self.every = POLL_SECONDS

    @property
    def listening(self) -> bool:
        """Whether streams are woken by the store rather than by a clock."""
        return self._listener is not None

    def mark(self) -> asyncio.Event:
        """What to wait on after the next read (call from the event loop)."""
        if self._event is None:
            self._loop = asyncio.get_running_loop()
            self._event = asyncio.Event()
            backend = backend_of(self._app.factory)
            # A read-only store hears no writes: a standby neither replays
            # notifications nor lets a session LISTEN; streams poll instead.
            if isinstance(backend, Backend) and not self._app.read_only:
                self._listener = backend.write_listener(
                    self._app.recorder, self._wake_threadsafe
                )
            if self._listener is not None:
                self.every = LISTENING_SECONDS
        return self._event

    async def wait(self, mark: asyncio.Event) -> bool:
        """Wait until a write after ``mark`` (``True``) or :attr:`every` (``False``)."""
        try:
            await asyncio.wait_for(mark.wait(), self.every)
        except TimeoutError:
            return False
        return True

    def _wake_threadsafe(self) -> None:
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed
                loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        if self._event is not None:
            self._event.set()
            self._event = asyncio.Event()

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
