"""The live session handle: what an agent loop holds while it works."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentlog.domain.errors import (
    SessionClosedError,
    SessionError,
    StaleSessionError,
)
from agentlog.domain.events import SessionEvent
from agentlog.domain.json import copy_json, loads
from agentlog.domain.strict_types import check_strict_type

if TYPE_CHECKING:
    from agentlog.application.sessions import Sessions
    from agentlog.domain.json import Envelope
    from agentlog.domain.session import Session
    from agentlog.domain.surface import Surface


class SessionHandle:
    """A live session: appends are recorded in memory and saved by ``flush``.

    A handle is what an agent loop holds while it works. It never does I/O on
    append, and it is not thread-safe: one thread (or task) uses it at a time,
    which :meth:`Sessions.command` guarantees. After a concurrency conflict it is
    *stale*: reload it and re-apply the command. Once closed (by ``close``,
    ``discard`` or eviction of an idle flushed handle) it refuses appends.
    """

    def __init__(self, app: Sessions, aggregate: Session) -> None:
        self._app = app
        self._aggregate = aggregate
        self.stale = False
        self.closed = False
        self.uncertain = False
        """A flush lost its connection: the next one checks what was committed."""
        self.commands = 0
        """How many commands have taken this handle (a read's consistency check)."""

    @property
    def detached(self) -> bool:
        """Closed: no longer the store's live instance (publishes nothing)."""
        return self.closed

    @property
    def id(self) -> str:
        return self._aggregate.id

    @property
    def app(self) -> Sessions:
        """The application this handle belongs to."""
        return self._app

    @property
    def aggregate(self) -> Session:
        """The aggregate behind the handle (its pending events are unflushed)."""
        return self._aggregate

    @property
    def header(self) -> dict[str, Any]:
        return copy_json(self._aggregate.header)  # type: ignore[no-any-return]

    @property
    def seq(self) -> int:
        """The next seq: how many events the log holds, flushed or not."""
        return self._aggregate.seq

    @property
    def surface(self) -> Surface:
        return self._aggregate.surface

    @property
    def events(self) -> list[Envelope]:
        """The whole log, stored and pending, as fresh copies."""
        return self._app.read_events(self.id)

    @property
    def unflushed(self) -> int:
        """How many appended events are not stored yet (cheap: no copies)."""
        return sum(
            isinstance(event, SessionEvent) for event in self._aggregate.pending_events
        )

    def replace_aggregate(self, aggregate: Session) -> None:
        """Swap in a rebuilt aggregate (after a failed command is rolled back)."""
        self._aggregate = aggregate

    @property
    def pending(self) -> list[Envelope]:
        """Copies of the events appended since the last flush."""
        return [
            loads(event.encoded)
            for event in self._aggregate.pending_events
            if isinstance(event, SessionEvent)
        ]

    def append(
        self,
        event_type: str,
        data: Any,
        surface_op: Any = None,
        source_event_seqs: Any = None,
    ) -> Envelope:
        """Validate and record one event in memory; observers see it at once."""
        if self.closed:
            raise SessionClosedError(self.id)
        if self.stale:
            raise StaleSessionError(self.id)
        if self._app.strict_types and type(event_type) is str:
            check_strict_type(event_type)
        envelope = self._aggregate.append(
            event_type, data, surface_op=surface_op, source_event_seqs=source_event_seqs
        )
        self._app.publish_event(self, envelope)
        return envelope

    def messages(self) -> list[dict[str, Any]]:
        return self._app.messages(self.id)

    def __repr__(self) -> str:
        return f"SessionHandle(id={self.id!r}, seq={self.seq})"


def check_handle(handle: object, operation: str) -> None:
    """Refuse anything but a :class:`SessionHandle` (a caller passing an id)."""
    if not isinstance(handle, SessionHandle):
        msg = f"{operation} needs a SessionHandle, got {type(handle).__name__}"
        raise SessionError(msg)
