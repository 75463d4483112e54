"""The payload models: the JSON shapes of every event's ``data`` and of the header.

Models check what a producer appends (docs/events.md#payload-checks: strict, extra
keys allowed, unknown kinds of every open set accepted). They only judge: the stored
data is the caller's validated JSON copy, never a model dump, so logs stay verbatim.
Which wire type uses which model is declared once, in
:mod:`agentlog.domain.vocabulary`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Final,
    Literal,
    TypeAlias,
    Union,
    get_args,
)

from pydantic import (
    MISSING,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    JsonValue,
    Tag,
    create_model,
)
from pydantic.alias_generators import to_camel

from agentlog.domain.json import Json  # noqa: TC001 - pydantic resolves it at runtime

if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
    from pydantic.json_schema import JsonSchemaValue
    from pydantic_core import CoreSchema

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
        defer_build=True,  # built on first use, but for TURN_MODELS (end of module)
    )


_UNKNOWN: Final = "unknown"


@dataclass(frozen=True)
class OpenSet:
    """Makes a union of models a merge-extensible set of kinds tagged by ``key``.

    Written as ``Annotated[A | B, OpenSet("kind", "what")]``: each variant's
    ``Literal`` tag field says its kinds, so a kind is written once. A known kind
    routes to its own model (a malformed one is an error); any other string routes
    to a fallback model made here, so newer producers pass.
    """

    key: str
    what: str
    _fallbacks: dict[frozenset[str], type[_Model]] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        """The tagged union, through pydantic's public schema hook."""
        variants = get_args(source) or (source,)
        known: list[str] = []
        choices: list[Any] = []
        for model in variants:
            for kind in get_args(model.model_fields[self.key].annotation):
                known.append(kind)
                choices.append(Annotated[model, Tag(kind)])
        fallback = self.fallback(frozenset(known))
        choices.append(Annotated[fallback, Tag(_UNKNOWN)])
        routed: Any = Union[tuple(choices)]  # noqa: UP007 - built at run time
        discriminator = self._discriminator(frozenset(known))
        return handler.generate_schema(Annotated[routed, discriminator])

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        """One ``oneOf`` entry per model (a model serving several kinds is listed
        once per kind by the union), so that ``oneOf`` stays exact."""
        generated = handler(schema)
        union = handler.resolve_ref_schema(generated)
        variants = union.get("oneOf")
        if isinstance(variants, list):
            unique: dict[str, Any] = {}
            for variant in variants:
                unique.setdefault(json.dumps(variant, sort_keys=True), variant)
            union["oneOf"] = list(unique.values())
        return generated

    def fallback(self, known: frozenset[str]) -> type[_Model]:
        """The model of every other kind: any string but a known one.

        Its JSON schema says "not a known kind", so the schema's ``oneOf`` is exact:
        a known kind matches its own model only, as in validation.
        """
        model = self._fallbacks.get(known)
        if model is None:
            name = "Unknown" + self.what.title().replace(" ", "")
            kinds: list[JsonValue] = [*sorted(known)]
            tag_field: Any = Annotated[
                str, Field(json_schema_extra={"not": {"enum": kinds}})
            ]
            fields: dict[str, Any] = {self.key: (tag_field, ...)}
            model = create_model(
                name,
                __base__=_Model,
                __module__=__name__,
                __doc__=f"A {self.what} of a kind this version does not know.",
                **fields,
            )
            self._fallbacks[known] = model
        return model

    def _discriminator(self, known: frozenset[str]) -> Discriminator:
        """The router: a value that is not an object with a string tag fails with
        one clear error instead of one error per variant."""
        key = self.key

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


# --------------------------------------------------------------------------------------
# Value types


class TextBlock(_Model):
    type: Literal["text"]
    text: str


class ReasoningBlock(_Model):
    """The model's visible reasoning, kept apart from its answer."""

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


ContentBlock: TypeAlias = Annotated[
    TextBlock | ReasoningBlock | ToolCallBlock | ToolResultBlock,
    OpenSet("type", "content block"),
]
# No ToolResultBlock.model_rebuild() here: models are built on first use
# (defer_build), when ContentBlock is defined; building every one at import cost
# every command a third of a second. Field notes (the strings under fields) are
# read only by the reference generator (infrastructure/schema_doc.py): pydantic's
# use_attribute_docstrings read them on every import, for two thirds of its cost.


class UserSource(_Model):
    kind: Literal["user"]


class PluginSource(_Model):
    kind: Literal["plugin"]
    plugin: str


MessageSource: TypeAlias = Annotated[
    UserSource | PluginSource, OpenSet("kind", "message source")
]


