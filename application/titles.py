"""The fallback title producer: a session is titled after its first real prompt.

persistence-query §2.4: after an eligible human prompt, if the session has no title
yet, append ``session/title`` with the fallback of the first eligible prompt. Titles
are ordinary log events, so they round-trip through every backend and forks inherit
them. A model-backed provider is not part of this build.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from domain.title import (
    TITLE_EVENT,
    TitleConfig,
    TitleSnapshot,
    fold_session_title,
    is_eligible_message,
    plan_fallback_title,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from application.handle import SessionHandle
    from application.sessions import Sessions
    from domain.json import Envelope


class FallbackTitles:
    """Watches appends and writes the fallback title once per session."""

    def __init__(self, app: Sessions, config: TitleConfig) -> None:
        self.app = app
        self.config = config
        self._titled: set[str] = set()
        self._unsubscribe: Callable[[], None] = app.subscribe(event=self._observe)

    def close(self) -> None:
        """Stop watching appends."""
        self._unsubscribe()

    def _observe(self, handle: SessionHandle, event: Envelope) -> None:
        if event["type"] == TITLE_EVENT:
            self._titled.add(handle.id)
        elif is_eligible_message(event) and handle.id not in self._titled:
            self.refresh(handle.id)

    def refresh(self, session_id: str) -> TitleSnapshot | None:
        """Ensure the fallback title now; returns the session's current title.

        Does nothing when any title exists (later prompts never replace it). The
        title rides an open turn, or gets a zero-step turn of its own.
        """
        handle = self.app.live_session(session_id) or self.app.get_session(session_id)
        events = self.app.read_events(session_id)
        data: dict[str, Any] | None = plan_fallback_title(events, self.config)
        if data is not None:
            self.app.append_out_of_band(handle, TITLE_EVENT, data)
            events = self.app.read_events(session_id)
        title = fold_session_title(events)
        if title is not None:
            self._titled.add(session_id)
        return title
