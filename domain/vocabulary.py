"""The session's event vocabulary: the types, which join the surface, their shapes.

Payload models check what a producer appends (docs/events.md#payload-checks: strict,
extra keys allowed, unknown kinds of every open set accepted). They only judge: the
stored data is the caller's validated JSON copy, never a model dump, so logs stay
verbatim.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, TypeAlias

from pydantic import (
    MISSING,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    JsonValue,
    Tag,
    ValidationError,
)
from pydantic.alias_generators import to_camel

from agentlog.domain.errors import PayloadError, UnsupportedSessionFormatError
from agentlog.domain.json import Json  # noqa: TC001 - pydantic resolves it at runtime

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from agentlog.domain.json import Envelope

__all__ = [
    "CORE_TYPES",
    "LEGACY_SHAPES",
    "PAYLOAD_MODELS",
    "PLUGIN_TYPES",
    "SURFACE_TYPES",
    "AbortedEnd",
    "AbortedFinish",
    "AssistantChunkPayload",
    "AssistantMessagePayload",
    "BlockEndChunk",
    "BlockStartChunk",
    "CompactEndPayload",
    "CompactStartPayload",
    "CompactSummaryPayload",
    "CompletedEnd",
    "ContentBlock",
    "ContextMessagePayload",
    "DisposedEnd",
    "ErrorEnd",
    "ErrorFinish",
    "FallbackTitleSource",
    "FinishChunk",
    "FinishReason",
    "HookInvokedPayload",
    "HookResultPayload",
    "InjectionTrigger",
    "InterruptedEnd",
    "MaxTokensEnd",
    "MaxTokensFinish",
    "Message",
    "MessageSource",
    "MessageTrigger",
    "ModelRef",
    "PluginSource",
    "PromptBlockedPayload",
    "ProviderConfig",
    "ProviderTitleSource",
    "ReasoningBlock",
    "ReasoningDeltaChunk",
    "RejectedEnd",
    "RequestHeaderBody",
    "RequestHeaderPayload",
    "SessionHeader",
    "SessionMeta",
    "SessionSummary",
    "SessionTitleLlmRequestPayload",
    "SessionTitlePayload",
    "ShadowedRange",
    "SteeringMessagePayload",
    "StepEndPayload",
    "StepStartPayload",
    "StopFinish",
    "StreamChunk",
    "TextBlock",
    "TextDeltaChunk",
    "TitleSource",
    "TodoItem",
    "TodoWritePayload",
    "TokenUsage",
    "ToolCallBlock",
    "ToolCallDeltaChunk",
    "ToolCallPayload",
    "ToolCallsFinish",
    "ToolError",
    "ToolResultBlock",
    "ToolResultPayload",
    "TurnEndPayload",
    "TurnEndReason",
    "TurnStartPayload",
    "TurnTrigger",
    "UnknownBlock",
    "UnknownChunk",
    "UnknownEnd",
    "UnknownFinish",
    "UnknownSource",
    "UnknownTitleSource",
    "UnknownTrigger",
    "UsageChunk",
    "UserMessagePayload",
    "UserSource",
    "check_legacy",
    "check_payload",
    "is_surface_eligible_type",
    "is_surface_event",
    "json_schema",
    "register_payload",
]

# --------------------------------------------------------------------------------------
# Type sets (docs/vocabulary.md, docs/events.md#surface-markers)

SURFACE_TYPES: Final = frozenset(
    {
        "user/message",
        "assistant/message",
        "tool/result",
        "context/message",
        "steering/message",
    }
)
"""The five message-producing types; only they join the surface and carry markers."""

CORE_TYPES: Final = SURFACE_TYPES | {
    "turn/start",
    "turn/end",
    "step/start",
    "step/end",
    "prompt/blocked",
    "assistant/chunk",
    "tool/call",
    "todo/write",
}
"""The 13 types owned by the session package."""

PLUGIN_TYPES: Final = frozenset(
    {
        "compact/start",
        "compact/summary",
        "compact/end",
        "hook/invoked",
        "hook/result",
        "session/title",
        "session/title-llm-request",
        "request/header",
    }
)
"""Plugin types registered here; plugin types are always log-only."""


def is_surface_eligible_type(event_type: str) -> bool:
    """Tell whether events of this type may join the surface."""
    return event_type in SURFACE_TYPES


def is_surface_event(event: Envelope) -> bool:
    """Tell whether a recorded event joined the surface (eligible and marked)."""
    return event.get("type") in SURFACE_TYPES and event.get("surfaceOp") is not None


# --------------------------------------------------------------------------------------
# Model base and open unions


class _Model(BaseModel):
    """Strict, open and immutable; Python names snake_case, JSON keys camelCase.

    Optional keys are typed ``X | MISSING``, so an absent key is fine, ``null`` is not
    (the log omits absent keys, never writes them as null), and dumps omit them.
    """

    model_config = ConfigDict(
        strict=True,
        extra="allow",
        frozen=True,
        alias_generator=to_camel,
        serialize_by_alias=True,
    )


_UNKNOWN: Final = "unknown"


@dataclass(frozen=True)
class _OpenSet:
    """A merge-extensible set of kinds tagged by ``key`` (docs/vocabulary.md).

    Known kinds route to their own model, so a malformed known kind is an error;
    any other string routes to the fallback model, so newer producers pass.
    """

    key: str
    known: frozenset[str]
    what: str

    def discriminator(self) -> Discriminator:
        """The union's router.

        A value that is not an object with a string tag fails with one clear error
        instead of one error per variant.
        """
        key, known = self.key, self.known

        def tag(value: Any) -> str | None:
            if type(value) is dict:
                kind = value.get(key)
            elif isinstance(value, BaseModel):
                kind = getattr(value, key, None)
            else:
                return None
            if type(kind) is not str:
                return None
            return kind if kind in known else _UNKNOWN

        return Discriminator(
            tag,
            custom_error_type=f"invalid_{self.what.replace(' ', '_')}",
            custom_error_message=(
                f'Input should be a {self.what}: an object with a string "{key}"'
            ),
        )

    def other_kind(self) -> Any:
        """The fallback's tag field: any string but a known kind.

        Only the JSON schema sees it; it keeps the schema's ``oneOf`` exact, so a
        known kind matches its own model only, as in validation.
        """
        kinds: list[JsonValue] = [*sorted(self.known)]
        return Field(json_schema_extra={"not": {"enum": kinds}})


_BLOCK_KINDS: Final = _OpenSet(
    "type",
    frozenset({"text", "reasoning", "tool-call", "tool-result"}),
    "content block",
)
_SOURCE_KINDS: Final = _OpenSet("kind", frozenset({"user", "plugin"}), "message source")
_FINISH_KINDS: Final = _OpenSet(
    "kind",
    frozenset({"stop", "tool-calls", "max-tokens", "aborted", "error"}),
    "finish reason",
)
_CHUNK_KINDS: Final = _OpenSet(
    "type",
    frozenset(
        {
            "block-start",
            "text-delta",
            "reasoning-delta",
            "tool-call-delta",
            "block-end",
            "usage",
            "finish",
        }
    ),
    "stream chunk",
)
_TRIGGER_KINDS: Final = _OpenSet(
    "kind", frozenset({"message", "injection"}), "turn trigger"
)
_END_KINDS: Final = _OpenSet(
    "kind",
    frozenset(
        {
            "completed",
            "aborted",
            "error",
            "disposed",
            "max-tokens",
            "rejected",
            "interrupted",
        }
    ),
    "turn end reason",
)
_TITLE_SOURCE_KINDS: Final = _OpenSet(
    "kind", frozenset({"fallback", "provider"}), "title source"
)


# --------------------------------------------------------------------------------------
# Value types (docs/vocabulary.md)


class TextBlock(_Model):
    type: Literal["text"]
    text: str


class ReasoningBlock(_Model):
    type: Literal["reasoning"]
    text: str


class ToolCallBlock(_Model):
    type: Literal["tool-call"]
    id: str
    name: str
    arguments: str
    """The model's raw JSON text, unparsed."""


