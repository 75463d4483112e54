"""The payload check accepts every valid payload, unchanged; the open sets stay
open (unknown kinds, extra keys, unknown types, deep opaque data); the JSON
schema agrees."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agentlog.domain import vocabulary
from agentlog.domain.errors import PayloadError
from agentlog.domain.vocabulary import (
    PAYLOAD_MODELS,
    check_payload,
    json_schema,
)
from tests.unit.vocabulary_support import (
    TEXT,
    TRIGGER,
    USAGE,
    USER,
    fixture_lines,
    invalid,
    result,
)

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
