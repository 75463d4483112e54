"""Tool definitions: one pydantic source, valid JSON Schema in every export, and
the schema and the validation agree."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from agentlog.application.model_tools import (
    TOOLS,
    anthropic_tools,
    openai_tools,
    tool_named,
)
from agentlog.application.model_tools.arguments import parse_arguments
from agentlog.application.model_tools.definitions import PROMPT_TEXT, ToolSchema
from agentlog.application.model_tools.operations import OPERATIONS
from agentlog.domain.errors import ModelToolError

NAMES = [
    "session_search",
    "session_event_search",
    "session_trace",
    "session_event_trace",
    "session_event_read",
]


def test_the_five_tools_of_the_original() -> None:
    assert [tool.name for tool in TOOLS] == NAMES
    assert set(OPERATIONS) == set(NAMES)
    assert tool_named("session_trace") is TOOLS[2]
    assert tool_named("nope") is None and tool_named(3) is None
    for name in NAMES:
        assert name in PROMPT_TEXT


def test_exports_are_the_pydantic_source_as_valid_json_schema() -> None:
    openai = openai_tools()
    anthropic = anthropic_tools()
    assert [item["function"]["name"] for item in openai] == NAMES
    assert [item["name"] for item in anthropic] == NAMES
    for tool, o, a in zip(TOOLS, openai, anthropic, strict=True):
        source = tool.arguments.model_json_schema(schema_generator=ToolSchema)
        assert o == {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": source,
            },
        }
        assert a == {
            "name": tool.name,
            "description": tool.description,
            "input_schema": source,
        }
        jsonschema.Draft202012Validator.check_schema(source)
        assert source["type"] == "object"
        assert source["additionalProperties"] is False
        assert "title" not in json.dumps(source)
        assert "null" not in json.dumps(source)
        for prop in source["properties"].values():
            assert prop["description"]
    # A fresh copy each time: a caller changing one changes nothing else.
    openai[0]["function"]["parameters"]["properties"].clear()
    assert openai_tools()[0]["function"]["parameters"]["properties"]


def test_flat_snake_case_arguments_of_the_original() -> None:
    properties = {tool.name: list(tool.input_schema()["properties"]) for tool in TOOLS}
    assert properties == {
        "session_search": [
            "query",
            "session_ids",
            "created_at_from",
            "created_at_to",
            "parent_session_ids",
            "include_root_sessions",
            "availability",
            "event_seq_from",
            "event_seq_to",
            "event_time_from",
            "event_time_to",
            "event_types",
            "event_surfaces",
        ],
        "session_event_search": [
            "session_id",
            "query",
            "seq_from",
            "seq_to",
            "time_from",
            "time_to",
            "event_types",
            "surfaces",
        ],
        "session_trace": ["session_id"],
        "session_event_trace": ["session_id", "seq"],
        "session_event_read": ["session_id", "seq", "before", "after"],
    }
    required = {tool.name: tool.input_schema().get("required", []) for tool in TOOLS}
    assert required == {
        "session_search": ["query"],
        "session_event_search": ["query"],
        "session_trace": [],
        "session_event_trace": ["seq"],
        "session_event_read": ["seq"],
    }


SAMPLES: list[tuple[str, dict[str, Any]]] = [
    ("session_search", {"query": "x"}),
    ("session_search", {"query": "x", "event_surfaces": ["current", "log-only"]}),
    ("session_search", {"query": "x", "availability": ["live"], "session_ids": ["a"]}),
    ("session_search", {"query": "x", "event_seq_from": 0, "event_seq_to": 2**63 - 1}),
    ("session_search", {"query": "x", "created_at_from": "2026-05-01T12:00:00Z"}),
    ("session_event_search", {"query": "x", "session_id": "a", "seq_from": 3}),
    ("session_trace", {}),
    ("session_event_trace", {"seq": 0}),
    ("session_event_read", {"seq": 4, "before": 50, "after": 0}),
    # ...and what both refuse:
    ("session_search", {}),
    ("session_search", {"query": 3}),
    ("session_search", {"query": "x", "surprise": 1}),
    ("session_search", {"query": "x", "event_surfaces": ["visible"]}),
    ("session_search", {"query": "x", "session_ids": []}),
    ("session_search", {"query": "x", "event_seq_from": -1}),
    ("session_search", {"query": "x", "include_root_sessions": "yes"}),
    ("session_event_trace", {}),
    ("session_event_trace", {"seq": 2**63}),
    ("session_event_read", {"seq": 1, "before": 51}),
    ("session_event_read", {"seq": 1.5}),
    ("session_event_read", {"seq": True}),
]


@pytest.mark.parametrize(("name", "arguments"), SAMPLES)
def test_the_schema_and_the_validation_agree(
    name: str, arguments: dict[str, Any]
) -> None:
    tool = tool_named(name)
    assert tool is not None
    schema_ok = jsonschema.Draft202012Validator(tool.input_schema()).is_valid(arguments)
    try:
        parse_arguments(name, tool.arguments, arguments)
        model_ok = True
    except ModelToolError:
        model_ok = False
    assert schema_ok == model_ok