class ToolResultBlock(_Model):
    type: Literal["tool-result"]
    tool_call_id: str
    content: list[ContentBlock]
    is_error: bool | MISSING = MISSING


class UnknownBlock(_Model):
    """A block type this version does not know; kept as written."""

    type: Annotated[str, _BLOCK_KINDS.other_kind()]


ContentBlock: TypeAlias = Annotated[
    Annotated[TextBlock, Tag("text")]
    | Annotated[ReasoningBlock, Tag("reasoning")]
    | Annotated[ToolCallBlock, Tag("tool-call")]
    | Annotated[ToolResultBlock, Tag("tool-result")]
    | Annotated[UnknownBlock, Tag(_UNKNOWN)],
    _BLOCK_KINDS.discriminator(),
]
ToolResultBlock.model_rebuild()


class UserSource(_Model):
    kind: Literal["user"]


class PluginSource(_Model):
    kind: Literal["plugin"]
    plugin: str


class UnknownSource(_Model):
    kind: Annotated[str, _SOURCE_KINDS.other_kind()]


MessageSource: TypeAlias = Annotated[
    Annotated[UserSource, Tag("user")]
    | Annotated[PluginSource, Tag("plugin")]
    | Annotated[UnknownSource, Tag(_UNKNOWN)],
    _SOURCE_KINDS.discriminator(),
]


