"""``agentlog mcp`` end to end, with the MCP SDK's own client over stdio (SQLite)."""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from agentlog.application.model_tools import PROMPT_TEXT, TOOLS
from agentlog.infrastructure.store import open_sessions
from tests.tools.support import SECRETS, build

pytestmark = pytest.mark.slow  # every test runs an agentlog mcp server in a process

COMMAND = [sys.executable, "-m", "agentlog.infrastructure.cli", "mcp"]


def mcp(*args: str) -> subprocess.CompletedProcess[str]:
    """``agentlog mcp`` with these arguments, no input, its output captured."""
    return subprocess.run(
        [*COMMAND, *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )


@pytest.fixture
def store(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'agentlog.db'}"
    app = open_sessions(url, create=True)
    try:
        build(app)
    finally:
        app.close()
    return url


def run_client(
    store: str, tmp_path: Path, calls: list[tuple[str, Any]]
) -> dict[str, Any]:
    """Start the server, list its tools and make ``calls``; what came back."""
    seen: dict[str, Any] = {"calls": []}

    async def session() -> None:
        params = StdioServerParameters(
            command=COMMAND[0],
            args=[*COMMAND[1:], "--caller", "me", "--store", store],
            cwd=tmp_path,
        )
        with (tmp_path / "server.err").open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as client,
            ):
                init = await client.initialize()
                seen["instructions"] = init.instructions
                seen["tools"] = (await client.list_tools()).tools
                for name, arguments in calls:
                    result = await client.call_tool(name, arguments)
                    texts = [getattr(block, "text", None) for block in result.content]
                    seen["calls"].append((result.is_error, texts))

    anyio.run(session)
    seen["stderr"] = (tmp_path / "server.err").read_text()
    return seen


def test_list_and_call_every_tool_over_stdio(store: str, tmp_path: Path) -> None:
    calls: list[tuple[str, Any]] = [
        ("session_search", {"query": "parser"}),
        ("session_event_search", {"query": "parser"}),
        ("session_trace", {"session_id": "plan-fork"}),
        ("session_event_trace", {"session_id": "plan", "seq": 1}),
        ("session_event_read", {"session_id": "plan", "seq": 1, "after": 1}),
        ("session_event_read", {"seq": "one", "before": 99}),
        ("session_trace", {"session_id": "never-was"}),
        ("session_delete", {}),
        ("session_trace", None),
    ]
    seen = run_client(store, tmp_path, calls)
    listed = {tool.name: tool for tool in seen["tools"]}
    assert list(listed) == [tool.name for tool in TOOLS]
    for tool in TOOLS:
        published = listed[tool.name]
        assert published.description == tool.description
        assert published.input_schema == tool.input_schema()
        assert published.annotations is not None
        assert published.annotations.read_only_hint is True
    assert seen["instructions"] == PROMPT_TEXT
    results = seen["calls"]
    assert all(len(texts) == 1 for _, texts in results)
    ok = [(error, texts[0]) for error, texts in results]
    assert ok[0][0] is False and "1. Session plan — Parser rewrite plan" in ok[0][1]
    assert "Session me" not in ok[0][1]
    assert ok[1][0] is False and ok[1][1].startswith("Session me — untitled\n")
    assert ok[2][0] is False and "- plan — Parser rewrite plan | " in ok[2][1]
    assert ok[3][0] is False and "Replaced by: " in ok[3][1]
    assert ok[4][0] is False and '"type": "user/message"' in ok[4][1]
    assert ok[5] == (
        True,
        "invalid arguments for session_event_read: seq must be an integer; "
        "before must be at most 50",
    )
    assert ok[6] == (True, 'session "never-was" not found')
    assert ok[7][0] is True and ok[7][1].startswith('unknown tool "session_delete"')
    assert ok[8][0] is False and ok[8][1].startswith("Session me — untitled")
    assert "Traceback" not in seen["stderr"]


