"""The model tools served over the Model Context Protocol (docs/tools.md#mcp).

A low-level :class:`mcp.server.lowlevel.Server` publishes the five tool definitions
exactly as :mod:`agentlog.application.model_tools.definitions` generates them (the
SDK's decorator API would derive its own schemas from function signatures), and
answers each call with :meth:`ModelTools.call`'s text. The store reads run in a
worker thread, so a long search never stalls the protocol (pings, cancellation).
Over stdio the server lives as long as its client's pipe; over streamable HTTP it
listens on 127.0.0.1 only.
"""

from __future__ import annotations

import logging
from importlib import metadata
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from agentlog.application.model_tools import PROMPT_TEXT, TOOLS
from agentlog.domain.visible import printable

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from agentlog.application.model_tools import ModelTools

SERVER_NAME: Final = "agentlog"
HTTP_HOST: Final = "127.0.0.1"
HTTP_PATH: Final = "/mcp"


def _version() -> str:
    try:
        return metadata.version("agentlog")
    except metadata.PackageNotFoundError:
        return "0"


def tool_listing() -> list[types.Tool]:
    """The five tools as MCP lists them: our schemas, marked read-only."""
    hints = types.ToolAnnotations(
        read_only_hint=True, destructive_hint=False, open_world_hint=False
    )
    return [
        types.Tool(
            name=tool.name,
            description=tool.description,
            input_schema=tool.input_schema(),
            annotations=hints,
        )
        for tool in TOOLS
    ]


def build_server(tools: ModelTools) -> Server[Any]:
    """An MCP server whose tools are ``tools``, bound to their caller."""

    async def list_tools(
        ctx: ServerRequestContext[Any, Any],
        params: types.PaginatedRequestParams | None,
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_listing())

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        result = await anyio.to_thread.run_sync(
            tools.call, params.name, params.arguments
        )
        content: list[types.ContentBlock] = [types.TextContent(text=result.text)]
        return types.CallToolResult(content=content, is_error=result.is_error)

    return Server(
        SERVER_NAME,
        version=_version(),
        instructions=PROMPT_TEXT,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one client over this process's stdin and stdout until it hangs up:
    closes stdin, or stops reading stdout (a client that dies with a request
    pending; the SDK's writer then fails with ``BrokenPipeError``)."""
    try:
        async with stdio_server() as (read_stream, write_stream):
            options = server.create_initialization_options()
            await server.run(read_stream, write_stream, options)
    except* BrokenPipeError:
        pass


def serve_http(server: Server[Any], port: int) -> None:
    """Serve streamable HTTP at ``http://127.0.0.1:<port>/mcp`` until stopped."""
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=HTTP_HOST)
    uvicorn.run(app, host=HTTP_HOST, port=port, log_level="warning")


class VisibleFormatter(logging.Formatter):
    """Log lines on stderr with data's control characters shown as escapes."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


def log_to_stderr() -> None:
    """Warnings of agentlog (a tool's logged failure detail) on stderr, which an
    MCP client keeps apart from the protocol on stdout."""
    handler = logging.StreamHandler()
    handler.setFormatter(VisibleFormatter("agentlog mcp: %(levelname)s %(message)s"))
    logger = logging.getLogger("agentlog")
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
