"""The event vocabulary: one declaration per wire type, read by every other module.

An :class:`EventType` says everything the rules know about a type: its wire name
(the stored topic), its family, its payload model, the Python event class that
records it, whether it joins the surface, and whether it must sit inside the open
step. The surface, the invariants, the event classes, the payload check and the
importers all read :data:`VOCABULARY`; nothing else lists types.

A type no one declared is a plugin's, whatever its family: stored verbatim with any
JSON ``data``, never on the surface, given no core rule — on append, seed, import
and load alike, as the original harness treats every type it does not know
(``tool/code-dispatch`` is a real plugin type in the ``tool/`` family). Only the
declared core types get core rules. The one refusal is a reserved name
(:func:`check_reserved_type`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, ValidationError

from agentlog.domain.errors import PayloadError, UnsupportedSessionFormatError
from agentlog.domain.legacy import LEGACY_SHAPES, check_legacy
from agentlog.domain.payloads import (
    AssistantChunkPayload,
    AssistantMessagePayload,
    CompactEndPayload,
    CompactStartPayload,
    CompactSummaryPayload,
    HookInvokedPayload,
    HookResultPayload,
    MessagePayload,
    PromptBlockedPayload,
    RequestHeaderPayload,
    SessionTitleLlmRequestPayload,
    SessionTitlePayload,
    SteeringMessagePayload,
    StepPayload,
    TodoWritePayload,
    ToolCallPayload,
    ToolResultPayload,
    TurnEndPayload,
    TurnStartPayload,
)
from agentlog.domain.topics import ERASED_TOPIC, HEADER_TOPIC, SNAPSHOT_TOPIC

if TYPE_CHECKING:
    from agentlog.domain.json import Envelope, Json


def family_of(event_type: str) -> str:
    """The family of a type: the part before its first ``/`` (or the whole name)."""
    return event_type.partition("/")[0]


@dataclass(frozen=True, slots=True)
class EventType:
    """One wire type and every property the session's rules read from it."""

    name: str
    """The wire name, also the stored topic (``turn/start``)."""
    payload: type[BaseModel]
    """The model ``data`` must pass (strict, extra keys allowed)."""
    event_class: str = ""
    """The name of the Python event class recording it; empty for ``LogOnly``."""
    core: bool = False
    """Owned by the session core; otherwise a plugin's type, always log-only."""
    surface_code: str = ""
    """One character naming the node in a surface snapshot; set only on the
    message-producing types, the only ones that may join the surface."""
    in_step: bool = False
    """Must name the open turn and step (docs/invariants.md#the-checks, step 5)."""

    @property
    def family(self) -> str:
        return family_of(self.name)

    @property
    def surface_eligible(self) -> bool:
        return bool(self.surface_code)


def _core(
    name: str, payload: type[BaseModel], event_class: str, **rules: Any
) -> EventType:
    return EventType(name, payload, event_class, core=True, **rules)


VOCABULARY: Final[tuple[EventType, ...]] = (
    # The 13 core types (docs/vocabulary.md).
    _core("turn/start", TurnStartPayload, "TurnStarted"),
    _core("turn/end", TurnEndPayload, "TurnEnded"),
    _core("step/start", StepPayload, "StepStarted"),
    _core("step/end", StepPayload, "StepEnded", in_step=True),
    _core("user/message", MessagePayload, "UserMessaged", surface_code="u"),
    _core("prompt/blocked", PromptBlockedPayload, "PromptBlocked"),
    _core("context/message", MessagePayload, "ContextInjected", surface_code="c"),
    _core("assistant/chunk", AssistantChunkPayload, "AssistantChunked", in_step=True),
    _core(
        "assistant/message",
        AssistantMessagePayload,
        "AssistantMessaged",
        surface_code="a",
        in_step=True,
    ),
    _core("tool/call", ToolCallPayload, "ToolCalled", in_step=True),
    _core(
        "tool/result", ToolResultPayload, "ToolResulted", surface_code="r", in_step=True
    ),
    _core(
        "steering/message", SteeringMessagePayload, "SteeringInjected", surface_code="s"
    ),
    _core("todo/write", TodoWritePayload, "TodoWritten"),
    # First-party plugin types (docs/vocabulary.md, docs/titles.md#events).
    EventType("compact/start", CompactStartPayload, "CompactStarted"),
    EventType("compact/summary", CompactSummaryPayload, "CompactSummarised"),
    EventType("compact/end", CompactEndPayload, "CompactEnded"),
    EventType("hook/invoked", HookInvokedPayload, "HookInvoked"),
    EventType("hook/result", HookResultPayload, "HookResulted"),
    EventType("session/title", SessionTitlePayload, "SessionTitled"),
    EventType(
        "session/title-llm-request", SessionTitleLlmRequestPayload, "TitleRequested"
    ),
    EventType("request/header", RequestHeaderPayload, "RequestHeaderRecorded"),
)
"""Every type this build gives meaning to, in the spec's order."""

_REGISTRY: dict[str, EventType] = {declared.name: declared for declared in VOCABULARY}

SURFACE_TYPES: Final = frozenset(t.name for t in VOCABULARY if t.surface_eligible)
"""The five message-producing types; only they join the surface and carry markers."""

SURFACE_CODES: Final[Mapping[str, str]] = {
    t.name: t.surface_code for t in VOCABULARY if t.surface_eligible
}
"""Surface type -> its one-character node code (surface snapshots)."""

