"""What a committed, fresh read costs: ``messages`` on a live handle, and a command.

``python -m bench.fresh_reads --turns 200 --reads 500 [--postgres URL]``

A session of ``--turns`` whole turns is written through one ``Sessions`` (its handle
stays live), then ``messages(id)`` is timed ``--reads`` times: with the store
version check (the default) and without it (``freshness_check=False``, where this
version of agentlog offers it). A command that appends one turn is timed the same
way. Prints p50 and p95 in milliseconds; asserts nothing.
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agentlog.application import Sessions
from tests.builders import SE, SS, TE, TS, A, U


def _turn(handle: Any, words: str) -> None:
    turn = handle.aggregate.turns.next_turn
    for item in (
        TS(turn),
        U(words),
        SS(turn, 1),
        A(words, turn=turn),
        SE(turn, 1),
        TE(turn),
    ):
        item.to(handle)


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


def measure(url: str, turns: int, reads: int, *, check: bool | None) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if check is not None:
        options["freshness_check"] = check
    app = Sessions(store=url, **options)
    sid = f"bench-{time.time_ns()}"
    try:
        with app.command(sid, create=True) as handle:
            for n in range(turns):
                _turn(handle, f"turn {n}")
        app.messages(sid)  # warm the message cache
        read_ms = []
        for _ in range(reads):
            started = time.perf_counter()
            app.messages(sid)
            read_ms.append((time.perf_counter() - started) * 1000)
        command_ms = []
        for n in range(max(reads // 10, 5)):
            started = time.perf_counter()
            with app.command(sid) as handle:
                _turn(handle, f"more {n}")
            command_ms.append((time.perf_counter() - started) * 1000)
    finally:
        app.close()
    return {"messages": _percentiles(read_ms), "command": _percentiles(command_ms)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--reads", type=int, default=500)
    parser.add_argument("--postgres", default=None, help="a PostgreSQL store URL")
    options = parser.parse_args(argv)
    offers = "freshness_check" in inspect.signature(Sessions.__init__).parameters
    modes: list[tuple[str, bool | None]] = (
        [("checked", True), ("unchecked", False)] if offers else [("(no check)", None)]
    )
    with tempfile.TemporaryDirectory() as workdir:
        stores = [("sqlite", f"sqlite:///{Path(workdir) / 'fresh.db'}")]
        if options.postgres:
            stores.append(("postgres", options.postgres))
        print("| store | mode | messages p50 | p95 | command p50 | p95 |")
        print("|---|---|---|---|---|---|")
        for name, url in stores:
            for label, check in modes:
                if name == "sqlite":
                    Path(url.removeprefix("sqlite:///")).unlink(missing_ok=True)
                figures = measure(url, options.turns, options.reads, check=check)
                (r50, r95), (c50, c95) = figures["messages"], figures["command"]
                print(
                    f"| {name} | {label} | {r50:.3f} ms | {r95:.3f} ms "
                    f"| {c50:.2f} ms | {c95:.2f} ms |"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
