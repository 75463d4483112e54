"""Model-facing tools: an agent searches and reads its own history, and nothing else.

The five read-only tools of the original harness (``session_search``,
``session_event_search``, ``session_trace``, ``session_event_trace``,
``session_event_read``), bound to a caller session's scope; docs/tools.md describes
them. :class:`ModelTools` runs them; :func:`openai_tools` and
:func:`anthropic_tools` export their definitions for function calling; the MCP
server (``agentlog mcp``) publishes the same definitions.
"""

from __future__ import annotations

from agentlog.application.model_tools.collect import DEFAULT_MAX_SEARCH_RESULTS
from agentlog.application.model_tools.definitions import (
    PROMPT_TEXT,
    TOOLS,
    ToolDefinition,
    anthropic_tools,
    openai_tools,
    tool_named,
)
from agentlog.application.model_tools.tools import FAILED, ModelTools, ToolResult

__all__ = [
    "DEFAULT_MAX_SEARCH_RESULTS",
    "FAILED",
    "PROMPT_TEXT",
    "TOOLS",
    "ModelTools",
    "ToolDefinition",
    "ToolResult",
    "anthropic_tools",
    "openai_tools",
    "tool_named",
]