class TokenUsage(_Model):
    """Disjoint counts: ``input_tokens`` is uncached input only."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int | MISSING = MISSING
    cache_write_tokens: int | MISSING = MISSING
    reasoning_tokens: int | MISSING = MISSING


class StopFinish(_Model):
    kind: Literal["stop"]


class ToolCallsFinish(_Model):
    kind: Literal["tool-calls"]


class MaxTokensFinish(_Model):
    kind: Literal["max-tokens"]


class AbortedFinish(_Model):
    kind: Literal["aborted"]


class ErrorFinish(_Model):
    kind: Literal["error"]
    message: str
    code: str | MISSING = MISSING


class UnknownFinish(_Model):
    kind: Annotated[str, _FINISH_KINDS.other_kind()]


FinishReason: TypeAlias = Annotated[
    Annotated[StopFinish, Tag("stop")]
    | Annotated[ToolCallsFinish, Tag("tool-calls")]
    | Annotated[MaxTokensFinish, Tag("max-tokens")]
    | Annotated[AbortedFinish, Tag("aborted")]
    | Annotated[ErrorFinish, Tag("error")]
    | Annotated[UnknownFinish, Tag(_UNKNOWN)],
    _FINISH_KINDS.discriminator(),
]


class BlockStartChunk(_Model):
    type: Literal["block-start"]
    index: int
    block_type: str


class TextDeltaChunk(_Model):
    type: Literal["text-delta"]
    index: int
    text: str


class ReasoningDeltaChunk(_Model):
    type: Literal["reasoning-delta"]
    index: int
    text: str


class ToolCallDeltaChunk(_Model):
    type: Literal["tool-call-delta"]
    index: int
    id: str
    name: str | MISSING = MISSING
    arguments_delta: str


class BlockEndChunk(_Model):
    type: Literal["block-end"]
    index: int
    block: ContentBlock


class UsageChunk(_Model):
    type: Literal["usage"]
    usage: TokenUsage


class FinishChunk(_Model):
    type: Literal["finish"]
    reason: FinishReason


class UnknownChunk(_Model):
    type: Annotated[str, _CHUNK_KINDS.other_kind()]


StreamChunk: TypeAlias = Annotated[
    Annotated[BlockStartChunk, Tag("block-start")]
    | Annotated[TextDeltaChunk, Tag("text-delta")]
    | Annotated[ReasoningDeltaChunk, Tag("reasoning-delta")]
    | Annotated[ToolCallDeltaChunk, Tag("tool-call-delta")]
    | Annotated[BlockEndChunk, Tag("block-end")]
    | Annotated[UsageChunk, Tag("usage")]
    | Annotated[FinishChunk, Tag("finish")]
    | Annotated[UnknownChunk, Tag(_UNKNOWN)],
    _CHUNK_KINDS.discriminator(),
]


class TodoItem(_Model):
    content: str
    status: Literal["pending", "in_progress", "completed"]


class MessageTrigger(_Model):
    """A drained prompt batch; ``source`` is the first queued message's."""

    kind: Literal["message"]
    source: MessageSource


