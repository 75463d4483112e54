"""Model-tool figures: what one tool call costs, in process and over MCP stdio.

``python -m bench.model_tools_figures --sessions 1000 --turns 10
[--caller-turns 2000]`` writes ``--sessions`` sessions of ``--turns`` turns
(prompt, step, answer) into a fresh SQLite store, all in the caller's workspace
and all matching the query, plus the caller itself with ``--caller-turns`` turns
and an open step. It then times each of the five tools through
``ModelTools.call`` (median and p95 of ``--repeat`` calls, after one warm-up
call that also catches the search index up), and the same ``session_search``
through ``agentlog mcp`` with the SDK's stdio client (the server's start, and
the median call). Prints Markdown; docs/tools.md quotes a run. One sample per
call on a shared machine: compare the rows with each other, not with another run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import anyio

from agentlog.application.model_tools import ModelTools
from agentlog.infrastructure.store import open_sessions
from tests.builders import SE, SS, TE, TS, A, U, log
from tests.query.support import header, raw_write_many

CWD = "/srv/work"
QUERY = "flaky parser"


def turns(count: int, label: str, *, open_step: bool = False) -> list[Any]:
    items = []
    for turn in range(1, count + 1):
        items += [
            TS(turn),
            U(f"{label} turn {turn}: the flaky parser test failed again"),
            SS(turn, 1),
            A(f"{label}: fixed the flaky parser test in turn {turn}", turn=turn),
            SE(turn, 1),
            TE(turn),
        ]
    if open_step:
        last = count + 1
        items += [TS(last), U(f"{label}: search the flaky parser notes"), SS(last, 1)]
    return log(*items, time=1_777_636_800_000, tick=1000)


def build(url: str, sessions: int, per_session: int, caller_turns: int) -> None:
    app = open_sessions(url, create=True)
    try:
        batch = []
        for number in range(sessions):
            head = header(f"s{number:06}", 1_000_000 + number, cwd=CWD)
            batch.append((head, turns(per_session, f"s{number}")))
            if len(batch) == 200:
                raw_write_many(app, batch)
                batch = []
        batch.append(
            (
                header("caller", 2_000_000, cwd=CWD),
                turns(caller_turns, "me", open_step=True),
            )
        )
        raw_write_many(app, batch)
    finally:
        app.close()


def timed(call: Callable[[], object], repeat: int) -> list[float]:
    call()  # warm-up: catches the views and the search index up
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return samples


def row(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (
        f"| {name} | {statistics.median(ordered) * 1000:.1f} ms | {p95 * 1000:.1f} ms |"
    )


def in_process(url: str, repeat: int) -> list[str]:
    app = open_sessions(url, create=False)
    try:
        tools = ModelTools(app, "caller")
        calls: list[tuple[str, dict[str, Any]]] = [
            ("session_search", {"query": QUERY}),
            ("session_event_search", {"query": QUERY}),
            ("session_event_search", {"session_id": "s000007", "query": QUERY}),
            ("session_trace", {}),
            ("session_event_trace", {"session_id": "s000007", "seq": 1}),
            (
                "session_event_read",
                {"session_id": "s000007", "seq": 3, "before": 3, "after": 3},
            ),
        ]
        lines = []
        for name, arguments in calls:

            def one(name: str = name, arguments: dict[str, Any] = arguments) -> None:
                result = tools.call(name, arguments)
                assert not result.is_error, result.text

            target = arguments.get("session_id", "caller")
            if name == "session_search":
                target = "workspace"
            lines.append(row(f"`{name}` ({target})", timed(one, repeat)))
        return lines
    finally:
        app.close()


def over_mcp(url: str, repeat: int) -> list[str]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    samples: list[float] = []
    started: list[float] = []

    async def session() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=[
                "-m",
                "agentlog.infrastructure.cli",
                "mcp",
                "--caller",
                "caller",
                "--store",
                url,
            ],
        )
        begin = time.perf_counter()
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            await client.list_tools()
            await client.call_tool("session_search", {"query": QUERY})
            started.append(time.perf_counter() - begin)
            for _ in range(repeat):
                start = time.perf_counter()
                result = await client.call_tool("session_search", {"query": QUERY})
                samples.append(time.perf_counter() - start)
                assert not result.is_error

    anyio.run(session)
    return [
        f"| `agentlog mcp` start, initialize, list, first search | {started[0] * 1000:.0f} ms | |",
        row("`session_search` over MCP stdio", samples),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--caller-turns", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{os.path.join(folder, 'agentlog.db')}"
        build(url, args.sessions, args.turns, args.caller_turns)
        events = args.sessions * args.turns * 6
        print(
            f"{args.sessions} sessions x {args.turns} turns ({events:,} events), "
            f"caller {args.caller_turns * 6 + 3:,} events; load average "
            f"{os.getloadavg()[0]:.1f}\n"
        )
        print("| call | median | p95 |\n|---|---|---|")
        for line in [*in_process(url, args.repeat), *over_mcp(url, args.repeat)]:
            print(line)


if __name__ == "__main__":
    main()
