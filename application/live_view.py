"""What is live in this process, as ``Sessions`` shows it to callers.

The live-session cache itself is :class:`~agentlog.application.live.LiveSessions`;
these are the application's questions about it, including which live handle a
read may use (:meth:`LiveSessionsView.readable_live`, docs/service.md#isolation).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentlog.application.configuration import ConfiguredApplication

if TYPE_CHECKING:
    from agentlog.application.handle import SessionHandle
    from agentlog.application.live import LiveSessions
    from agentlog.application.session_reads import SessionReads


class LiveSessionsView(ConfiguredApplication):
    """The live handles of ``Sessions`` (which sets ``live`` and ``reads``)."""

    live: LiveSessions
    reads: SessionReads

    def live_session(self, session_id: str) -> SessionHandle | None:
        """The open handle of ``session_id`` in this process, if any."""
        if type(session_id) is not str:
            return None
        return self.live.get(session_id)

    def readable_live(
        self, session_id: str, *, fresh: bool = True
    ) -> SessionHandle | None:
        """The live handle a read by this caller may use (committed reads).

        ``None`` when another thread's or task's command holds the session, or
        when the store moved past the handle (``fresh``): read the store then.
        """
        if type(session_id) is not str:
            return None
        return self.reads.visible(session_id, fresh=fresh)

    def live_sessions(self) -> list[SessionHandle]:
        return self.live.handles()

    def is_live(self, session_id: str) -> bool:
        return self.live_session(session_id) is not None

    def unflushed_sessions(self) -> list[SessionHandle]:
        """Live handles with events not yet stored (or never stored at all).

        Every other live handle equals its stored copy, so a listing reads these
        only: its cost does not grow with the number of live handles.
        """
        return self.live.dirty()
