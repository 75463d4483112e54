"""The five tools' definitions and their function-calling exports, from one source.

Each :class:`ToolDefinition` names a tool, says what it does (the original's
descriptions) and points at its arguments model; the JSON Schema every format
publishes is that model's, generated once by :func:`input_schema`. The exports
(:func:`openai_tools`, :func:`anthropic_tools`) and the MCP server's listing are
shapes around the same three values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pydantic.json_schema import GenerateJsonSchema

from agentlog.application.model_tools.arguments import (
    EventReadArguments,
    EventSearchArguments,
    EventTargetArguments,
    SessionSearchArguments,
    SessionTargetArguments,
    ToolArguments,
)

if TYPE_CHECKING:
    from pydantic.json_schema import JsonSchemaMode, JsonSchemaValue
    from pydantic_core import CoreSchema

PROMPT_TEXT: Final = (
    "Use session_search to find relevant work from prior sessions, or "
    "session_event_search to search earlier events in one session. Search results "
    "are cursor-free and workspace-scoped. Follow a useful hit with session_trace, "
    "session_event_trace, or session_event_read when you need lineage, "
    "relationships, or exact data."
)
"""Guidance for a model using the tools (the MCP server's instructions)."""


class ToolSchema(GenerateJsonSchema):
    """JSON Schema as function-calling formats want it: no titles, no docstrings,
    and no ``"default": null`` for an argument that may simply be left out."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def default_schema(self, schema: Any) -> JsonSchemaValue:
        value = super().default_schema(schema)
        if "default" in value and value["default"] is None:
            del value["default"]
        return value

    def generate(
        self, schema: CoreSchema, mode: JsonSchemaMode = "validation"
    ) -> JsonSchemaValue:
        value = super().generate(schema, mode)
        value.pop("title", None)
        value.pop("description", None)
        return value


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """One tool: its name, what it does, and the model of its arguments."""

    name: str
    description: str
    arguments: type[ToolArguments]

    def input_schema(self) -> dict[str, Any]:
        """The arguments' JSON Schema (a fresh copy each call)."""
        return self.arguments.model_json_schema(schema_generator=ToolSchema)


SESSION_SEARCH: Final = ToolDefinition(
    "session_search",
    "Search prior sessions in the caller workspace and return the strongest "
    "matching event from each session.",
    SessionSearchArguments,
)
SESSION_EVENT_SEARCH: Final = ToolDefinition(
    "session_event_search",
    "Search prior events in one authorized session; the current session excludes "
    "the step performing this call.",
    EventSearchArguments,
)
SESSION_TRACE: Final = ToolDefinition(
    "session_trace",
    "Read the authorized session lineage around one session, including complete "
    "visible ancestor and descendant relationships.",
    SessionTargetArguments,
)
SESSION_EVENT_TRACE: Final = ToolDefinition(
    "session_event_trace",
    "Read every direct replacement and provenance relationship for one event in "
    "an authorized session.",
    EventTargetArguments,
)
SESSION_EVENT_READ: Final = ToolDefinition(
    "session_event_read",
    "Read one full unabridged event and optional neighboring raw-event summaries "
    "from an authorized session.",
    EventReadArguments,
)
TOOLS: Final = (
    SESSION_SEARCH,
    SESSION_EVENT_SEARCH,
    SESSION_TRACE,
    SESSION_EVENT_TRACE,
    SESSION_EVENT_READ,
)
"""The five read-only tools, in the order they are listed."""


def tool_named(name: object) -> ToolDefinition | None:
    """The definition called ``name``; ``None`` for any other value."""
    return next((tool for tool in TOOLS if tool.name == name), None)


def openai_tools() -> list[dict[str, Any]]:
    """The tools in OpenAI's function-calling format (``tools=`` of a request)."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.input_schema(),
            },
        }
        for tool in TOOLS
    ]


def anthropic_tools() -> list[dict[str, Any]]:
    """The tools in Anthropic's format (``tools=`` of a Messages request)."""
    return [
        {
            "name": tool.name,
            "description": tool.description,
            "input_schema": tool.input_schema(),
        }
        for tool in TOOLS
    ]
