"""Reads of one session by id: stored or live, events, header, messages.

A live session's unflushed events are part of what these return (the handle's
pending events come after the stored ones). Every call returns fresh copies;
reading never writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentlog.application.as_of import surface_as_of
from agentlog.application.store_errors import store_errors
from agentlog.domain.errors import SessionError, SessionNotFoundError
from agentlog.domain.events import Erased, SessionEvent
from agentlog.domain.header import check_format_version, is_storable_text
from agentlog.domain.json import loads
from agentlog.domain.session import check_known_session_id, check_session_id

if TYPE_CHECKING:
    from agentlog.application.sessions import Sessions
    from agentlog.domain.json import Envelope


class SessionReads:
    """The per-session reads of one ``Sessions`` (its façade documents each)."""

    def __init__(self, app: Sessions) -> None:
        self.app = app

    def is_stored(self, session_id: str) -> bool:
        check_session_id(session_id)
        if not is_storable_text(session_id):
            return False
        with store_errors():
            return bool(self.app.recorder.select_events(session_id, lte=1, limit=1))

    def stored_header(self, session_id: str) -> dict[str, Any]:
        check_known_session_id(session_id)
        with store_errors():
            return self.app.stored_log.header(session_id)

    def stored_length(self, session_id: str) -> int:
        with store_errors():
            rows = self.app.recorder.select_events(session_id, desc=True, limit=1)
        if not rows or rows[0].topic == Erased.TOPIC:
            raise SessionNotFoundError(session_id)
        return rows[0].originator_version - 1

    def is_erased(self, session_id: str) -> bool:
        check_session_id(session_id)
        if not is_storable_text(session_id):
            return False
        with store_errors():
            rows = self.app.recorder.select_events(session_id, desc=True, limit=1)
        return bool(rows) and rows[0].topic == Erased.TOPIC

    def header(self, session_id: str) -> dict[str, Any]:
        check_known_session_id(session_id)
        live = self.app.live.get(session_id)
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
        check_known_session_id(session_id)
        check_count("after", after, minimum=-1)
        check_count("limit", limit, minimum=0)
        start = 0 if after is None else after + 1
        live = self.app.live.get(session_id)
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
            return self.app.stored_log.events(session_id, start, last, limit)

    def messages(
        self, session_id: str, *, last: int | None = None, at: int | None = None
    ) -> list[dict[str, Any]]:
        check_known_session_id(session_id)
        check_count("last", last, minimum=0)
        check_count("at", at, minimum=0)
        app = self.app
        if at is not None:
            state = surface_as_of(app, session_id, at)
            return app.history.of_nodes(
                session_id, state.nodes, state.pending, last=last
            )
        live = app.live.get(session_id)
        aggregate = (
            live.aggregate if live is not None else app.load_aggregate(session_id)
        )
        if aggregate.corruption is not None:
            raise aggregate.corruption
        return app.history.messages(aggregate, last=last)


def check_count(name: str, value: object, *, minimum: int) -> None:
    """A read argument: ``None`` or an integer of at least ``minimum``."""
    if value is not None and (type(value) is not int or value < minimum):
        msg = f"{name} must be an integer of at least {minimum}, or None"
        raise SessionError(msg)