def test_mcp_never_creates_a_store(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    run = mcp("--caller", "me", "--store", f"sqlite:///{missing}")
    assert run.returncode == 1
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("no store at ")
    assert not missing.exists()


def test_an_unknown_caller_fails_closed_at_startup(store: str) -> None:
    run = mcp("--caller", "nobody\x1b[2J", "--store", store)
    assert run.returncode == 1
    assert run.stdout == ""
    assert run.stderr == (
        'caller session "nobody\\x1b[2J" not found; no scope can be derived\n'
    )


def test_help_works() -> None:
    run = mcp("--help")
    assert run.returncode == 0
    assert "--caller" in run.stdout and "--http" in run.stdout


def test_the_command_line_loads_the_sdk_only_for_mcp() -> None:
    code = "import sys, agentlog.infrastructure.cli; print('mcp' in sys.modules)"
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert run.stdout.strip() == "False"
    from agentlog.infrastructure.cli.mcp import HTTP_URL
    from agentlog.infrastructure.mcp_server import HTTP_HOST, HTTP_PATH

    assert f"http://{HTTP_HOST}:PORT{HTTP_PATH}" == HTTP_URL


INITIALIZE = (
    '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": '
    '{"protocolVersion": "2025-06-18", "capabilities": {}, '
    '"clientInfo": {"name": "test", "version": "0"}}}\n'
)


@contextlib.contextmanager
def serving(store: str) -> Iterator[subprocess.Popen[str]]:
    """``agentlog mcp`` over pipes, past its answer to ``initialize``; killed at
    the end if still running."""
    server = subprocess.Popen(
        [*COMMAND, "--caller", "me", "--store", store],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        server.stdin.write(INITIALIZE)
        server.stdin.flush()
        assert '"id":1' in server.stdout.readline().replace(" ", "")  # serving
        yield server
    finally:
        if server.poll() is None:
            server.kill()
        with contextlib.suppress(BrokenPipeError):
            server.stdin.close()


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=str)
def test_a_stop_signal_ends_the_server_while_the_client_holds_the_pipe(
    store: str, stop: signal.Signals
) -> None:
    """One line and exit 130, never the traceback of an exception group (the
    event loop receives the signal; a Python handler raising in whichever task
    it interrupted left that task's failure for asyncio to print)."""
    with serving(store) as server:
        server.send_signal(stop)
        returncode = server.wait(timeout=60)  # a bound, not a measurement
        assert returncode == 130
        assert server.stderr is not None
        assert server.stderr.read() == f"interrupted by {stop.name}\n"


def test_a_client_that_hangs_up_with_a_request_pending_ends_the_server_quietly(
    store: str,
) -> None:
    """A client that dies with a request pending (its end of the server's stdout
    closed first, then stdin) has hung up: the server ends with status 0 and
    writes nothing on stderr (it was a traceback of an exception group holding
    ``BrokenPipeError``, status 1)."""
    with serving(store) as server:
        assert server.stdin is not None and server.stdout is not None
        server.stdout.close()
        server.stdin.write('{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n')
        server.stdin.flush()
        server.stdin.close()
        returncode = server.wait(timeout=60)  # a bound, not a measurement
        assert server.stderr is not None
        assert (returncode, server.stderr.read()) == (0, "")


@pytest.mark.parametrize("closed", [0, 1])
def test_a_closed_stdin_or_stdout_is_one_line(store: str, closed: int) -> None:
    """Started with fd 0 or 1 closed (``agentlog mcp ... <&-``), the stdio server
    has no pipe: one line and exit 1, not the SDK's AttributeError traceback."""
    result = subprocess.run(
        [*COMMAND, "--caller", "me", "--store", store],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=lambda: os.close(closed),
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "agentlog mcp serves MCP on stdin and stdout, and "
        f"{'stdin' if closed == 0 else 'stdout'} is closed (--http serves without them)"
    ]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_http_on_a_port_in_use_is_one_line_and_exit_1(store: str) -> None:
    """The web server's start-up failure is its one line and exit 1 (it was exit
    3, uvicorn's own status)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        result = mcp("--caller", "me", "--store", store, "--http", "--port", port)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "address already in use" in lines[0], result.stderr


def test_streamable_http_on_loopback(store: str, tmp_path: Path) -> None:
    port = free_port()
    server = subprocess.Popen(
        [*COMMAND, "--caller", "me", "--store", store, "--http", "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(600):  # wait until it listens (bounded; not a measurement)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, server.stderr.read()  # type: ignore[union-attr]
                time.sleep(0.1)
        seen: dict[str, Any] = {}

        async def session() -> None:
            url = f"http://127.0.0.1:{port}/mcp"
            async with (
                streamable_http_client(url) as (read, write, *_),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                seen["tools"] = [t.name for t in (await client.list_tools()).tools]
                seen["trace"] = await client.call_tool("session_trace", {})

        anyio.run(session)
        assert seen["tools"] == [tool.name for tool in TOOLS]
        assert seen["trace"].content[0].text.startswith("Session me — untitled")
        # Another Host header (DNS rebinding) is refused.
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request(
            "POST", "/mcp", body=INITIALIZE, headers={"Host": "evil.example:80"}
        )
        assert connection.getresponse().status >= 400
        connection.close()
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_out_of_scope_over_mcp_reads_as_missing(store: str, tmp_path: Path) -> None:
    calls: list[tuple[str, Any]] = []
    for session_id in ("alien", "never-was"):
        calls += [
            ("session_event_search", {"session_id": session_id, "query": "parser"}),
            ("session_trace", {"session_id": session_id}),
            ("session_event_trace", {"session_id": session_id, "seq": 1}),
            ("session_event_read", {"session_id": session_id, "seq": 1, "after": 5}),
        ]
    calls += [
        ("session_search", {"query": "zebra"}),
        ("session_search", {"query": "parser", "session_ids": ["alien"]}),
        ("session_search", {"query": "parser"}),
    ]
    seen = run_client(store, tmp_path, calls)
    results = [(error, texts[0]) for error, texts in seen["calls"]]
    alien, missing = results[:4], results[4:8]
    assert alien == [(True, 'session "alien" not found')] * 4
    assert missing == [(True, 'session "never-was" not found')] * 4
    assert results[8] == (False, "No prior session matches found.")
    assert results[9] == (False, "No prior session matches found.")
    assert "Session plan " in results[10][1]
    everything = "\n".join(text for _, text in results[8:])
    for secret in (*SECRETS, "alien zebra title"):
        assert secret not in everything