class InjectionTrigger(_Model):
    """An idle ``inject()`` wrapped in a one-shot turn."""

    kind: Literal["injection"]
    source: MessageSource


class UnknownTrigger(_Model):
    kind: Annotated[str, _TRIGGER_KINDS.other_kind()]


TurnTrigger: TypeAlias = Annotated[
    Annotated[MessageTrigger, Tag("message")]
    | Annotated[InjectionTrigger, Tag("injection")]
    | Annotated[UnknownTrigger, Tag(_UNKNOWN)],
    _TRIGGER_KINDS.discriminator(),
]


class CompletedEnd(_Model):
    kind: Literal["completed"]


class AbortedEnd(_Model):
    kind: Literal["aborted"]
    reason: str | MISSING = MISSING


class ErrorEnd(_Model):
    kind: Literal["error"]
    step: int
    message: str
    code: str | MISSING = MISSING


class DisposedEnd(_Model):
    kind: Literal["disposed"]


class MaxTokensEnd(_Model):
    kind: Literal["max-tokens"]


class RejectedEnd(_Model):
    kind: Literal["rejected"]
    reason: str


class InterruptedEnd(_Model):
    """Written only by crash repair."""

    kind: Literal["interrupted"]


class UnknownEnd(_Model):
    kind: Annotated[str, _END_KINDS.other_kind()]


TurnEndReason: TypeAlias = Annotated[
    Annotated[CompletedEnd, Tag("completed")]
    | Annotated[AbortedEnd, Tag("aborted")]
    | Annotated[ErrorEnd, Tag("error")]
    | Annotated[DisposedEnd, Tag("disposed")]
    | Annotated[MaxTokensEnd, Tag("max-tokens")]
    | Annotated[RejectedEnd, Tag("rejected")]
    | Annotated[InterruptedEnd, Tag("interrupted")]
    | Annotated[UnknownEnd, Tag(_UNKNOWN)],
    _END_KINDS.discriminator(),
]


class ModelRef(_Model):
    """A provider and model pair (provenance, title routes)."""

    provider: str
    model: str


class Message(_Model):
    """A derived model message (never stored); derivation yields user and assistant."""

    role: Literal["system", "user", "assistant"]
    content: list[ContentBlock]


# --------------------------------------------------------------------------------------
# Core payloads (docs/vocabulary.md)


class TurnStartPayload(_Model):
    turn: int
    trigger: TurnTrigger


class TurnEndPayload(_Model):
    turn: int
    reason: TurnEndReason


class StepStartPayload(_Model):
    turn: int
    step: int


class StepEndPayload(_Model):
    turn: int
    step: int


class UserMessagePayload(_Model):
    content: list[ContentBlock]
    source: MessageSource


class PromptBlockedPayload(_Model):
    """A queued prompt a hook vetoed; ``reason`` is the veto text."""

    content: list[ContentBlock]
    source: MessageSource
    reason: str


class ContextMessagePayload(_Model):
    content: list[ContentBlock]
    source: MessageSource


class AssistantChunkPayload(_Model):
    turn: int
    step: int
    chunk: StreamChunk


class AssistantMessagePayload(_Model):
    """One step's assembled output; ``content`` may be empty (a usage-only step)."""

    turn: int
    step: int
    content: list[ContentBlock]
    usage: TokenUsage | MISSING = MISSING
    provenance: ModelRef | MISSING = MISSING


