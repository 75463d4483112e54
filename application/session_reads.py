"""Reads of one session by id: stored or live, events, header, messages.

Reads return committed state (docs/service.md#isolation): a live handle is read
only when no other owner's command holds it (its pending events are then this
caller's own unit of work, or a single-writer loop's write-behind buffer) and,
with freshness checks on, when the store has not moved past it (another process
wrote). Otherwise the store is read. Every call returns fresh copies; reading
never writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from agentlog.application.as_of import surface_as_of
from agentlog.application.locks import current_owner
from agentlog.application.store_errors import store_errors
from agentlog.domain.errors import SessionError, SessionNotFoundError
from agentlog.domain.events import Erased, SessionEvent
from agentlog.domain.header import check_format_version, is_storable_text
from agentlog.domain.json import loads
from agentlog.domain.session import check_known_session_id, check_session_id

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentlog.application.handle import SessionHandle
    from agentlog.application.sessions import Sessions
    from agentlog.domain.json import Envelope
    from agentlog.domain.session import Session

T = TypeVar("T")


class SessionReads:
    """The per-session reads of one ``Sessions`` (its façade documents each)."""

    def __init__(self, app: Sessions) -> None:
        self.app = app

    def visible(self, session_id: str, *, fresh: bool = True) -> SessionHandle | None:
        """The live handle whose state this caller may read; ``None``: read the store.

        ``None`` when the session has no usable live handle, when another owner's
        command holds it (its pending events are not committed), or — ``fresh``
        and the application's freshness check on — when the handle holds nothing
        pending and the store's version differs (another process wrote).
        """
        app = self.app
        handle = app.live.get(session_id)
        if handle is None or handle.stale or not self.readable(handle):
            return None
        if (
            fresh
            and app.freshness_check
            and not handle.aggregate.pending_events
            and self.stored_version(session_id) != handle.aggregate.version
        ):
            return None
        return handle

    def readable(self, handle: SessionHandle) -> bool:
        """Whether no other owner's open command holds ``handle``'s session."""
        holder = self.app.locks.owner_of(handle.id)
        return holder is None or holder == current_owner()

    def stored_version(self, session_id: str) -> int:
        """The version of the session's last stored row (0: none); one indexed read."""
        with store_errors():
            rows = self.app.recorder.select_events(session_id, desc=True, limit=1)
        return rows[0].originator_version if rows else 0

    def _consistent(
        self,
        session_id: str,
        live: Callable[[SessionHandle], T],
        stored: Callable[[], T],
    ) -> T:
        """``live(handle)`` if the handle stays readable throughout, else ``stored()``.

        A command that takes the handle while it is being read (another thread)
        may add or roll back pending events: the read then goes to the store.
        """
        handle = self.visible(session_id)
        if handle is None:
            return stored()
        commands = handle.commands
        try:
            result = live(handle)
        except Exception:
            if handle.commands == commands and self.readable(handle):
                raise
            return stored()
        if handle.commands != commands or not self.readable(handle):
            return stored()
        return result

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
        live = self.visible(session_id, fresh=False)
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

        def stored() -> list[Envelope]:
            events = self._read_stored(session_id, start, None, limit)
            if not events and not self.is_stored(session_id):
                raise SessionNotFoundError(session_id)
            return events

        def live(handle: SessionHandle) -> list[Envelope]:
            pending = [
                event
                for event in handle.aggregate.pending_events
                if isinstance(event, SessionEvent)
            ]
            stored_end = pending[0].seq if pending else handle.seq
            events = []
            if start < stored_end:
                events = self._read_stored(session_id, start, stored_end - 1, limit)
            for event in pending:
                if limit is not None and len(events) >= limit:
                    break
                if event.seq >= start:
                    events.append(loads(event.encoded))
            return events

        return self._consistent(session_id, live, stored)

    def _read_stored(
        self, session_id: str, start: int, last: int | None, limit: int | None
    ) -> list[Envelope]:
        with store_errors():
            return self.app.stored_log.events(session_id, start, last, limit)

    def messages(
        self,
        session_id: str,
        *,
        last: int | None = None,
        at: int | None = None,
        shared: bool = False,
    ) -> list[dict[str, Any]]:
        """``Sessions.messages``; ``shared``: the cached messages, not copies (an
        in-library reader that copies what it hands out; see MessageHistory)."""
        check_known_session_id(session_id)
        check_count("last", last, minimum=0)
        check_count("at", at, minimum=0)
        app = self.app
        if at is not None:
            state = surface_as_of(app, session_id, at)
            return app.history.of_nodes(
                session_id, state.nodes, state.pending, last=last, shared=shared
            )

        def of(
            aggregate: Session, stored: dict[int, Envelope] | None = None
        ) -> list[dict[str, Any]]:
            if aggregate.corruption is not None:
                raise aggregate.corruption
            return app.history.messages(
                aggregate, last=last, shared=shared, stored=stored
            )

        def of_stored() -> list[dict[str, Any]]:
            # The tail the load reads (a session shorter than the snapshot
            # interval: all of it) gives its messages without a second read.
            tail: dict[int, Envelope] = {}
            return of(app.loader.load_aggregate(session_id, tail=tail), tail)

        return self._consistent(
            session_id, lambda handle: of(handle.aggregate), of_stored
        )


def check_count(name: str, value: object, *, minimum: int) -> None:
    """A read argument: ``None`` or an integer of at least ``minimum``."""
    if value is not None and (type(value) is not int or value < minimum):
        msg = f"{name} must be an integer of at least {minimum}, or None"
        raise SessionError(msg)