IN_STEP_TYPES: Final = frozenset(t.name for t in VOCABULARY if t.in_step)
"""Types that must name the open turn and step."""

CORE_TYPES: Final = frozenset(t.name for t in VOCABULARY if t.core)
"""The 13 types owned by the session package."""

PLUGIN_TYPES: Final = frozenset(t.name for t in VOCABULARY if not t.core)
"""First-party plugin types declared here; plugin types are always log-only."""

RESERVED_TYPES: Final = frozenset({HEADER_TOPIC, SNAPSHOT_TOPIC, ERASED_TOPIC})
"""The stored topics of the header, of snapshots and of an erased session's
tombstone (docs/erasure.md): never event types."""


def check_reserved_type(session_id: str, event_type: str, seq: int) -> None:
    """Refuse an event named like the header or a snapshot: it would be read back
    as one of those. Every other name is recordable.

    Raises :class:`~agentlog.domain.errors.UnsupportedSessionFormatError`.
    """
    if event_type in RESERVED_TYPES:
        msg = (
            f'session "{session_id}" contains reserved event type "{event_type}" at '
            f"seq {seq}; that name is the stored header's, a snapshot's or a "
            "tombstone's"
        )
        raise UnsupportedSessionFormatError(msg)


def declared(event_type: str) -> EventType | None:
    """The declaration of ``event_type``, or ``None`` for a type no one declared."""
    return _REGISTRY.get(event_type)


class _PayloadModels(Mapping[str, type[BaseModel]]):
    """A read-only view: wire type -> payload model, of the live registry."""

    def __getitem__(self, event_type: str) -> type[BaseModel]:
        return _REGISTRY[event_type].payload

    def __iter__(self) -> Iterator[str]:
        return iter(_REGISTRY)

    def __len__(self) -> int:
        return len(_REGISTRY)


PAYLOAD_MODELS: Final[Mapping[str, type[BaseModel]]] = _PayloadModels()
"""Wire type -> payload model; read-only: :func:`register_payload` is the way in."""


def register_payload(event_type: str, model: type[BaseModel]) -> None:
    """Register (or replace) the payload model of a plugin type (always log-only).

    Core types keep their models: the session's rules depend on those shapes
    (:class:`~agentlog.domain.errors.PayloadError`, also a ``ValueError``).
    """
    known = _REGISTRY.get(event_type)
    if known is not None and known.core:
        msg = f'"{event_type}" is a core session event type; its payload model is fixed'
        raise PayloadError(msg)
    event_class = known.event_class if known is not None else ""
    _REGISTRY[event_type] = EventType(event_type, model, event_class)


def is_surface_eligible_type(event_type: str) -> bool:
    """Tell whether events of this type may join the surface."""
    return event_type in SURFACE_TYPES


def is_surface_event(event: Envelope) -> bool:
    """Tell whether a recorded event joined the surface (eligible and marked)."""
    return event.get("type") in SURFACE_TYPES and event.get("surfaceOp") is not None


def check_payload(event_type: str, data: Json) -> None:
    """Check ``data`` against its type's model in strict mode; undeclared types pass.

    Raises :class:`~agentlog.domain.errors.PayloadError` naming the first failing field.
    """
    known = _REGISTRY.get(event_type)
    if known is None:
        return
    validate = known.payload.__pydantic_validator__.validate_python
    try:
        try:
            validate(data)
        except ValidationError as error:
            if not any(d["type"] == "string_unicode" for d in error.errors()):
                raise
            # pydantic refuses a key that holds a lone surrogate (JavaScript keys
            # may); declared keys are ASCII, so only open extras can hold one.
            validate(_keys_without_surrogates(data))
    except ValidationError as error:
        detail = error.errors(
            include_url=False, include_context=False, include_input=False
        )[0]
        path = ".".join(str(part) for part in detail["loc"])
        reason = f"{path}: {detail['msg']}" if path else detail["msg"]
        msg = f'session event "{event_type}" has an invalid payload: {reason}'
        raise PayloadError(msg) from error


def _keys_without_surrogates(value: Json) -> Json:
    """A copy of ``value`` whose object keys have lone surrogates replaced by U+FFFD,
    for validation only (iterative: any depth)."""
    root: list[Json] = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        container, index = stack.pop()
        item = container[index]
        if isinstance(item, dict):
            copy = {_valid_key(key): child for key, child in item.items()}
            container[index] = copy
            stack.extend((copy, key) for key in copy)
        elif isinstance(item, list):
            items = list(item)
            container[index] = items
            stack.extend((items, position) for position in range(len(items)))
    return root[0]


def _valid_key(key: str) -> str:
    return key.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def json_schema() -> dict[str, dict[str, Any]]:
    """The JSON schema of every declared payload, keyed by wire type."""
    return {
        name: known.payload.model_json_schema() for name, known in _REGISTRY.items()
    }


__all__ = [
    "CORE_TYPES",
    "IN_STEP_TYPES",
    "LEGACY_SHAPES",
    "PAYLOAD_MODELS",
    "PLUGIN_TYPES",
    "RESERVED_TYPES",
    "SURFACE_CODES",
    "SURFACE_TYPES",
    "VOCABULARY",
    "EventType",
    "check_legacy",
    "check_payload",
    "check_reserved_type",
    "declared",
    "family_of",
    "is_surface_eligible_type",
    "is_surface_event",
    "json_schema",
    "register_payload",
]
