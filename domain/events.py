"""The session's domain events: one class per declared type, the wire name as ``TOPIC``.

An event carries the log entry exactly as recorded (its *envelope*, the JSON object of
docs/events.md#envelope) and its compact JSON encoding, computed once when the event is
recorded so that saving can never fail on encoding. ``apply`` only applies: it never
validates, so replaying a stored log cannot fail on a rule.
"""

from __future__ import annotations

from datetime import UTC, datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar, Final

from eventsourcing.domain import CanMutateAggregate

from agentlog.domain.json import dumps
from agentlog.domain.topics import ERASED_TOPIC
from agentlog.domain.vocabulary import VOCABULARY

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agentlog.domain.json import Envelope
    from agentlog.domain.session import Session
    from agentlog.domain.vocabulary import EventType


class SessionEvent(CanMutateAggregate[str]):
    """One log entry of a session, at aggregate version ``seq + 2``."""

    TOPIC: ClassVar[str] = ""

    __slots__ = ("_encoded", "envelope", "originator_id", "originator_version")

    def __init__(
        self,
        originator_id: str,
        originator_version: int,
        envelope: Envelope,
        encoded: bytes | None = None,
    ) -> None:
        self.originator_id = originator_id
        self.originator_version = originator_version
        self.envelope = envelope
        self._encoded = encoded

    @property
    def type(self) -> str:
        return str(self.envelope["type"])

    @property
    def seq(self) -> int:
        return self.originator_version - 2

    @property
    def time(self) -> int:
        return int(self.envelope["time"])

    @property
    def timestamp(self) -> datetime:  # type: ignore[override]
        """The log's own time (epoch ms), as the library's timestamp."""
        return datetime.fromtimestamp(self.time / 1000, tz=UTC)

    @property
    def encoded(self) -> bytes:
        """The envelope's compact JSON, the stored state of the event."""
        if self._encoded is None:
            self._encoded = dumps(self.envelope)
        return self._encoded

    @property
    def topic(self) -> str:
        """The stored topic: the wire type (``LogOnly`` events carry their own)."""
        return self.TOPIC or self.type

    def apply(self, aggregate: Session) -> None:
        aggregate.apply_envelope(self.envelope)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, SessionEvent)
            and self.originator_id == other.originator_id
            and self.originator_version == other.originator_version
            and self.envelope == other.envelope
        )

    def __hash__(self) -> int:
        return hash((self.originator_id, self.originator_version))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.envelope!r})"


class LogOnly(SessionEvent):
    """Any type no class is declared for: stored verbatim, never on the surface."""

    TOPIC = ""


class Erased:
    """The tombstone of an erased session: id, time and reason, no content.

    Stored in the session's own stream one version above its last event, after
    every other row of the stream is deleted (docs/erasure.md). It is not a
    session event: no log type names it (``session-erased`` is reserved), it never
    reaches an aggregate, and a stream holding only it is a missing session.
    """

    TOPIC: ClassVar[str] = ERASED_TOPIC

    __slots__ = ("erased_at", "originator_id", "originator_version", "reason")

    def __init__(
        self, originator_id: str, originator_version: int, erased_at: int, reason: str
    ) -> None:
        self.originator_id = originator_id
        self.originator_version = originator_version
        self.erased_at = erased_at
        self.reason = reason

    @property
    def timestamp(self) -> datetime:
        """The erasure's time (epoch ms), as the library's timestamp."""
        return datetime.fromtimestamp(self.erased_at / 1000, tz=UTC)

    @property
    def state(self) -> dict[str, object]:
        """The stored state: the only fields a tombstone has."""
        return {
            "id": self.originator_id,
            "erasedAt": self.erased_at,
            "reason": self.reason,
        }

    @classmethod
    def from_state(cls, version: int, state: Mapping[str, object]) -> Erased:
        erased_at, reason = state["erasedAt"], state["reason"]
        assert type(erased_at) is int
        assert type(reason) is str
        return cls(str(state["id"]), version, erased_at, reason)

    @staticmethod
    def is_state(value: object) -> bool:
        """Tell a tombstone's state from an envelope (exactly its three fields)."""
        return (
            type(value) is dict
            and value.keys() == {"id", "erasedAt", "reason"}
            and type(value["erasedAt"]) is int
            and type(value["reason"]) is str
        )

    def __repr__(self) -> str:
        return (
            f"Erased({self.originator_id!r}, version={self.originator_version}, "
            f"erased_at={self.erased_at})"
        )


def _event_class(declared: EventType) -> type[SessionEvent]:
    """The event class a declaration names: a ``SessionEvent`` whose ``TOPIC`` is
    the wire name (classes are made here so the vocabulary stays the one list)."""
    namespace = {
        "TOPIC": declared.name,
        "__slots__": (),
        "__module__": __name__,
        "__qualname__": declared.event_class,
        "__doc__": f"A ``{declared.name}`` log entry.",
    }
    return type(declared.event_class, (SessionEvent,), namespace)


EVENT_CLASSES: Final[Mapping[str, type[SessionEvent]]] = MappingProxyType(
    {t.name: _event_class(t) for t in VOCABULARY if t.event_class}
)
"""Wire type -> event class, for every declared type."""


def event_class_for(event_type: str) -> type[SessionEvent]:
    """The class recording ``event_type``; never imports anything by name."""
    return EVENT_CLASSES.get(event_type, LogOnly)


def build_event(
    session_id: str, envelope: Envelope, encoded: bytes | None = None
) -> SessionEvent:
    """The event object for an envelope recorded at ``envelope["seq"]``."""
    cls = EVENT_CLASSES.get(envelope["type"], LogOnly)
    return cls(session_id, int(envelope["seq"]) + 2, envelope, encoded)


__all__ = [
    "EVENT_CLASSES",
    "Erased",
    "LogOnly",
    "SessionEvent",
    "build_event",
    "event_class_for",
]
