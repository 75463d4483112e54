"""Figures of the agent integrations (docs/agents-figures.md), one run on SQLite.

1. ``AgentlogSession`` against the SDK's ``SQLiteSession``: ``add_items`` per run
   (a run stores its input, one tool-calling response with the tool's output, and
   the final answer: 4 items in 3 calls, as ``Runner.run`` does) while ``--fills``
   pairs of sessions grow to ``--items`` items each; then ``get_items(limit=50)``
   and ``get_items()`` on the last pair, warm (the same session object) and cold (a
   fresh application or session per read).
2. The turn writer's cost per step against raw ``append`` + ``flush`` of the same
   five events (``step/start``, ``assistant/message``, ``tool/call``,
   ``tool/result``, ``step/end``), one transaction per step either way.

    nice -n 10 python -m bench.agents_figures --items 1000

Each sample of (1) times both systems back to back, alternating which goes first,
so a load spike on the shared machine hits both sides of a sample; the ratio
printed is the median of the per-sample ratios, with its quartiles.
``--snapshot-interval N`` sets ``AGENTLOG_SNAPSHOT_INTERVAL`` for every
application (the tail a cold read replays). Nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents import SQLiteSession

from agentlog import Sessions
from agentlog.integrations.openai_agents import AgentlogSession

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

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


async def paired(
    sdk: Callable[[], Awaitable[object]],
    ours: Callable[[], Awaitable[object]],
    figures: dict[str, float],
    name: str,
    rounds: int,
) -> None:
    """Time ``sdk`` and ``ours`` once per round, alternating which goes first, and
    record both medians and the median of the per-round ratios (a load spike then
    hits both sides of a round, not one side of the whole measure)."""
    samples: dict[str, list[float]] = {"sdk": [], "agentlog": []}
    for number in range(rounds):
        order = [("sdk", sdk), ("agentlog", ours)]
        for side, function in order if number % 2 == 0 else order[::-1]:
            started = time.perf_counter()
            await function()
            samples[side].append(time.perf_counter() - started)
    record(figures, name, samples["sdk"], samples["agentlog"])


def record(
    figures: dict[str, float], name: str, sdk: list[float], ours: list[float]
) -> None:
    ratios = sorted(o / s for s, o in zip(sdk, ours, strict=True))
    figures[f"sdk {name}"] = median_ms(sdk)
    figures[f"agentlog {name}"] = median_ms(ours)
    figures[f"ratio {name}"] = statistics.median(ratios)
    figures[f"ratio {name} p25"] = ratios[len(ratios) // 4]
    figures[f"ratio {name} p75"] = ratios[(3 * len(ratios)) // 4]


async def fill(sdk: Any, ours: Any, runs: int) -> tuple[list[float], list[float]]:
    """Store ``runs`` runs in both sessions, run by run, alternating which goes
    first; returns each side's add_items time per run."""
    times: dict[int, list[float]] = {0: [], 1: []}
    for number in range(runs):
        sides = [(0, sdk), (1, ours)]
        for side, session in sides if number % 2 == 0 else sides[::-1]:
            started = time.perf_counter()
            for batch in run_batches(number):
                await session.add_items(batch)
            times[side].append(time.perf_counter() - started)
    return times[0], times[1]


async def sessions_figures(
    workdir: Path, items: int, repeat: int, fills: int = 3
) -> dict[str, float]:
    """``fills`` pairs of sessions are filled to ``items`` items each (every run's
    ``add_items`` is a sample); reads go to the last pair."""
    runs = items // 4
    url = f"sqlite:///{workdir / 'agentlog.db'}"
    sdk_path = str(workdir / "sdk.db")
    app = Sessions(store=url)
    figures: dict[str, float] = {}
    added: tuple[list[float], list[float]] = ([], [])
    for number in range(fills):
        reference = SQLiteSession(f"ref-{number}", sdk_path)
        ours = AgentlogSession(f"s-{number}", app)
        sdk_times, our_times = await fill(reference, ours, runs)
        added[0].extend(sdk_times)
        added[1].extend(our_times)
        if number < fills - 1:
            reference.close()
    record(figures, "add_items per run", *added)
    assert await ours.get_items() == await reference.get_items()
    ref_id, our_id = reference.session_id, ours.session_id
    for limit in (50, None):
        name = f"get_items(limit={limit})"

        async def sdk_warm(limit: int | None = limit) -> None:
            await reference.get_items(limit)

        async def ours_warm(limit: int | None = limit) -> None:
            await ours.get_items(limit)

        async def sdk_cold(limit: int | None = limit) -> None:
            fresh = SQLiteSession(ref_id, sdk_path)
            await fresh.get_items(limit)
            fresh.close()

        async def ours_cold(limit: int | None = limit) -> None:
            fresh_app = Sessions(store=url)
            await AgentlogSession(our_id, fresh_app).get_items(limit)
            fresh_app.close()

        await paired(sdk_warm, ours_warm, figures, f"{name} warm", repeat)
        await paired(sdk_cold, ours_cold, figures, f"{name} cold", repeat)
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
    parser.add_argument("--fills", type=int, default=3)
    parser.add_argument(
        "--snapshot-interval",
        type=int,
        default=None,
        help="AGENTLOG_SNAPSHOT_INTERVAL for every application (default: its own)",
    )
    options = parser.parse_args()
    if options.snapshot_interval is not None:
        os.environ["AGENTLOG_SNAPSHOT_INTERVAL"] = str(options.snapshot_interval)
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as directory:
        workdir = Path(directory)
        figures = asyncio.run(
            sessions_figures(workdir, options.items, options.repeat, options.fills)
        )
        figures.update(writer_figures(workdir, options.steps))
    print(f"load average after: {os.getloadavg()}")
    for name, value in figures.items():
        if not name.startswith("ratio"):
            print(f"{name:45} {value:9.3f} ms")
    reads = [f"get_items(limit={n}) {k}" for n in (50, None) for k in ("warm", "cold")]
    for what in ("add_items per run", *reads):
        ratio = figures[f"ratio {what}"]
        spread = (
            f"{figures[f'ratio {what} p25']:.2f}-{figures[f'ratio {what} p75']:.2f}"
        )
        print(f"ratio agentlog/sdk {what:32} {ratio:6.2f}x  (p25-p75 {spread})")


if __name__ == "__main__":
    main()
