"""The vocabulary: type sets, payload models, the payload and legacy checks."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from agentlog.domain import vocabulary
from agentlog.domain.errors import PayloadError, UnsupportedSessionFormatError
from agentlog.domain.payloads import (
    AssistantMessagePayload,
    Message,
    SessionHeader,
    SessionMeta,
    SessionSummary,
    TextBlock,
    TokenUsage,
    ToolResultBlock,
    TurnStartPayload,
)
from agentlog.domain.vocabulary import (
    CORE_TYPES,
    PAYLOAD_MODELS,
    PLUGIN_TYPES,
    SURFACE_TYPES,
    check_legacy,
    check_payload,
    is_surface_eligible_type,
    is_surface_event,
    json_schema,
    register_payload,
)

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixtures" / "seed-era"
USER = {"kind": "user"}
TEXT = {"type": "text", "text": "hi"}
USAGE = {"inputTokens": 10, "outputTokens": 5}
TRIGGER = {"kind": "message", "source": USER}


def result(*content: Any, **extra: Any) -> dict[str, Any]:
    """A ``tool/result`` payload in turn 1, step 1, for call ``c``."""
    return {
        "turn": 1,
        "step": 1,
        "callId": "c",
        "content": list(content),
        "isError": False,
        **extra,
    }


def fixture_lines() -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for path in sorted(FIXTURES.glob("*.jsonl")):
        lines.extend(json.loads(line) for line in path.read_text().splitlines() if line)
    return lines


def invalid(event_type: str, data: Any) -> str:
    """The reason part of the PayloadError ``check_payload`` raises."""
    with pytest.raises(PayloadError) as caught:
        check_payload(event_type, data)
    prefix = f'session event "{event_type}" has an invalid payload: '
    message = str(caught.value)
    assert message.startswith(prefix)
    return message.removeprefix(prefix)


# --------------------------------------------------------------------------------------
# Type sets


def test_the_type_sets_are_the_spec_s() -> None:
    assert {
        "user/message",
        "assistant/message",
        "tool/result",
        "context/message",
        "steering/message",
    } == SURFACE_TYPES
    assert len(CORE_TYPES) == 13
    assert SURFACE_TYPES < CORE_TYPES
    assert {
        "compact/start",
        "compact/summary",
        "compact/end",
        "hook/invoked",
        "hook/result",
        "session/title",
        "session/title-llm-request",
        "request/header",
    } == PLUGIN_TYPES
    assert not CORE_TYPES & PLUGIN_TYPES
    assert set(PAYLOAD_MODELS) == CORE_TYPES | PLUGIN_TYPES


def test_core_045_surface_eligibility_and_surface_events() -> None:
    for event_type in SURFACE_TYPES:
        assert is_surface_eligible_type(event_type)
    for event_type in ("turn/start", "assistant/chunk", "todo/write", "compact/start"):
        assert not is_surface_eligible_type(event_type)
    data = {"content": [TEXT], "source": USER}
    assert not is_surface_event({"type": "user/message", "seq": 0, "data": data})
    assert not is_surface_event({"type": "turn/start", "seq": 0, "data": {}})
    assert is_surface_event(
        {"type": "user/message", "seq": 0, "data": data, "surfaceOp": "append"}
    )
    assert not is_surface_event(
        {"type": "turn/end", "seq": 0, "data": {}, "surfaceOp": "append"}
    )


def test_payload_models_are_read_only() -> None:
    with pytest.raises(TypeError):
        PAYLOAD_MODELS["x/y"] = TextBlock  # type: ignore[index]


# --------------------------------------------------------------------------------------
# Accepted payloads: one or more per registered type

VALID: list[tuple[str, Any]] = [
    ("turn/start", {"turn": 1, "trigger": TRIGGER}),
    ("turn/start", {"turn": 2, "trigger": {"kind": "injection", "source": USER}}),
    ("turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
    ("step/start", {"turn": 1, "step": 1}),
    ("step/end", {"turn": 1, "step": 1}),
    ("user/message", {"content": [TEXT], "source": USER}),
    (
        "user/message",
        {"content": [], "source": {"kind": "plugin", "plugin": "compact"}},
    ),
    (
        "prompt/blocked",
        {"content": [TEXT], "source": USER, "reason": "blocked by policy hook"},
    ),
    (
        "context/message",
        {"content": [TEXT], "source": {"kind": "plugin", "plugin": "watcher"}},
    ),
    (
        "assistant/chunk",
        {
            "turn": 1,
            "step": 1,
            "chunk": {"type": "block-start", "index": 0, "blockType": "text"},
        },
    ),
    (
        "assistant/chunk",
        {
            "turn": 1,
            "step": 1,
            "chunk": {"type": "text-delta", "index": 0, "text": "x"},
        },
    ),
    (
        "assistant/chunk",
        {
            "turn": 1,
            "step": 1,
            "chunk": {"type": "reasoning-delta", "index": 0, "text": ""},
        },
    ),
    (
        "assistant/chunk",
        {
            "turn": 1,
            "step": 1,
            "chunk": {
                "type": "tool-call-delta",
                "index": 1,
                "id": "c1",
                "argumentsDelta": "{",
            },
        },
    ),
    (
        "assistant/chunk",
        {
            "turn": 1,
            "step": 1,
            "chunk": {
                "type": "tool-call-delta",
                "index": 1,
                "id": "c1",
                "name": "bash",
                "argumentsDelta": "",
            },
        },
    ),
    (
        "assistant/chunk",
        {
            "turn": 1,
            "step": 1,
            "chunk": {"type": "block-end", "index": 0, "block": TEXT},
        },
    ),
    (
        "assistant/chunk",
        {"turn": 1, "step": 1, "chunk": {"type": "usage", "usage": USAGE}},
    ),
    *[
        (
            "assistant/chunk",
            {"turn": 1, "step": 1, "chunk": {"type": "finish", "reason": reason}},
        )
        for reason in (
            {"kind": "stop"},
            {"kind": "tool-calls"},
            {"kind": "max-tokens"},
            {"kind": "aborted"},
            {"kind": "error", "message": "boom"},
            {"kind": "error", "message": "boom", "code": "E1"},
        )
    ],
    ("assistant/message", {"turn": 1, "step": 1, "content": []}),
    (
        "assistant/message",
        {
            "turn": 1,
            "step": 2,
            "content": [
                {"type": "reasoning", "text": "hmm"},
                TEXT,
                {"type": "tool-call", "id": "c1", "name": "bash", "arguments": "{}"},
            ],
            "usage": {
                "inputTokens": 1,
                "outputTokens": 2,
                "cacheReadTokens": 3,
                "cacheWriteTokens": 4,
                "reasoningTokens": 5,
            },
            "provenance": {"provider": "deepseek", "model": "deepseek-v4-flash"},
        },
    ),
    (
        "tool/call",
        {"turn": 1, "step": 1, "callId": "c1", "name": "bash", "arguments": "{}"},
    ),
    (
        "tool/result",
        {"turn": 1, "step": 1, "callId": "c1", "content": [TEXT], "isError": False},
    ),
    (
        "tool/result",
        {
            "turn": 1,
            "step": 1,
            "callId": "c1",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "c0",
                    "content": [TEXT],
                    "isError": True,
                },
                {"type": "tool-result", "toolCallId": "c0", "content": []},
            ],
            "isError": True,
            "error": {"name": "TimeoutError", "code": "TIMEOUT"},
            "meta": {"exitCode": 1, "lines": [1, 2.5, None]},
        },
    ),
    ("tool/result", result(meta=None)),
    ("steering/message", {"turn": 1, "content": [TEXT], "source": USER}),
    ("todo/write", {"todos": []}),
    (
        "todo/write",
        {
            "todos": [
                {"content": "read the code", "status": "in_progress"},
                {"content": "write the fix", "status": "pending"},
                {"content": "run the tests", "status": "completed"},
            ]
        },
    ),
    ("compact/start", {"turn": 3}),
    (
        "compact/summary",
        {
            "summary": [TEXT],
            "shadowedRange": {"start": 7, "end": 2},
            "shadowedSeqs": [7, 2],
            "shadowedTokenCount": 1200,
        },
    ),
    ("compact/end", {"turn": 3}),
    ("compact/end", {"turn": 3, "error": "summarization failed"}),
    (
        "hook/invoked",
        {"turn": 1, "point": "PreToolUse", "dialect": "claude", "handlerId": "h1"},
    ),
    (
        "hook/invoked",
        {
            "turn": 1,
            "point": "Stop",
            "dialect": "codex",
            "matcher": "bash",
            "handlerId": "h2",
        },
    ),
    (
        "hook/result",
        {
            "turn": 1,
            "point": "Stop",
            "handlerId": "h1",
            "decision": "pass",
            "durationMs": 3,
        },
    ),
    (
        "hook/result",
        {
            "turn": 1,
            "point": "UserPromptSubmit",
            "handlerId": "h1",
            "decision": "block",
            "exitCode": 2,
            "stderrSummary": "blocked",
            "durationMs": 0,
        },
    ),
    (
        "session/title",
        {"title": "Fix the bug", "messageSeqs": [1], "source": {"kind": "fallback"}},
    ),
    (
        "session/title",
        {
            "title": "Fix the bug",
            "messageSeqs": [1, 5],
            "source": {
                "kind": "provider",
                "provider": "deepseek",
                "model": {"provider": "deepseek", "model": "deepseek-v4-flash"},
            },
        },
    ),
    (
        "session/title-llm-request",
        {
            "titleProvider": "deepseek",
            "messageSeqs": [1],
            "route": {"provider": "deepseek", "model": "deepseek-v4-flash"},
            "system": "Write a title.",
            "messages": [{"role": "user", "content": [TEXT]}],
            "maxTokens": 32,
        },
    ),
    *[
        (
            "request/header",
            {
                "header": {"config": {"provider": "deepseek", "model": "m"}},
                "reason": reason,
            },
        )
        for reason in ("initial", "resume", "change")
    ],
    (
        "request/header",
        {
            "header": {
                "config": {"provider": "deepseek", "model": "m", "temperature": 0.2},
                "system": "{{system}}",
                "tools": [{"name": "bash"}],
                "messagePrefix": [],
            },
            "reason": "initial",
        },
    ),
]


@pytest.mark.parametrize(("event_type", "data"), VALID)
def test_valid_payloads_are_accepted_and_left_untouched(
    event_type: str, data: Any
) -> None:
    before = copy.deepcopy(data)
    check_payload(event_type, data)
    assert data == before


def test_every_registered_type_has_a_valid_example() -> None:
    assert {event_type for event_type, _ in VALID} == set(PAYLOAD_MODELS)


@pytest.mark.parametrize(
    "reason",
    [
        {"kind": "completed"},
        {"kind": "aborted"},
        {"kind": "aborted", "reason": "cancelled by user"},
        {"kind": "error", "step": 1, "message": "boom", "code": "X"},
        {"kind": "error", "step": 1, "message": "boom"},
        {"kind": "disposed"},
        {"kind": "max-tokens"},
        {"kind": "rejected", "reason": "r"},
        {"kind": "interrupted"},
    ],
)
def test_core_015_every_turn_end_reason_is_accepted(reason: dict[str, Any]) -> None:
    check_payload("turn/end", {"turn": 1, "reason": reason})


def test_every_event_of_the_seed_era_fixtures_is_accepted() -> None:
    checked = 0
    for line in fixture_lines():
        if line["type"] != "session":
            check_payload(line["type"], line["data"])
            checked += 1
    assert checked > 400


# --------------------------------------------------------------------------------------
# Open sets: unknown kinds and extra keys pass

UNKNOWN_KINDS: list[tuple[str, Any]] = [
    ("user/message", {"content": [{"type": "image", "data": "…"}], "source": USER}),
    (
        "user/message",
        {"content": [{"type": "text", "text": "x"}], "source": {"kind": "cron"}},
    ),
    ("turn/start", {"turn": 1, "trigger": {"kind": "schedule"}}),
    ("turn/end", {"turn": 1, "reason": {"kind": "timeout", "after": 30}}),
    (
        "assistant/chunk",
        {"turn": 1, "step": 1, "chunk": {"type": "citation", "url": "u"}},
    ),
    (
        "assistant/chunk",
        {
            "turn": 1,
            "step": 1,
            "chunk": {"type": "finish", "reason": {"kind": "content-filter"}},
        },
    ),
    (
        "assistant/chunk",
        {
            "turn": 1,
            "step": 1,
            "chunk": {"type": "block-end", "index": 0, "block": {"type": "image"}},
        },
    ),
    (
        "tool/result",
        result(
            {"type": "tool-result", "toolCallId": "c", "content": [{"type": "audio"}]}
        ),
    ),
    ("session/title", {"title": "t", "messageSeqs": [], "source": {"kind": "user"}}),
    ("user/message", {"content": [{"type": "unknown"}], "source": {"kind": "unknown"}}),
]


@pytest.mark.parametrize(("event_type", "data"), UNKNOWN_KINDS)
def test_unknown_kinds_of_open_sets_are_accepted(event_type: str, data: Any) -> None:
    check_payload(event_type, data)


def test_extra_keys_are_accepted_at_every_level() -> None:
    data = {
        "turn": 1,
        "step": 1,
        "content": [
            {"type": "text", "text": "x", "cacheControl": {"type": "ephemeral"}},
            {
                "type": "tool-call",
                "id": "c",
                "name": "n",
                "arguments": "{}",
                "index": 0,
            },
        ],
        "usage": {"inputTokens": 1, "outputTokens": 1, "costUsd": 0.01},
        "provenance": {"provider": "p", "model": "m", "region": "eu"},
        "responseId": "r1",
    }
    check_payload("assistant/message", data)
    check_payload("turn/start", {"turn": 1, "trigger": {**TRIGGER, "queued": 2}})
    check_payload(
        "todo/write", {"todos": [{"content": "x", "status": "pending", "id": 1}]}
    )


def test_unknown_types_are_not_checked() -> None:
    check_payload("compaction/marker", {"foo": "bar"})
    check_payload("x/y", 5)
    check_payload("x/y", None)


def test_deep_data_in_opaque_fields_is_not_walked() -> None:
    deep: list[Any] = []
    node = deep
    for _ in range(20_000):
        child: list[Any] = []
        node.append(child)
        node = child
    data = {
        "turn": 1,
        "step": 1,
        "callId": "c",
        "content": [],
        "isError": False,
        "meta": deep,
        "extra": deep,
    }
    check_payload("tool/result", data)


def test_absurdly_deep_tool_result_nesting_is_refused_not_crashing() -> None:
    block: dict[str, Any] = TEXT
    for _ in range(1000):
        block = {"type": "tool-result", "toolCallId": "c", "content": [block]}
    reason = invalid("user/message", {"content": [block], "source": USER})
    assert reason.endswith("Recursion error - maximum validation depth exceeded")


# --------------------------------------------------------------------------------------
# Rejected payloads: the first error, its path and pydantic's reason

INVALID: list[tuple[str, Any, str]] = [
    (
        "turn/start",
        {"turn": "1", "trigger": TRIGGER},
        "turn: Input should be a valid integer",
    ),
    (
        "turn/start",
        {"turn": True, "trigger": TRIGGER},
        "turn: Input should be a valid integer",
    ),
    (
        "turn/start",
        {"turn": 1.0, "trigger": TRIGGER},
        "turn: Input should be a valid integer",
    ),
    (
        "turn/start",
        {"turn": 1, "trigger": None},
        'trigger: Input should be a turn trigger: an object with a string "kind"',
    ),
    (
        "turn/start",
        5,
        "Input should be a valid dictionary or instance of TurnStartPayload",
    ),
    (
        "turn/start",
        {"turn": 1, "trigger": {"kind": "message"}},
        "trigger.message.source: Field required",
    ),
    (
        "turn/start",
        {"turn": 1, "trigger": "message"},
        'trigger: Input should be a turn trigger: an object with a string "kind"',
    ),
    (
        "turn/start",
        {"turn": 1, "trigger": {"kind": 1}},
        'trigger: Input should be a turn trigger: an object with a string "kind"',
    ),
    (
        "turn/end",
        {"turn": 1, "reason": {"kind": "error", "message": "x"}},
        "reason.error.step: Field required",
    ),
    (
        "turn/end",
        {"turn": 1, "reason": {"kind": "rejected"}},
        "reason.rejected.reason: Field required",
    ),
    (
        "turn/end",
        {"turn": 1, "reason": {"kind": "aborted", "reason": None}},
        "reason.aborted.reason: Input should be a valid string",
    ),
    ("step/start", {"turn": 1}, "step: Field required"),
    ("step/end", {"turn": 1, "step": "2"}, "step: Input should be a valid integer"),
    (
        "user/message",
        {"content": "hi", "source": USER},
        "content: Input should be a valid list",
    ),
    (
        "user/message",
        {"content": [{"type": "text", "text": None}], "source": USER},
        "content.0.text.text: Input should be a valid string",
    ),
    (
        "user/message",
        {"content": [], "source": {"kind": "plugin"}},
        "source.plugin.plugin: Field required",
    ),
    (
        "user/message",
        {"content": ["hi"], "source": USER},
        'content.0: Input should be a content block: an object with a string "type"',
    ),
    (
        "user/message",
        {"content": [{"text": "x"}], "source": USER},
        'content.0: Input should be a content block: an object with a string "type"',
    ),
    (
        "user/message",
        {"content": [], "source": {}},
        'source: Input should be a message source: an object with a string "kind"',
    ),
    (
        "prompt/blocked",
        {"content": [], "source": USER},
        "reason: Field required",
    ),
    (
        "context/message",
        {"content": [TEXT, {"type": "reasoning"}], "source": USER},
        "content.1.reasoning.text: Field required",
    ),
    (
        "assistant/message",
        {"turn": 1, "step": 1, "content": [], "usage": None},
        "usage: Input should be a valid dictionary or instance of TokenUsage",
    ),
    (
        "assistant/message",
        {"turn": 1, "step": 1, "content": [], "usage": {"inputTokens": 1}},
        "usage.outputTokens: Field required",
    ),
    (
        "assistant/message",
        {
            "turn": 1,
            "step": 1,
            "content": [],
            "usage": {**USAGE, "cacheReadTokens": "1"},
        },
        "usage.cacheReadTokens: Input should be a valid integer",
    ),
    (
        "assistant/message",
        {"turn": 1, "step": 1, "content": [], "provenance": {"provider": "x"}},
        "provenance.model: Field required",
    ),
    (
        "assistant/message",
        {"turn": 1, "step": 1},
        "content: Field required",
    ),
    (
        "assistant/message",
        {
            "turn": 1,
            "step": 1,
            "content": [{"type": "tool-call", "id": "c", "name": "n", "arguments": {}}],
        },
        "content.0.tool-call.arguments: Input should be a valid string",
    ),
    (
        "assistant/chunk",
        {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0}},
        "chunk.text-delta.text: Field required",
    ),
    (
        "assistant/chunk",
        {"turn": 1, "step": 1, "chunk": {"type": "block-start", "index": 0}},
        "chunk.block-start.blockType: Field required",
    ),
    (
        "assistant/chunk",
        {
            "turn": 1,
            "step": 1,
            "chunk": {
                "type": "tool-call-delta",
                "index": 0,
                "id": "c",
                "name": None,
                "argumentsDelta": "",
            },
        },
        "chunk.tool-call-delta.name: Input should be a valid string",
    ),
    (
        "assistant/chunk",
        {
            "turn": 1,
            "step": 1,
            "chunk": {"type": "finish", "reason": {"kind": "error"}},
        },
        "chunk.finish.reason.error.message: Field required",
    ),
    (
        "assistant/chunk",
        {"turn": 1, "step": 1, "chunk": {"type": "usage", "usage": {}}},
        "chunk.usage.usage.inputTokens: Field required",
    ),
    (
        "assistant/chunk",
        {
            "turn": 1,
            "step": 1,
            "chunk": {
                "type": "block-end",
                "index": 0,
                "block": {"type": "tool-call", "id": "c"},
            },
        },
        "chunk.block-end.block.tool-call.name: Field required",
    ),
    (
        "assistant/chunk",
        {"turn": 1, "step": 1, "chunk": None},
        'chunk: Input should be a stream chunk: an object with a string "type"',
    ),
    (
        "tool/call",
        {"turn": 1, "step": 1, "callId": "c", "name": "bash", "arguments": {"a": 1}},
        "arguments: Input should be a valid string",
    ),
    (
        "tool/result",
        {"turn": 1, "step": 1, "callId": "c", "content": []},
        "isError: Field required",
    ),
    (
        "tool/result",
        {"turn": 1, "step": 1, "callId": "c", "content": [], "isError": 0},
        "isError: Input should be a valid boolean",
    ),
    ("tool/result", result(error={"name": "x"}), "error.code: Field required"),
    (
        "tool/result",
        result({"type": "tool-result", "content": []}),
        "content.0.tool-result.toolCallId: Field required",
    ),
    (
        "tool/result",
        result(
            {"type": "tool-result", "toolCallId": "c", "content": [], "isError": "no"}
        ),
        "content.0.tool-result.isError: Input should be a valid boolean",
    ),
    (
        "steering/message",
        {"content": [TEXT], "source": USER},
        "turn: Field required",
    ),
    (
        "todo/write",
        {"todos": [{"content": "x", "status": "done"}]},
        "todos.0.status: Input should be 'pending', 'in_progress' or 'completed'",
    ),
    (
        "todo/write",
        {"todos": ({"content": "x", "status": "pending"},)},
        "todos: Input should be a valid list",
    ),
    ("compact/start", {}, "turn: Field required"),
    (
        "compact/summary",
        {
            "summary": [],
            "shadowedRange": {"start": 0},
            "shadowedSeqs": [],
            "shadowedTokenCount": 0,
        },
        "shadowedRange.end: Field required",
    ),
    (
        "compact/summary",
        {
            "summary": [],
            "shadowedRange": {"start": 0, "end": 1},
            "shadowedSeqs": ["1"],
            "shadowedTokenCount": 0,
        },
        "shadowedSeqs.0: Input should be a valid integer",
    ),
    (
        "compact/end",
        {"turn": 1, "error": None},
        "error: Input should be a valid string",
    ),
    (
        "hook/invoked",
        {"turn": 1, "point": "Stop", "dialect": "gemini", "handlerId": "h"},
        "dialect: Input should be 'claude' or 'codex'",
    ),
    (
        "hook/result",
        {"turn": 1, "point": "Stop", "handlerId": "h", "decision": "pass"},
        "durationMs: Field required",
    ),
    (
        "session/title",
        {"title": "t", "messageSeqs": [1], "source": {"kind": "provider"}},
        "source.provider.provider: Field required",
    ),
    (
        "session/title",
        {"title": "t", "source": {"kind": "fallback"}},
        "messageSeqs: Field required",
    ),
    (
        "session/title-llm-request",
        {
            "titleProvider": "p",
            "messageSeqs": [1],
            "route": {"provider": "p", "model": "m"},
            "system": "s",
            "messages": [{"role": "tool", "content": []}],
            "maxTokens": 5,
        },
        "messages.0.role: Input should be 'system', 'user' or 'assistant'",
    ),
    (
        "request/header",
        {"header": {"config": {"provider": "p"}}, "reason": "initial"},
        "header.config.model: Field required",
    ),
    (
        "request/header",
        {"header": {"config": {"provider": "p", "model": "m"}}},
        "reason: Field required",
    ),
]


@pytest.mark.parametrize(("event_type", "data", "reason"), INVALID)
def test_invalid_payloads_name_the_first_bad_field(
    event_type: str, data: Any, reason: str
) -> None:
    assert invalid(event_type, data) == reason


def test_every_registered_type_has_an_invalid_example() -> None:
    assert {event_type for event_type, _, _ in INVALID} == set(PAYLOAD_MODELS)


def test_snake_case_keys_are_not_the_json_keys() -> None:
    data = {"turn": 1, "step": 1, "call_id": "c", "name": "n", "arguments": "{}"}
    assert invalid("tool/call", data) == "callId: Field required"


def test_the_payload_error_keeps_pydantic_s_error_as_its_cause() -> None:
    with pytest.raises(PayloadError) as caught:
        check_payload("step/start", {"turn": 1})
    assert isinstance(caught.value.__cause__, ValidationError)


# --------------------------------------------------------------------------------------
# Registration


class _Ping(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")

    count: int


def test_a_registered_plugin_type_is_checked() -> None:
    check_payload("test/ping", {"count": "x"})  # unknown: not checked
    register_payload("test/ping", _Ping)
    try:
        assert PAYLOAD_MODELS["test/ping"] is _Ping
        check_payload("test/ping", {"count": 1, "extra": True})
        assert invalid("test/ping", {"count": "1"}) == (
            "count: Input should be a valid integer"
        )
        assert "test/ping" in json_schema()
    finally:
        del vocabulary._REGISTRY["test/ping"]


def test_core_types_cannot_be_re_registered() -> None:
    with pytest.raises(PayloadError, match="core session event type"):
        register_payload("turn/start", _Ping)
    assert PAYLOAD_MODELS["turn/start"] is TurnStartPayload


# --------------------------------------------------------------------------------------
# Legacy shapes (docs/persistence.md#format-versions-and-legacy-shapes)


def test_a_request_header_delta_is_refused() -> None:
    with pytest.raises(UnsupportedSessionFormatError) as caught:
        check_legacy("s1", "request/header-delta", {"any": 1}, 7)
    assert str(caught.value) == (
        'session "s1" contains unsupported legacy request/header-delta event at seq 7'
    )


def test_a_fallback_request_header_is_refused() -> None:
    data = {"header": {"config": {"provider": "p", "model": "m"}}, "reason": "fallback"}
    check_payload("request/header", data)  # the shape is fine; the legacy check refuses
    with pytest.raises(UnsupportedSessionFormatError) as caught:
        check_legacy("s1", "request/header", data, 4)
    assert str(caught.value) == (
        'session "s1" contains unsupported legacy request/header reason "fallback" '
        "at seq 4"
    )


@pytest.mark.parametrize(
    ("event_type", "data"),
    [
        ("request/header", {"header": {}, "reason": "initial"}),
        ("request/header", {"header": {}, "reason": "resume"}),
        ("request/header", "fallback"),
        ("request/header", None),
        ("turn/start", {"reason": "fallback"}),
        ("x/y", {"reason": "fallback"}),
    ],
)
def test_current_shapes_pass_the_legacy_check(event_type: str, data: Any) -> None:
    check_legacy("s1", event_type, data, 0)


# --------------------------------------------------------------------------------------
# Header, summary, meta, message


def fixture_headers() -> list[dict[str, Any]]:
    headers = []
    for line in fixture_lines():
        if line["type"] == "session":
            header = dict(line)
            del header["type"]
            headers.append(header)
    return headers


def test_fixture_headers_round_trip_through_the_header_model() -> None:
    headers = fixture_headers()
    assert headers
    for header in headers:
        model = SessionHeader.model_validate(header)
        assert model.model_dump() == header
        assert list(model.model_dump()) == list(header)


def test_absent_header_keys_stay_absent() -> None:
    header = {"version": 0, "id": "bare", "createdAt": 1234}
    model = SessionHeader.model_validate(header)
    assert model.model_dump() == header
    assert model.model_dump_json() == '{"version":0,"id":"bare","createdAt":1234}'
    assert model.created_at == 1234


@pytest.mark.parametrize(
    "header",
    [
        {"version": 0, "id": "s", "createdAt": "1"},
        {"version": True, "id": "s", "createdAt": 1},
        {"version": 0, "id": "s", "createdAt": 1.5},
        {"version": 0, "id": 5, "createdAt": 1},
        {"version": 0, "id": "s"},
        {"version": 0, "id": "s", "createdAt": 1, "cwd": None},
        {"version": 0, "id": "s", "createdAt": 1, "parentSession": 1},
        {"version": 0, "id": "s", "createdAt": 1, "seedLength": -1},
        {"version": 0, "id": "s", "createdAt": 1, "delegationDepth": -1},
        {"version": 0, "id": "s", "createdAt": 1, "seedLength": "5"},
    ],
)
def test_bad_headers_are_refused(header: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        SessionHeader.model_validate(header)


def test_summary_and_meta_use_the_json_keys_and_omit_absent_ones() -> None:
    summary = {"updatedAt": 5, "title": "t"}
    assert SessionSummary.model_validate(summary).model_dump() == summary
    meta = {
        "version": 0,
        "id": "s",
        "createdAt": 1,
        "seedLength": 3,
        "updatedAt": 5,
        "firstPrompt": "hello",
    }
    model = SessionMeta.model_validate(meta)
    assert model.model_dump() == meta
    assert model.first_prompt == "hello"
    with pytest.raises(ValidationError):
        SessionMeta.model_validate({"version": 0, "id": "s", "createdAt": 1})


def test_message_model() -> None:
    message = {"role": "assistant", "content": [TEXT, {"type": "image"}]}
    model = Message.model_validate(message)
    assert isinstance(model.content[0], TextBlock)
    assert type(model.content[1]).__name__ == "UnknownContentBlock"
    assert model.model_dump() == message
    with pytest.raises(ValidationError):
        Message.model_validate({"role": "tool", "content": []})


def test_models_accept_their_own_instances_inside_unions() -> None:
    block = TextBlock.model_validate(TEXT)
    nested = ToolResultBlock.model_validate(
        {"type": "tool-result", "toolCallId": "c", "content": [block]}
    )
    message = AssistantMessagePayload.model_validate(
        {
            "turn": 1,
            "step": 1,
            "content": [nested],
            "usage": TokenUsage.model_validate(USAGE),
        }
    )
    assert message.model_dump()["content"][0]["content"] == [TEXT]
    assert message.model_dump()["usage"] == USAGE


def test_models_are_immutable() -> None:
    block = TextBlock.model_validate(TEXT)
    with pytest.raises(ValidationError):
        block.text = "changed"  # type: ignore[misc]


# --------------------------------------------------------------------------------------
# JSON schema


def test_the_json_schema_covers_every_type_and_agrees_on_the_fixtures() -> None:
    jsonschema = pytest.importorskip("jsonschema")  # not a declared dependency
    schemas = json_schema()
    assert set(schemas) == set(PAYLOAD_MODELS)
    assert "callId" in schemas["tool/result"]["properties"]
    validators: dict[str, Any] = {}
    for event_type, schema in schemas.items():
        jsonschema.Draft202012Validator.check_schema(schema)
        validators[event_type] = jsonschema.Draft202012Validator(schema)
    for line in fixture_lines():
        if line["type"] in validators:
            validators[line["type"]].validate(line["data"])
    for event_type, data in VALID + UNKNOWN_KINDS:
        validators[event_type].validate(data)
    # A known kind that is malformed matches no variant, as in the payload check.
    bad = {"content": [{"type": "text"}], "source": USER}
    assert not validators["user/message"].is_valid(bad)


@pytest.mark.parametrize("key", ["\ud800", "a\udfffb", "\ud83d\ude00"])
def test_keys_with_lone_surrogates_are_accepted_at_any_level(key: str) -> None:
    # JavaScript object keys hold lone surrogates; pydantic refuses them as extras.
    data = {
        "content": [{"type": "text", "text": "x", key: 1}],
        "turn": 1,
        "step": 1,
        key: {key: [key]},
    }
    before = copy.deepcopy(data)
    vocabulary.check_payload("assistant/message", data)
    assert data == before


def test_a_surrogate_key_does_not_hide_a_real_payload_error() -> None:
    with pytest.raises(PayloadError, match="content"):
        vocabulary.check_payload(
            "assistant/message", {"\ud800": 1, "content": 5, "turn": 1, "step": 1}
        )
