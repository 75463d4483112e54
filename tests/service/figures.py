"""The figures of docs/service.md: ``python -m tests.service.figures [--quick]``.

Full loads: 8 threads × 200 requests over 6 sessions (20% raising half-way) on one
shared ``Sessions``; 4 processes × 100 requests over 3 sessions with retries;
200 concurrent tasks on ``AsyncSessions`` (2 requests each) with the longest
event-loop stall. On a SQLite file and on PostgreSQL (``AGENTLOG_TEST_PG``).
Every load is checked as the tests check it; timings are printed, not asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import platform
import tempfile
import time
from pathlib import Path

from agentlog.application import AsyncSessions, Sessions
from tests.conftest import PG_URL, postgres_schema
from tests.service.requests import check_outcome
from tests.service.workers import (
    Outcome,
    async_load,
    process_worker,
    session_ids,
    threaded_load,
)


def threads(url: str, requests: int) -> str:
    app = Sessions(store=url)
    started = time.perf_counter()
    outcome = threaded_load(app, threads=8, requests=requests, sessions=6)
    elapsed = time.perf_counter() - started
    check_outcome(app, session_ids(6), outcome.succeeded, outcome.failed)
    app.close()
    return (
        f"8 threads x {requests}: {len(outcome.succeeded)} ok, "
        f"{len(outcome.failed)} failed on purpose, {len(outcome.unexpected)} "
        f"unexpected, stored exactly once: yes ({elapsed:.1f} s)"
    )


def processes(url: str, requests: int) -> str:
    Sessions(store=url).close()
    started = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        outcomes = pool.map(process_worker, [(url, i, requests, 3) for i in range(4)])
    elapsed = time.perf_counter() - started
    outcome = Outcome()
    for one in outcomes:
        outcome.merge(one)
    app = Sessions(store=url)
    check_outcome(app, session_ids(3), outcome.succeeded, outcome.failed)
    app.close()
    return (
        f"4 processes x {requests} (run_with_retry): {len(outcome.succeeded)} ok, "
        f"{len(outcome.failed)} failed on purpose, {len(outcome.unexpected)} "
        f"unexpected ({elapsed:.1f} s)"
    )


def tasks(url: str, count: int) -> str:
    app = AsyncSessions(store=url)

    async def main() -> Outcome:
        try:
            return await async_load(app, tasks=count, requests=2, sessions=6)
        finally:
            await app.close()

    started = time.perf_counter()
    outcome = asyncio.run(main())
    elapsed = time.perf_counter() - started
    reader = Sessions(store=url)
    check_outcome(reader, session_ids(6), outcome.succeeded, outcome.failed)
    reader.close()
    return (
        f"AsyncSessions, {count} tasks x 2: {len(outcome.succeeded)} ok, "
        f"{len(outcome.failed)} failed on purpose, {len(outcome.unexpected)} "
        f"unexpected; longest event-loop stall {outcome.max_stall * 1000:.1f} ms "
        f"({elapsed:.1f} s)"
    )


def run(label: str, fresh: callable, sizes: dict[str, int]) -> None:  # type: ignore[valid-type]
    for name, load in (
        ("threads", threads),
        ("processes", processes),
        ("tasks", tasks),
    ):
        with fresh() as url:
            print(f"{label:10} {load(url, sizes[name])}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    args = parser.parse_args()
    sizes = (
        {"threads": 20, "processes": 10, "tasks": 20}
        if args.quick
        else {"threads": 200, "processes": 100, "tasks": 200}
    )
    print(f"python {platform.python_version()}, {platform.machine()}")
    from contextlib import contextmanager

    @contextmanager
    def sqlite():  # type: ignore[no-untyped-def]
        with tempfile.TemporaryDirectory() as directory:
            yield f"sqlite:///{Path(directory) / 'service.db'}"

    @contextmanager
    def postgres():  # type: ignore[no-untyped-def]
        for schema in postgres_schema("fig_"):
            yield f"{PG_URL}?schema={schema}"

    run("sqlite", sqlite, sizes)
    run("postgres", postgres, sizes)


if __name__ == "__main__":
    main()
