"""Per-session locks: one command at a time per session within a process.

A lock is re-entrant for its *owner*: a thread for synchronous commands, a task for
:class:`~agentlog.application.async_sessions.AsyncSessions` (whose blocking work
runs on pool threads, so a thread-bound ``RLock`` would not do). Entries exist only
while held or awaited, so the table never grows with the number of sessions.
"""

from __future__ import annotations

import contextlib
import threading
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentlog.domain.errors import SessionBusyError

if TYPE_CHECKING:
    from collections.abc import Hashable, Iterator

DEFAULT_COMMAND_TIMEOUT = 30.0


@dataclass(slots=True)
class _Entry:
    owner: Hashable | None = None
    depth: int = 0
    waiters: int = 0
    released: threading.Condition = field(default_factory=threading.Condition)


class SessionLocks:
    """Re-entrant per-session locks with a timeout that raises ``SessionBusyError``."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._entries: dict[str, _Entry] = {}

    def acquire(self, session_id: str, owner: Hashable, timeout: float) -> int:
        """Hold the session for ``owner``; returns the new depth (1 = outermost)."""
        deadline = time.monotonic() + timeout
        with self._mutex:
            entry = self._entries.setdefault(session_id, _Entry())
            entry.waiters += 1
        try:
            with entry.released:
                while entry.owner is not None and entry.owner != owner:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise SessionBusyError(session_id, timeout)
                    entry.released.wait(remaining)
                entry.owner = owner
                entry.depth += 1
                return entry.depth
        finally:
            with self._mutex:
                entry.waiters -= 1
                self._forget(session_id, entry)

    def release(self, session_id: str, owner: Hashable) -> None:
        """Undo one ``acquire`` by ``owner``; the last one wakes a waiter."""
        with self._mutex:
            entry = self._entries.get(session_id)
        if entry is None or entry.owner != owner:
            msg = f'session "{session_id}" is not held by this owner'
            raise RuntimeError(msg)
        with entry.released:
            entry.depth -= 1
            if entry.depth == 0:
                entry.owner = None
                entry.released.notify()
        with self._mutex:
            self._forget(session_id, entry)

    def owner_of(self, session_id: str) -> Hashable | None:
        """Who holds the session now, if anyone (a hint: it may change)."""
        with self._mutex:
            entry = self._entries.get(session_id)
            return None if entry is None else entry.owner

    def is_held(self, session_id: str) -> bool:
        """Whether some owner holds the session now (a hint: it may change)."""
        with self._mutex:
            entry = self._entries.get(session_id)
            return entry is not None and entry.owner is not None

    def try_hold(self, session_id: str, owner: Hashable) -> bool:
        """Acquire without waiting; ``False`` if another owner holds the session."""
        try:
            self.acquire(session_id, owner, 0.0)
        except SessionBusyError:
            return False
        return True

    def _forget(self, session_id: str, entry: _Entry) -> None:
        # Called with the mutex held: drop the entry once nobody holds or awaits it.
        # Only if it is still the session's entry: between a release and this
        # call, others may have taken, released and dropped it, and a new entry
        # (held by someone) may stand in its place. Dropping that one would let
        # a second owner in and make its holder's release fail.
        if (
            entry.owner is None
            and entry.waiters == 0
            and self._entries.get(session_id) is entry
        ):
            del self._entries[session_id]


def thread_owner() -> Hashable:
    """The owner token of synchronous callers: the current thread."""
    return ("thread", threading.get_ident())


_acting_owner: ContextVar[Hashable | None] = ContextVar("agentlog_owner", default=None)


def current_owner() -> Hashable:
    """Who is asking: the task an ``AsyncSessions`` command runs in, else the thread.

    Reads use it to tell the caller's own open unit of work (whose pending events
    it sees) from another's (whose it never sees).
    """
    owner = _acting_owner.get()
    return thread_owner() if owner is None else owner


@contextlib.contextmanager
def acting_as(owner: Hashable) -> Iterator[None]:
    """Make ``owner`` the :func:`current_owner` of this context (and its copies)."""
    token = _acting_owner.set(owner)
    try:
        yield
    finally:
        _acting_owner.reset(token)
