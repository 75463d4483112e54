"""The header, summary, meta and message models: JSON keys, absent keys,
unions and immutability."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from pydantic import ValidationError

from agentlog.domain.payloads import (
    TURN_MODELS,
    AssistantMessagePayload,
    Message,
    SessionHeader,
    SessionMeta,
    SessionSummary,
    TextBlock,
    TokenUsage,
    ToolResultBlock,
)
from agentlog.domain.vocabulary import PAYLOAD_MODELS
from tests.unit.vocabulary_support import (
    TEXT,
    USAGE,
    fixture_lines,
)

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
# Built at import


BUILT_AT_IMPORT = """
import json
from agentlog.domain import payloads
from agentlog.domain.vocabulary import PAYLOAD_MODELS
print(json.dumps({m.__name__: m.__pydantic_complete__ for m in PAYLOAD_MODELS.values()}))
"""


@pytest.mark.slow  # a fresh interpreter: this process has built every model by now
def test_the_turn_models_alone_are_built_at_import() -> None:
    """A process's first append does not pay for building its models; a command
    that validates nothing does not pay for the other models."""
    done = subprocess.run(
        [sys.executable, "-c", BUILT_AT_IMPORT],
        capture_output=True,
        text=True,
        check=True,
    )
    complete = json.loads(done.stdout)
    built = {model.__name__ for model in TURN_MODELS}
    assert {name for name, ok in complete.items() if ok} == built


@pytest.mark.parametrize(
    "event_type",
    [
        "turn/start",
        "turn/end",
        "step/start",
        "step/end",
        "user/message",
        "assistant/chunk",
        "assistant/message",
        "tool/call",
        "tool/result",
    ],
)
def test_every_type_of_an_agent_turn_has_a_built_model(event_type: str) -> None:
    assert PAYLOAD_MODELS[event_type] in TURN_MODELS