class ToolCallPayload(_Model):
    turn: int
    step: int
    call_id: str
    name: str
    arguments: str


class ToolError(_Model):
    """Identifies an internal failure of a tool run."""

    name: str
    code: str


class ToolResultPayload(_Model):
    turn: int
    step: int
    call_id: str
    content: list[ContentBlock]
    is_error: bool
    error: ToolError | MISSING = MISSING
    meta: Json | MISSING = MISSING
    """Tool-private presentation data, opaque to the core."""


class SteeringMessagePayload(_Model):
    turn: int
    content: list[ContentBlock]
    source: MessageSource


class TodoWritePayload(_Model):
    """The whole todo list; the last write wins."""

    todos: list[TodoItem]


# --------------------------------------------------------------------------------------
# Plugin payloads (docs/vocabulary.md, docs/titles.md#events)


class CompactStartPayload(_Model):
    turn: int


class ShadowedRange(_Model):
    """A surface-position pair; ``start`` may be numerically greater than ``end``."""

    start: int
    end: int


class CompactSummaryPayload(_Model):
    summary: list[ContentBlock]
    shadowed_range: ShadowedRange
    shadowed_seqs: list[int]
    shadowed_token_count: int


class CompactEndPayload(_Model):
    turn: int
    error: str | MISSING = MISSING


class HookInvokedPayload(_Model):
    turn: int
    point: str
    dialect: Literal["claude", "codex"]
    matcher: str | MISSING = MISSING
    handler_id: str


class HookResultPayload(_Model):
    turn: int
    point: str
    handler_id: str
    decision: str
    exit_code: int | MISSING = MISSING
    stderr_summary: str | MISSING = MISSING
    duration_ms: int


class FallbackTitleSource(_Model):
    kind: Literal["fallback"]


class ProviderTitleSource(_Model):
    kind: Literal["provider"]
    provider: str
    model: ModelRef | MISSING = MISSING


class UnknownTitleSource(_Model):
    kind: Annotated[str, _TITLE_SOURCE_KINDS.other_kind()]


TitleSource: TypeAlias = Annotated[
    Annotated[FallbackTitleSource, Tag("fallback")]
    | Annotated[ProviderTitleSource, Tag("provider")]
    | Annotated[UnknownTitleSource, Tag(_UNKNOWN)],
    _TITLE_SOURCE_KINDS.discriminator(),
]


class SessionTitlePayload(_Model):
    title: str
    message_seqs: list[int]
    source: TitleSource


class SessionTitleLlmRequestPayload(_Model):
    """Appended by a model-backed title provider before it dispatches the request."""

    title_provider: str
    message_seqs: list[int]
    route: ModelRef
    system: str
    messages: list[Message]
    max_tokens: int


class ProviderConfig(_Model):
    provider: str
    model: str


class RequestHeaderBody(_Model):
    config: ProviderConfig
    system: Json | MISSING = MISSING
    tools: Json | MISSING = MISSING
    message_prefix: Json | MISSING = MISSING


class RequestHeaderPayload(_Model):
    """``reason`` stays a plain string so that the legacy check names "fallback"."""

    header: RequestHeaderBody
    reason: str


# --------------------------------------------------------------------------------------
# Header, summary, meta (docs/events.md#header)

NonNegativeInt: TypeAlias = Annotated[int, Field(ge=0)]


class SessionHeader(_Model):
    """Immutable metadata kept beside the log (never an event)."""

    version: int
    id: str
    created_at: int
    cwd: str | MISSING = MISSING
    parent_session: str | MISSING = MISSING
    seed_length: NonNegativeInt | MISSING = MISSING
    delegation_depth: NonNegativeInt | MISSING = MISSING


class SessionSummary(_Model):
    """Seed 001's mutable listing fields; never attached to the aggregate or the log."""

    updated_at: int
    title: str | MISSING = MISSING
    first_prompt: str | MISSING = MISSING


