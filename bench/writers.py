"""How writes scale with writers on one PostgreSQL schema.

``python -m bench.writers [--writers 1,2,4,8] [--seconds 10] [--sessions 20]
[--mode processes|threads] [--url URL]``

Each writer opens its own ``Sessions`` (a process each, or threads sharing
one), takes ``--sessions`` sessions of its own and, once every writer is
ready, writes six-event turns round-robin over them, flushing each turn, for
``--seconds``. Reported: stored events per second over all writers and the
flush latency (p50, p95) of every turn. ``--url`` names the store (default: a
fresh schema on the test server; a PgBouncer URL works too); see docs/scale.md.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentlog.application import Sessions
from agentlog.infrastructure.store_url import parse_store_url
from bench.base import drop_schema, versions
from tests.builders import SE, SS, TE, TS, A, U
from tests.scenarios.harness import add

if TYPE_CHECKING:
    from multiprocessing.synchronize import Event

EVENTS_PER_TURN = 6


@dataclass
class WriterResult:
    events: int = 0
    flushes: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def write_turns(
    app: Sessions, name: str, sessions: int, start: Any, stop_at: list[float]
) -> WriterResult:
    """One writer's loop: create its sessions, wait for ``start``, write turns."""
    result = WriterResult()
    handles = [
        app.create_session(session_id=f"{name}-{n}", cwd=f"/w/{name}")
        for n in range(sessions)
    ]
    start.wait()
    turn = 0
    while time.monotonic() < stop_at[0]:
        turn += 1
        for handle in handles:
            number = turn
            add(
                handle,
                TS(number),
                U(f"prompt {number}"),
                SS(number, 1),
                A(f"answer {number}", turn=number, step=1),
                SE(number, 1),
                TE(number),
            )
            started = time.perf_counter()
            try:
                app.flush(handle)
            except Exception as error:
                result.errors.append(f"{type(error).__name__}: {error}")
                return result
            result.flushes.append(time.perf_counter() - started)
            result.events += EVENTS_PER_TURN
            if time.monotonic() >= stop_at[0]:
                break
    return result


def _process(
    url: str,
    name: str,
    sessions: int,
    ready: Any,
    start: Event,
    seconds: float,
    out: Any,
) -> None:
    app = Sessions(store=url)
    try:
        ready.put(name)
        stop_at = [0.0]

        class Start:
            def wait(self) -> None:
                start.wait()
                stop_at[0] = time.monotonic() + seconds

        out.put(write_turns(app, name, sessions, Start(), stop_at))
    finally:
        app.close()


def run_processes(
    url: str, writers: int, sessions: int, seconds: float
) -> WriterResult:
    context = multiprocessing.get_context("spawn")
    ready = context.Queue()
    out = context.Queue()
    start = context.Event()
    tag = uuid.uuid4().hex[:6]
    processes = [
        context.Process(
            target=_process,
            args=(url, f"p{tag}{n}", sessions, ready, start, seconds, out),
        )
        for n in range(writers)
    ]
    for process in processes:
        process.start()
    for _ in processes:
        ready.get(timeout=300)
    time.sleep(0.5)  # every writer is waiting on start
    start.set()
    total = WriterResult()
    for _ in processes:
        one: WriterResult = out.get(timeout=seconds + 300)
        total.events += one.events
        total.flushes += one.flushes
        total.errors += one.errors
    for process in processes:
        process.join(60)
    return total


def run_threads(url: str, writers: int, sessions: int, seconds: float) -> WriterResult:
    app = Sessions(store=url)
    barrier = threading.Barrier(writers + 1)
    stop_at = [0.0]
    results: list[WriterResult] = []
    tag = uuid.uuid4().hex[:6]

    class Start:
        def wait(self) -> None:
            barrier.wait()

    def writer(n: int) -> None:
        results.append(write_turns(app, f"t{tag}{n}", sessions, Start(), stop_at))

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    stop_at[0] = time.monotonic() + 3600  # until the barrier below sets it
    barrier.wait()
    stop_at[0] = time.monotonic() + seconds
    for thread in threads:
        thread.join()
    app.close()
    total = WriterResult()
    for one in results:
        total.events += one.events
        total.flushes += one.flushes
        total.errors += one.errors
    return total


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", default="1,2,4,8")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--mode", choices=("processes", "threads"), default="processes")
    parser.add_argument("--url", default="")
    args = parser.parse_args(argv)
    schema = ""
    url = args.url
    if not url:
        from tests.conftest import PG_URL

        schema = "bench_w_" + uuid.uuid4().hex[:10]
        url = f"{PG_URL}?schema={schema}"
    print(versions())
    print(
        f"# store {parse_store_url(url).display}, {args.mode}, {args.seconds:g} s each"
    )
    Sessions(store=url).close()  # tables first: the writers race on writes only
    print("| writers | events/s | flushes | flush p50 | flush p95 | errors |")
    print("|---|---|---|---|---|---|")
    try:
        for writers in [int(n) for n in args.writers.split(",")]:
            run = run_processes if args.mode == "processes" else run_threads
            result = run(url, writers, args.sessions, args.seconds)
            p50 = statistics.median(result.flushes) * 1000 if result.flushes else 0
            print(
                f"| {writers} | {result.events / args.seconds:,.0f} | "
                f"{len(result.flushes):,} | {p50:.1f} ms | "
                f"{quantile(result.flushes, 0.95) * 1000:.1f} ms | "
                f"{len(result.errors)} |",
                flush=True,
            )
            for error in result.errors[:3]:
                print(f"  error: {error}")
    finally:
        if schema:
            drop_schema(schema)


if __name__ == "__main__":
    main()
