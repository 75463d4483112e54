"""Figures of the agent integrations (docs/agents-figures.md), one run on SQLite.

1. ``AgentlogSession`` against the SDK's ``SQLiteSession``: ``add_items`` per run
   (a run stores its input, one tool-calling response with the tool's output, and
   the final answer: 4 items in 3 calls, as ``Runner.run`` does) while a session
   grows to ``--items`` items; then ``get_items(limit=50)`` and ``get_items()`` on
   it, warm (the same session object) and cold (a fresh application or session).
2. The turn writer's cost per step against raw ``append`` + ``flush`` of the same
   five events (``step/start``, ``assistant/message``, ``tool/call``,
   ``tool/result``, ``step/end``), one transaction per step either way.

    nice -n 10 python -m bench.agents_figures --items 1000

Nothing here asserts on time; medians of ``--repeat`` samples are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from agents import SQLiteSession

from agentlog import Sessions
from agentlog.integrations.openai_agents import AgentlogSession

TEXT = "lorem ipsum dolor sit amet " * 20


def run_batches(number: int) -> list[list[dict[str, Any]]]:
    """The three add_items calls of one run (4 items)."""
    call_id = f"call_{number}"
    return [
        [{"role": "user", "content": f"question {number}: {TEXT}"}],
        [
            {
                "type": "function_call",
                "id": f"fc_{number}",
                "call_id": call_id,
                "name": "lookup",
                "arguments": '{"q": "x"}',
            },
            {"type": "function_call_output", "call_id": call_id, "output": TEXT},
        ],
        [
            {
                "id": f"msg_{number}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": TEXT, "annotations": []}],
            }
        ],
    ]


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def timed(coroutine_function: Any, repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        await coroutine_function()
        samples.append(time.perf_counter() - started)
    return samples


async def fill(session: Any, runs: int) -> list[float]:
    """Store ``runs`` runs; returns each run's add_items time."""
    per_run = []
    for number in range(runs):
        started = time.perf_counter()
        for batch in run_batches(number):
            await session.add_items(batch)
        per_run.append(time.perf_counter() - started)
    return per_run


async def sessions_figures(workdir: Path, items: int, repeat: int) -> dict[str, float]:
    runs = items // 4
    reference = SQLiteSession("ref", str(workdir / "sdk.db"))
    url = f"sqlite:///{workdir / 'agentlog.db'}"
    app = Sessions(store=url)
    ours = AgentlogSession("s", app)
    figures: dict[str, float] = {}
    figures["sdk add_items per run"] = median_ms(await fill(reference, runs))
    figures["agentlog add_items per run"] = median_ms(await fill(ours, runs))
    assert await ours.get_items() == await reference.get_items()
    for limit in (50, None):
        name = f"get_items(limit={limit})"
        figures[f"sdk {name} warm"] = median_ms(
            await timed(lambda limit=limit: reference.get_items(limit), repeat)
        )
        figures[f"agentlog {name} warm"] = median_ms(
            await timed(lambda limit=limit: ours.get_items(limit), repeat)
        )

        async def sdk_cold(limit: int | None = limit) -> None:
            fresh = SQLiteSession("ref", str(workdir / "sdk.db"))
            await fresh.get_items(limit)
            fresh.close()

        async def ours_cold(limit: int | None = limit) -> None:
            fresh_app = Sessions(store=url)
            await AgentlogSession("s", fresh_app).get_items(limit)
            fresh_app.close()

        figures[f"sdk {name} cold"] = median_ms(await timed(sdk_cold, repeat))
        figures[f"agentlog {name} cold"] = median_ms(await timed(ours_cold, repeat))
    app.close()
    reference.close()
    return figures


def append_step(handle: Any, turn: int, step: int) -> None:
    """The five events of one tool-calling step, appended by hand."""
    where = {"turn": turn, "step": step}
    call = {"type": "tool-call", "id": f"c{step}", "name": "f", "arguments": "{}"}
    handle.append("step/start", where)
    handle.append("assistant/message", {**where, "content": [call]}, "append")
    called = handle.append(
        "tool/call", {**where, "callId": f"c{step}", "name": "f", "arguments": "{}"}
    )
    result = {
        **where,
        "callId": f"c{step}",
        "content": [{"type": "text", "text": TEXT}],
        "isError": False,
    }
    handle.append("tool/result", result, "append", [called["seq"]])
    handle.append("step/end", where)


def write_step(turn: Any, number: int) -> None:
    """The same step through the turn writer."""
    with turn.step() as step:
        call = step.tool_call("f", "{}", call_id=f"c{number}")
        step.tool_result(call, TEXT)


def per_step_ms(started: float, steps: int) -> float:
    return (time.perf_counter() - started) / steps * 1000


def writer_figures(workdir: Path, steps: int) -> dict[str, float]:
    figures: dict[str, float] = {}
    app = Sessions(store=f"sqlite:///{workdir / 'steps.db'}")
    for session_id in ("raw", "raw-command"):
        handle = app.create_session(session_id=session_id)
        handle.append("turn/start", {"turn": 1})
        app.flush(handle)
    handle = app.get_session("raw")
    started = time.perf_counter()
    for number in range(1, steps + 1):
        append_step(handle, 1, number)
        app.flush(handle)
    figures["raw append + flush, per step"] = per_step_ms(started, steps)
    started = time.perf_counter()
    for number in range(1, steps + 1):
        with app.command("raw-command") as held:
            append_step(held, 1, number)
    figures["raw append in a command, per step"] = per_step_ms(started, steps)
    with app.turn("writer", user="go", create=True) as turn:
        started = time.perf_counter()
        for number in range(1, steps + 1):
            write_step(turn, number)
        figures["writer, one command per step"] = per_step_ms(started, steps)
    live = app.create_session(session_id="writer-handle")
    with app.turn(live, user="go") as turn:
        started = time.perf_counter()
        for number in range(1, steps + 1):
            write_step(turn, number)
            app.flush(live)
        figures["writer on a handle + flush, per step"] = per_step_ms(started, steps)
    app.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--steps", type=int, default=500)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        workdir = Path(directory)
        figures = asyncio.run(sessions_figures(workdir, options.items, options.repeat))
        figures.update(writer_figures(workdir, options.steps))
    print(f"load average before: {os.getloadavg()}")
    for name, value in figures.items():
        print(f"{name:45} {value:9.3f} ms")
    reads = [f"get_items(limit={n}) {k}" for n in (50, None) for k in ("warm", "cold")]
    for what in ("add_items per run", *reads):
        ratio = figures[f"agentlog {what}"] / figures[f"sdk {what}"]
        print(f"ratio agentlog/sdk {what:32} {ratio:6.2f}x")


if __name__ == "__main__":
    main()