class SessionMeta(SessionSummary, SessionHeader):
    """The flat union of :class:`SessionHeader` and :class:`SessionSummary` fields."""


# --------------------------------------------------------------------------------------
# Registry and checks

_MODELS: dict[str, type[BaseModel]] = {
    "turn/start": TurnStartPayload,
    "turn/end": TurnEndPayload,
    "step/start": StepStartPayload,
    "step/end": StepEndPayload,
    "user/message": UserMessagePayload,
    "prompt/blocked": PromptBlockedPayload,
    "context/message": ContextMessagePayload,
    "assistant/chunk": AssistantChunkPayload,
    "assistant/message": AssistantMessagePayload,
    "tool/call": ToolCallPayload,
    "tool/result": ToolResultPayload,
    "steering/message": SteeringMessagePayload,
    "todo/write": TodoWritePayload,
    "compact/start": CompactStartPayload,
    "compact/summary": CompactSummaryPayload,
    "compact/end": CompactEndPayload,
    "hook/invoked": HookInvokedPayload,
    "hook/result": HookResultPayload,
    "session/title": SessionTitlePayload,
    "session/title-llm-request": SessionTitleLlmRequestPayload,
    "request/header": RequestHeaderPayload,
}

PAYLOAD_MODELS: Final[Mapping[str, type[BaseModel]]] = MappingProxyType(_MODELS)
"""Wire type -> payload model; read-only: :func:`register_payload` is the way in."""


def register_payload(event_type: str, model: type[BaseModel]) -> None:
    """Register (or replace) the payload model of a plugin type.

    Core types keep their models: the session's rules depend on those shapes.
    """
    if event_type in CORE_TYPES:
        msg = f'"{event_type}" is a core session event type; its payload model is fixed'
        raise ValueError(msg)
    _MODELS[event_type] = model


def check_payload(event_type: str, data: Json) -> None:
    """Check ``data`` against its type's model in strict mode; unknown types pass.

    Raises :class:`~agentlog.domain.errors.PayloadError` naming the first failing field.
    """
    model = _MODELS.get(event_type)
    if model is None:
        return
    try:
        model.__pydantic_validator__.validate_python(data)
    except ValidationError as error:
        detail = error.errors(
            include_url=False, include_context=False, include_input=False
        )[0]
        path = ".".join(str(part) for part in detail["loc"])
        reason = f"{path}: {detail['msg']}" if path else detail["msg"]
        msg = f'session event "{event_type}" has an invalid payload: {reason}'
        raise PayloadError(msg) from error


def _legacy_header_delta(event_type: str, data: Json) -> str | None:
    if event_type == "request/header-delta":
        return "request/header-delta event"
    return None


def _legacy_fallback_header(event_type: str, data: Json) -> str | None:
    if (
        event_type == "request/header"
        and type(data) is dict
        and data.get("reason") == "fallback"
    ):
        return 'request/header reason "fallback"'
    return None


LEGACY_SHAPES: Final[tuple[Callable[[str, Json], str | None], ...]] = (
    _legacy_header_delta,
    _legacy_fallback_header,
)
"""Refused legacy shapes: each names what it found, or None.

See docs/persistence.md#format-versions-and-legacy-shapes.
"""


def check_legacy(session_id: str, event_type: str, data: Json, seq: int) -> None:
    """Refuse an event in a shape of an older format, on append, load and import.

    Raises :class:`~agentlog.domain.errors.UnsupportedSessionFormatError`.
    """
    for shape in LEGACY_SHAPES:
        found = shape(event_type, data)
        if found is not None:
            msg = (
                f'session "{session_id}" contains unsupported legacy {found} '
                f"at seq {seq}"
            )
            raise UnsupportedSessionFormatError(msg)


def json_schema() -> dict[str, dict[str, Any]]:
    """The JSON schema of every registered payload, keyed by wire type."""
    return {
        event_type: model.model_json_schema() for event_type, model in _MODELS.items()
    }
