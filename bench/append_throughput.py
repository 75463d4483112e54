"""Events per second appended and flushed in batches of 100, on SQLite.

The session core's headline figure: full validation (JSON, payload models, surface
rules, turn invariants) on every append, one transaction per 100 events. The event
mix is the benchmark workload's (turns, steps, 5 streamed chunks per assistant
message, tool calls and results, ~1 KiB texts).

    python -m bench.append_throughput [--events 20000] [--batch 100]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from agentlog.application import Sessions

from .base import append_flushed
from .workload import build


def run_once(events: int, batch: int, directory: Path, round_no: int) -> float:
    """Seconds to append and flush ``events`` events in batches of ``batch``."""
    conversation = build(f"throughput-{round_no}", events=events)
    intents = [intent for group in conversation.groups for intent in group]
    intents = intents[:events]
    app = Sessions(
        env={
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": str(directory / f"throughput-{round_no}.db"),
        }
    )
    try:
        handle = app.create_session(cwd="/bench", session_id=conversation.session_id)
        started = time.perf_counter()
        append_flushed(app, handle, intents, batch)
        return time.perf_counter() - started
    finally:
        app.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_once(min(args.events, 2_000), args.batch, Path(tmp), -1)  # warm-up
        times = [
            run_once(args.events, args.batch, Path(tmp), n) for n in range(args.rounds)
        ]
    median = statistics.median(times)
    print(
        f"{args.events} events, flush every {args.batch}: median {median:.3f} s "
        f"over {args.rounds} rounds -> {args.events / median:,.0f} events/s"
    )


if __name__ == "__main__":
    main()