class TokenUsage(_Model):
    """Disjoint counts: ``input_tokens`` is uncached input only."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int | MISSING = MISSING
    cache_write_tokens: int | MISSING = MISSING
    reasoning_tokens: int | MISSING = MISSING


class PlainFinish(_Model):
    """A finish reason that carries nothing but its kind."""

    kind: Literal["stop", "tool-calls", "max-tokens", "aborted"]


class ErrorFinish(_Model):
    """The stream failed; ``message`` says why."""

    kind: Literal["error"]
    message: str
    code: str | MISSING = MISSING


FinishReason: TypeAlias = Annotated[
    PlainFinish | ErrorFinish, OpenSet("kind", "finish reason")
]


class BlockStartChunk(_Model):
    type: Literal["block-start"]
    index: int
    block_type: str


class DeltaChunk(_Model):
    """A piece of a text or reasoning block."""

    type: Literal["text-delta", "reasoning-delta"]
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


StreamChunk: TypeAlias = Annotated[
    BlockStartChunk
    | DeltaChunk
    | ToolCallDeltaChunk
    | BlockEndChunk
    | UsageChunk
    | FinishChunk,
    OpenSet("type", "stream chunk"),
]


class TodoItem(_Model):
    content: str
    status: Literal["pending", "in_progress", "completed"]


class TurnTriggerModel(_Model):
    """A drained prompt batch (``message``: the first queued message's source) or
    an idle ``inject()`` wrapped in a one-shot turn (``injection``)."""

    kind: Literal["message", "injection"]
    source: MessageSource


TurnTrigger: TypeAlias = Annotated[TurnTriggerModel, OpenSet("kind", "turn trigger")]


class PlainEnd(_Model):
    """A turn end that carries nothing but its kind (``interrupted``: crash repair)."""

    kind: Literal["completed", "disposed", "max-tokens", "interrupted"]


class AbortedEnd(_Model):
    kind: Literal["aborted"]
    reason: str | MISSING = MISSING


class ErrorEnd(_Model):
    """The turn failed at ``step``; ``message`` is absent in some real logs."""

    kind: Literal["error"]
    step: int
    message: str | MISSING = MISSING
    code: str | MISSING = MISSING


class RejectedEnd(_Model):
    kind: Literal["rejected"]
    reason: str


TurnEndReason: TypeAlias = Annotated[
    PlainEnd | AbortedEnd | ErrorEnd | RejectedEnd,
    OpenSet("kind", "turn end reason"),
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
# Core payloads


class _InTurn(_Model):
    turn: int


class _InStep(_InTurn):
    step: int


class TurnStartPayload(_InTurn):
    """``trigger`` may be absent: a seed-era producer left it out
    (docs/census-decisions.md)."""

    trigger: TurnTrigger | MISSING = MISSING


class TurnEndPayload(_Model):
    """``turn`` and ``reason`` may be absent: a seed-era producer wrote only
    ``{error}`` (docs/census-decisions.md). The invariants still name a turn/end
    without a turn when they check one."""

    turn: int | MISSING = MISSING
    reason: TurnEndReason | MISSING = MISSING


class StepPayload(_InStep):
    """``step/start`` and ``step/end``: a step is one model call and its tool runs."""


class MessagePayload(_Model):
    """``user/message`` and ``context/message``: content and who wrote it."""

    content: list[ContentBlock]
    source: MessageSource


class PromptBlockedPayload(MessagePayload):
    """A queued prompt a hook vetoed; ``reason`` is the veto text."""

    reason: str


class AssistantChunkPayload(_InStep):
    chunk: StreamChunk


class AssistantMessagePayload(_InStep):
    """One step's assembled output; ``content`` may be empty (a usage-only step)."""

    content: list[ContentBlock]
    usage: TokenUsage | MISSING = MISSING
    provenance: ModelRef | MISSING = MISSING


class ToolCallPayload(_InStep):
    call_id: str
    name: str
    arguments: str


class ToolError(_Model):
    """Identifies an internal failure of a tool run."""

    name: str
    code: str


class ToolResultPayload(_InStep):
    call_id: str
    content: list[ContentBlock]
    is_error: bool
    error: ToolError | MISSING = MISSING
    meta: Json | MISSING = MISSING
    """Tool-private presentation data, opaque to the core."""


class SteeringMessagePayload(MessagePayload, _InTurn):
    """Steering injected between the steps of a running turn."""


class TodoWritePayload(_Model):
    """The whole todo list; the last write wins."""

    todos: list[TodoItem]


# --------------------------------------------------------------------------------------
# Plugin payloads


class CompactStartPayload(_InTurn):
    """Acquires the compaction lock."""


class ShadowedRange(_Model):
    """A surface-position pair; ``start`` may be numerically greater than ``end``."""

    start: int
    end: int


class CompactSummaryPayload(_Model):
    summary: list[ContentBlock]
    shadowed_range: ShadowedRange
    shadowed_seqs: list[int]
    shadowed_token_count: int


class CompactEndPayload(_InTurn):
    error: str | MISSING = MISSING


class HookInvokedPayload(_InTurn):
    point: str
    dialect: Literal["claude", "codex"]
    matcher: str | MISSING = MISSING
    handler_id: str


class HookResultPayload(_Model):
    """What a hook decided and how long it took (a JSON number: producers wrote
    fractions); one seed-era producer wrote only these two keys."""

    turn: int | MISSING = MISSING
    point: str | MISSING = MISSING
    handler_id: str | MISSING = MISSING
    decision: str
    exit_code: int | MISSING = MISSING
    stderr_summary: str | MISSING = MISSING
    duration_ms: float


class FallbackTitleSource(_Model):
    kind: Literal["fallback"]


class ProviderTitleSource(_Model):
    """A title a title provider wrote, with the model it used when it had one."""

    kind: Literal["provider"]
    provider: str
    model: ModelRef | MISSING = MISSING


TitleSource: TypeAlias = Annotated[
    FallbackTitleSource | ProviderTitleSource, OpenSet("kind", "title source")
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
    """The request's model settings; some producers wrote no ``provider``."""

    provider: str | MISSING = MISSING
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
# Header, summary, meta

NonNegativeInt: TypeAlias = Annotated[int, Field(ge=0)]


class SessionHeader(_Model):
    """Immutable metadata kept beside the log (never an event)."""

    version: int | MISSING = MISSING
    """Absent in some seed-era logs; the format rule decides whether such a log
    is stored (docs/census-decisions.md)."""
    id: str
    created_at: int
    cwd: str | MISSING = MISSING
    parent_session: str | MISSING = MISSING
    seed_length: NonNegativeInt | MISSING = MISSING
    delegation_depth: NonNegativeInt | MISSING = MISSING
    owner: str | MISSING = MISSING
    """A tenant or user id: non-empty, no NUL or lone surrogates; inherited by
    forks; scoped reads select by it (docs/scope.md)."""
    origin: str | MISSING = MISSING
    """Why a child exists (``subagent``: a delegated agent's session); not
    inherited by forks (docs/events.md#header)."""


class SessionSummary(_Model):
    """Seed 001's mutable listing fields; never attached to the aggregate or the log."""

    updated_at: int
    title: str | MISSING = MISSING
    first_prompt: str | MISSING = MISSING


class SessionMeta(SessionSummary, SessionHeader):
    """The flat union of :class:`SessionHeader` and :class:`SessionSummary` fields."""


# --------------------------------------------------------------------------------------
# Built at import

TURN_MODELS: Final[tuple[type[_Model], ...]] = (
    TurnStartPayload,
    TurnEndPayload,
    StepPayload,
    MessagePayload,
    AssistantChunkPayload,
    AssistantMessagePayload,
    ToolCallPayload,
    ToolResultPayload,
)
"""The payload models of the types every agent turn appends, built at import: the
aggregate's module imports this one to write, and a first append that built
them paid for it on the write itself (the cold one-step append). The others
stay deferred."""

for _model in TURN_MODELS:
    _model.model_rebuild()
del _model


__all__ = [
    "TURN_MODELS",
    "AbortedEnd",
    "AssistantChunkPayload",
    "AssistantMessagePayload",
    "BlockEndChunk",
    "BlockStartChunk",
    "CompactEndPayload",
    "CompactStartPayload",
    "CompactSummaryPayload",
    "ContentBlock",
    "DeltaChunk",
    "ErrorEnd",
    "ErrorFinish",
    "FallbackTitleSource",
    "FinishChunk",
    "FinishReason",
    "HookInvokedPayload",
    "HookResultPayload",
    "Message",
    "MessagePayload",
    "MessageSource",
    "ModelRef",
    "OpenSet",
    "PlainEnd",
    "PlainFinish",
    "PluginSource",
    "PromptBlockedPayload",
    "ProviderConfig",
    "ProviderTitleSource",
    "ReasoningBlock",
    "RequestHeaderBody",
    "RequestHeaderPayload",
    "SessionHeader",
    "SessionMeta",
    "SessionSummary",
    "SessionTitleLlmRequestPayload",
    "SessionTitlePayload",
    "ShadowedRange",
    "SteeringMessagePayload",
    "StepPayload",
    "StreamChunk",
    "TextBlock",
    "TitleSource",
    "TodoItem",
    "TodoWritePayload",
    "TokenUsage",
    "ToolCallBlock",
    "ToolCallDeltaChunk",
    "ToolCallPayload",
    "ToolError",
    "ToolResultBlock",
    "ToolResultPayload",
    "TurnEndPayload",
    "TurnEndReason",
    "TurnStartPayload",
    "TurnTrigger",
    "TurnTriggerModel",
    "UsageChunk",
    "UserSource",
]
