"""The session's domain events: one class per log type, the wire name as ``TOPIC``.

An event carries the log entry exactly as recorded (its *envelope*, the JSON object of
docs/events.md#envelope) and its compact JSON encoding, computed once when the event is
recorded so that saving can never fail on encoding. ``apply`` only applies: it never
validates, so replaying a stored log cannot fail on a rule.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, ClassVar

from eventsourcing.domain import CanMutateAggregate

from agentlog.domain.json import dumps

if TYPE_CHECKING:
    from agentlog.domain.json import Envelope
    from agentlog.domain.session import Session


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


class TurnStarted(SessionEvent):
    TOPIC = "turn/start"


class TurnEnded(SessionEvent):
    TOPIC = "turn/end"


class StepStarted(SessionEvent):
    TOPIC = "step/start"


class StepEnded(SessionEvent):
    TOPIC = "step/end"


class UserMessaged(SessionEvent):
    TOPIC = "user/message"


class PromptBlocked(SessionEvent):
    TOPIC = "prompt/blocked"


class ContextInjected(SessionEvent):
    TOPIC = "context/message"


class AssistantChunked(SessionEvent):
    TOPIC = "assistant/chunk"


class AssistantMessaged(SessionEvent):
    TOPIC = "assistant/message"


class ToolCalled(SessionEvent):
    TOPIC = "tool/call"


class ToolResulted(SessionEvent):
    TOPIC = "tool/result"


class SteeringInjected(SessionEvent):
    TOPIC = "steering/message"


class TodoWritten(SessionEvent):
    TOPIC = "todo/write"


class CompactStarted(SessionEvent):
    TOPIC = "compact/start"


class CompactSummarised(SessionEvent):
    TOPIC = "compact/summary"


class CompactEnded(SessionEvent):
    TOPIC = "compact/end"


class HookInvoked(SessionEvent):
    TOPIC = "hook/invoked"


class HookResulted(SessionEvent):
    TOPIC = "hook/result"


class SessionTitled(SessionEvent):
    TOPIC = "session/title"


class TitleRequested(SessionEvent):
    TOPIC = "session/title-llm-request"


class RequestHeaderRecorded(SessionEvent):
    TOPIC = "request/header"


class LogOnly(SessionEvent):
    """Any type no class is registered for: stored verbatim, never on the surface."""

    TOPIC = ""


EVENT_CLASSES: dict[str, type[SessionEvent]] = {
    cls.TOPIC: cls
    for cls in (
        TurnStarted,
        TurnEnded,
        StepStarted,
        StepEnded,
        UserMessaged,
        PromptBlocked,
        ContextInjected,
        AssistantChunked,
        AssistantMessaged,
        ToolCalled,
        ToolResulted,
        SteeringInjected,
        TodoWritten,
        CompactStarted,
        CompactSummarised,
        CompactEnded,
        HookInvoked,
        HookResulted,
        SessionTitled,
        TitleRequested,
        RequestHeaderRecorded,
    )
}


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
    "AssistantChunked",
    "AssistantMessaged",
    "CompactEnded",
    "CompactStarted",
    "CompactSummarised",
    "ContextInjected",
    "HookInvoked",
    "HookResulted",
    "LogOnly",
    "PromptBlocked",
    "RequestHeaderRecorded",
    "SessionEvent",
    "SessionTitled",
    "SteeringInjected",
    "StepEnded",
    "StepStarted",
    "TitleRequested",
    "TodoWritten",
    "ToolCalled",
    "ToolResulted",
    "TurnEnded",
    "TurnStarted",
    "UserMessaged",
    "build_event",
    "event_class_for",
]
