"""Observers of creations and appends (docs/events.md#observers-and-lifecycle).

Observers are fire-and-forget for appends: their errors never reach the appender
and never change what is recorded. A failing *creation* observer undoes the
creation (the new handle leaves the live cache).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentlog.application.handle import SessionHandle
    from agentlog.application.live import LiveSessions
    from agentlog.domain.json import Envelope

CreatedObserver = Callable[["SessionHandle"], None]
EventObserver = Callable[["SessionHandle", "Envelope"], None]

# The logger docs/service.md names for observer failures (kept across the split).
logger = logging.getLogger("agentlog.application.sessions")


class Observers:
    """The creation and append observers of one ``Sessions``."""

    def __init__(self, live: LiveSessions) -> None:
        self.live = live
        self._created: list[CreatedObserver] = []
        self._event: list[EventObserver] = []

    def subscribe(
        self,
        *,
        created: CreatedObserver | None = None,
        event: EventObserver | None = None,
    ) -> Callable[[], None]:
        """Observe creations and appends; returns an unsubscribe."""
        if created is not None:
            self._created.append(created)
        if event is not None:
            self._event.append(event)

        def unsubscribe() -> None:
            if created is not None and created in self._created:
                self._created.remove(created)
            if event is not None and event in self._event:
                self._event.remove(event)

        return unsubscribe

    def announce(self, handle: SessionHandle) -> SessionHandle:
        """Tell the creation observers; a failing one undoes the registration."""
        try:
            for observer in list(self._created):
                observer(handle)
        except BaseException:
            self.live.forget(handle)
            raise
        return handle

    def publish(self, handle: SessionHandle, envelope: Envelope) -> None:
        """Tell each append observer, in order; a failing one is logged, skipped."""
        self.live.touched(handle)
        for observer in list(self._event):
            try:
                observer(handle, envelope)
            except Exception:
                logger.exception(
                    "observer %r failed on session %r seq %s (event kept)",
                    observer,
                    handle.id,
                    envelope.get("seq"),
                )
