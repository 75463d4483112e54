"""The live-session cache: this process's open handles of one ``Sessions``.

A handle stays live while an agent loop or a command works on it, and after a
flush until it is evicted (least recently used first, beyond ``max_live``). The
cache also knows which live handles hold events not stored yet (*dirty*), so a
listing reads those only. Creation, the unit of work, saving, forking and reads
all go through it; one re-entrant mutex guards both tables.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from agentlog.domain.errors import SessionAlreadyExistsError

if TYPE_CHECKING:
    from agentlog.application.handle import SessionHandle
    from agentlog.application.locks import SessionLocks

logger = logging.getLogger(__name__)


class LiveSessions:
    """Open handles by session id, least recently used first, and the dirty ones.

    A handle with unflushed events, or held by a command (``locks``), is never
    evicted: its work would be lost.
    """

    def __init__(self, locks: SessionLocks, max_live: int) -> None:
        self.locks = locks
        self.max_live = max_live
        self._mutex = threading.RLock()
        self._handles: OrderedDict[str, SessionHandle] = OrderedDict()
        self._dirty: dict[str, SessionHandle] = {}

    def get(self, session_id: str) -> SessionHandle | None:
        """The live handle of ``session_id`` (stale or not), if any."""
        return self._handles.get(session_id)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._handles

    def current(self, session_id: str) -> SessionHandle | None:
        """The usable (not stale) handle, marked as just used; else ``None``."""
        with self._mutex:
            handle = self._handles.get(session_id)
            if handle is not None and not handle.stale:
                self._handles.move_to_end(session_id)
                return handle
        return None

    def handles(self) -> list[SessionHandle]:
        with self._mutex:
            return list(self._handles.values())

    def dirty(self) -> list[SessionHandle]:
        """Live handles with events not yet stored (or never stored at all)."""
        with self._mutex:
            return list(self._dirty.values())

    def refuse(self, session_id: str) -> None:
        """Refuse a new session whose id a usable live handle has."""
        live = self._handles.get(session_id)
        if live is not None and not live.stale:
            msg = f'session "{session_id}" already exists'
            raise SessionAlreadyExistsError(msg)

    def enter(self, handle: SessionHandle, *, new: bool = False) -> SessionHandle:
        """Make ``handle`` the session's live one (the newest one wins)."""
        session_id = handle.id
        with self._mutex:
            if new:
                self.refuse(session_id)
            previous = self._handles.pop(session_id, None)
            if previous is not None and not previous.stale:
                previous.closed = True
            self._handles[session_id] = handle
            if handle.aggregate.pending_events:
                self._dirty[session_id] = handle
            else:
                self._dirty.pop(session_id, None)
            self._evict()
        return handle

    def touched(self, handle: SessionHandle) -> None:
        """An append to ``handle``: it is the most recent and it is dirty."""
        with self._mutex:
            if self._handles.get(handle.id) is handle:
                self._handles.move_to_end(handle.id)
                self._dirty[handle.id] = handle

    def saved(self, handle: SessionHandle, *, evict: bool = False) -> None:
        """``handle``'s pending events were stored: clean unless more are pending."""
        with self._mutex:
            if (
                not handle.aggregate.pending_events
                and self._dirty.get(handle.id) is handle
            ):
                del self._dirty[handle.id]
            if evict:
                self._evict()

    def forget(self, handle: SessionHandle) -> None:
        """Close ``handle`` and drop it from the live tables (if it is there)."""
        handle.closed = True
        with self._mutex:
            if self._handles.get(handle.id) is handle:
                del self._handles[handle.id]
            if self._dirty.get(handle.id) is handle:
                del self._dirty[handle.id]

    def drop(self, session_id: str) -> SessionHandle | None:
        """Remove whatever handle ``session_id`` has; returns it (not closed)."""
        with self._mutex:
            self._dirty.pop(session_id, None)
            return self._handles.pop(session_id, None)

    def close_all(self) -> None:
        """Close every live handle and empty the cache (the application closes)."""
        with self._mutex:
            for live in self._handles.values():
                live.closed = True
            self._handles.clear()
            self._dirty.clear()

    def _evict(self) -> None:
        """Close the least recently used clean, idle handles beyond ``max_live``.

        Called with the mutex held.
        """
        excess = len(self._handles) - self.max_live
        if excess <= 0:
            return
        evicted: list[SessionHandle] = []
        for session_id, handle in self._handles.items():
            if len(evicted) == excess:
                break
            if session_id in self._dirty or self.locks.is_held(session_id):
                continue
            evicted.append(handle)
        for handle in evicted:
            handle.closed = True
            del self._handles[handle.id]
        if evicted:
            logger.debug(
                "evicted %d idle flushed session handle(s) (max_live=%d)",
                len(evicted),
                self.max_live,
            )
