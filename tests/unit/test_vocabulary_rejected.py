"""The payload check refuses an invalid payload naming its first bad field,
with pydantic's reason."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from agentlog.domain.errors import PayloadError
from agentlog.domain.vocabulary import (
    PAYLOAD_MODELS,
    check_payload,
)
from tests.unit.vocabulary_support import (
    TEXT,
    TRIGGER,
    USAGE,
    USER,
    invalid,
    result,
)

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
