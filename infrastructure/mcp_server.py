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
import signal
from importlib import metadata
from typing import TYPE_CHECKING, Any, Final, NoReturn, Protocol

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from agentlog.application.model_tools import PROMPT_TEXT, TOOLS
from agentlog.domain.visible import printable

if TYPE_CHECKING:
    from collections.abc import AsyncIterable, Callable

    from anyio.abc import TaskStatus
    from anyio.streams.memory import MemoryObjectSendStream
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


class _Replies(Protocol):
    """Where the server writes its messages (the stdio transport's stream)."""

    async def send(self, item: SessionMessage, /) -> None: ...


async def serve_stdio(
    server: Server[Any], on_signal: Callable[[int], NoReturn] | None = None
) -> None:
    """Serve one client over this process's stdin and stdout until it hangs up:
    closes stdin, or stops reading stdout (a client that dies with a request
    pending; the SDK's writer then fails with ``BrokenPipeError``).

    A line that is no JSON-RPC message gets JSON-RPC's error reply (see
    :func:`answer_unreadable`); the SDK alone would drop it unanswered.

    ``on_signal`` is called with SIGINT or SIGTERM when one arrives, from the
    event loop, and ends the process. The loop receives the signal itself: a
    Python handler raising in whichever task it interrupts would leave that
    task's exception group behind, printed by ``asyncio.run`` at shutdown.
    """
    try:
        async with anyio.create_task_group() as watch:
            if on_signal is not None:
                await watch.start(_watch_stop_signals, on_signal)
            async with stdio_server() as (read_stream, write_stream):
                options = server.create_initialization_options()
                send, messages = anyio.create_memory_object_stream[
                    SessionMessage | Exception
                ]()
                async with anyio.create_task_group() as group:
                    group.start_soon(answer_unreadable, read_stream, send, write_stream)
                    await server.run(messages, write_stream, options)
                    group.cancel_scope.cancel()
            watch.cancel_scope.cancel()
    except* BrokenPipeError:
        pass


async def _watch_stop_signals(
    on_signal: Callable[[int], NoReturn],
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()
        async for signum in signals:
            on_signal(signum)


async def answer_unreadable(
    lines: AsyncIterable[SessionMessage | Exception],
    messages: MemoryObjectSendStream[SessionMessage | Exception],
    replies: _Replies,
) -> None:
    """Pass each message read on to the server; answer each unreadable line.

    The SDK's stdio reader hands on a line it cannot read as a message as the
    exception that says why, and its server only logs that. JSON-RPC 2.0 wants
    a reply with a null id: -32700 "Parse error" for a line that is not JSON
    (invalid UTF-8 is decoded with replacement characters first; a lone
    surrogate escape, a NUL, nesting past the parser's depth limit are not
    JSON), -32600 "Invalid Request" for JSON that is not a message.
    """
    async with messages:
        async for line in lines:
            if not isinstance(line, Exception):
                await messages.send(line)
                continue
            try:
                await replies.send(SessionMessage(unreadable_reply(line)))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return  # the server is done writing; the client is going


def unreadable_reply(error: Exception) -> types.JSONRPCError:
    """The JSON-RPC error that answers a line the SDK could not read."""
    unparsable = isinstance(error, ValidationError) and any(
        detail["type"] == "json_invalid"
        for detail in error.errors(include_url=False, include_input=False)
    )
    if unparsable:
        code, message = types.PARSE_ERROR, "Parse error"
    else:
        code, message = types.INVALID_REQUEST, "Invalid Request"
    return types.JSONRPCError(
        jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=message)
    )


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
