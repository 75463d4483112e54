"""Raw eventsourcing: the same envelopes as plain events on the same SQLite recorder.

A str-id aggregate with one ``Recorded`` event per log entry carrying the
envelope dict, the library's default JSON transcoder, no snapshots and no
validation: the framework's own cost, which agentlog's W1 target is a ratio of.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import TYPE_CHECKING, Any, ClassVar

from eventsourcing.application import Application
from eventsourcing.domain import (
    BaseAggregate,
    CanInitAggregate,
    CanMutateAggregate,
    MetaDomainEvent,
)

from .base import (
    BATCH_GROUPS,
    CWD,
    BenchSystem,
    Flush,
    SessionRef,
    derive_messages,
    now_ms,
    tail_messages,
)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from .workload import Conversation, Group, Intent


class RawEvent(CanMutateAggregate[str], metaclass=MetaDomainEvent):
    """Frozen dataclass event with a str originator id (DomainEvent is UUID-only)."""

    originator_id: str
    originator_version: int
    timestamp: datetime


class RawSession(BaseAggregate[str]):
    """Decision state is only the next seq; the log is the events."""

    class Event(RawEvent):
        """Base event of the raw session."""

    class Created(Event, CanInitAggregate[str]):
        """Carries the session header, like agentlog's created event."""

        originator_topic: str
        header: dict[str, Any]

    class Recorded(Event):
        """One log entry: the envelope, stored as given."""

        envelope: dict[str, Any]

        def apply(self, aggregate: Any) -> None:
            """Advance the next seq."""
            aggregate.seq = self.envelope["seq"] + 1

    def __init__(self, header: dict[str, Any]) -> None:
        self.header = header
        self.seq = 0

    def record(self, intent: Intent) -> None:
        """Trigger the event, no checks."""
        self.trigger_event(self.Recorded, envelope=intent.envelope(now_ms()))


class RawSessions(Application[str]):
    """Plain application over the SQLite recorder."""


class RawEventsourcingSystem(BenchSystem):
    """The framework floor: same payloads, no agentlog."""

    name: ClassVar[str] = "raw_eventsourcing"
    label: ClassVar[str] = "raw eventsourcing"
    features: ClassVar[frozenset[str]] = frozenset(
        {"w1", "w2a", "w2b", "w4", "w5", "w6"}
    )
    _app: RawSessions | None = None

    @classmethod
    def versions(cls) -> dict[str, str]:
        """The library version."""
        return {"eventsourcing": version("eventsourcing")}

    def _application(self) -> RawSessions:
        if self._app is None:
            self._app = RawSessions(
                env={
                    "PERSISTENCE_MODULE": "eventsourcing.sqlite",
                    "SQLITE_DBNAME": str(self.db_path),
                    "ORIGINATOR_ID_TYPE": "text",
                }
            )
        return self._app

    @staticmethod
    def _create(session_id: str, **extra: Any) -> RawSession:
        header = {
            "type": "session",
            "version": 0,
            "id": session_id,
            "createdAt": now_ms(),
            "cwd": CWD,
            **extra,
        }
        return RawSession._create(RawSession.Created, id=session_id, header=header)

    def write(self, conversation: Conversation, flush: Flush) -> dict[str, Any]:
        """Trigger and save per event, per step group or per batch of groups."""
        app = self._application()
        session = self._create(conversation.session_id)
        step = 1 if flush != "batch" else BATCH_GROUPS
        groups = conversation.groups
        for k, group in enumerate(groups):
            for intent in group:
                session.record(intent)
                if flush == "event":
                    app.save(session)
            if flush != "event" and ((k + 1) % step == 0 or k + 1 == len(groups)):
                app.save(session)
        return {}

    def _envelopes(
        self, session_id: str, gt: int, lte: int | None = None
    ) -> list[dict[str, Any]]:
        events = self._application().events.get(session_id, gt=gt, lte=lte)
        return [event.envelope for event in events]  # type: ignore[attr-defined]

    def read_all(self, ref: SessionRef) -> Sequence[Any]:
        """Decode every event through the mapper, then fold."""
        return derive_messages(self._envelopes(ref.session_id, 1))

    def read_tail(self, ref: SessionRef) -> Sequence[Any]:
        """Events after the window start."""
        return tail_messages(self._envelopes(ref.session_id, ref.tail_after + 2))

    def fork_read(self, ref: SessionRef, child_id: str) -> Sequence[Any]:
        """Copy the envelopes into a new aggregate, save, read it back."""
        app = self._application()
        boundary = ref.fork_boundary
        envelopes = self._envelopes(ref.session_id, 1, boundary + 2)
        if envelopes[-1]["type"] != "turn/end":
            msg = f"fork boundary {boundary} must be turn/end"
            raise ValueError(msg)
        child = self._create(
            child_id, parentSession=ref.session_id, seedLength=boundary + 1
        )
        for envelope in envelopes:
            child.trigger_event(child.Recorded, envelope=envelope)
        app.save(child)
        return derive_messages(self._envelopes(child_id, 1))

    def append_group(self, ref: SessionRef, group: Group) -> None:
        """Replay the whole aggregate (no snapshots), append, save."""
        app = self._application()
        session: RawSession = app.repository.get(ref.session_id)
        if session.seq != group[0].seq:
            msg = f"stored next seq {session.seq}, step starts at {group[0].seq}"
            raise ValueError(msg)
        for intent in group:
            session.record(intent)
        app.save(session)

    def close(self) -> None:
        """Close the recorder's connection pool."""
        if self._app is not None:
            self._app.close()
            self._app = None


System = RawEventsourcingSystem
