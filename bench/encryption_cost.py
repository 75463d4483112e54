"""The cost of per-session encryption: the same workload with it off and on.

Each round runs every case twice on fresh stores, encryption off then on (the
order alternates by round, so drifting load hits both alike), and the report gives
medians and the on/off ratio of each case; ratios within a round are what to read
on a shared machine. The workload is the benchmark suite's (turns, steps, five
streamed chunks per assistant message, tool calls, ~1 KiB texts).

- append: ``--events`` events appended and flushed every 100 (full validation);
- cold read: a new ``Sessions`` reads the whole log (``read_events``);
- messages: a new ``Sessions`` derives the message history (surface rows only);
- fork: a stored session forked at its midpoint (a copy in the database when off,
  a copy sealed again under the child's key when on);
- seal+open: one row's state sealed and opened, per row (the mapper alone).

    python -m bench.encryption_cost [--events 5000] [--rounds 5] [--postgres]

docs/encryption.md quotes a run.
"""

from __future__ import annotations

import argparse
import base64
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from agentlog.application import Sessions
from agentlog.infrastructure.crypto import DataKey, row_context

from .base import append_flushed
from .workload import build

CASES = ("append", "cold read", "messages", "fork")
MASTER_KEY = base64.b64encode(os.urandom(32)).decode()


@contextmanager
def store(postgres: bool, directory: Path, encrypted: bool) -> Iterator[dict[str, str]]:
    """A fresh store's environment (a SQLite file, or a PostgreSQL schema)."""
    env: dict[str, str] = {"AGENTLOG_SNAPSHOT_INTERVAL": "500"}
    name = f"b{uuid.uuid4().hex[:12]}"
    if encrypted:
        env["AGENTLOG_ENCRYPTION"] = "per-session"
        env["AGENTLOG_MASTER_KEY"] = MASTER_KEY
    if not postgres:
        env["PERSISTENCE_MODULE"] = "eventsourcing.sqlite"
        env["SQLITE_DBNAME"] = str(directory / f"{name}.db")
        yield env
        return
    import psycopg

    from agentlog.infrastructure.store_url import parse_store_url
    from tests.conftest import PG_URL, pg_params

    env.update(parse_store_url(PG_URL).env)
    env["POSTGRES_SCHEMA"] = name
    if encrypted:
        env["AGENTLOG_KEYSTORE"] = f"{PG_URL}?schema={name}_keys"
    with psycopg.connect(**pg_params()) as connection:
        connection.execute(f'CREATE SCHEMA "{name}"')
    try:
        yield env
    finally:
        with psycopg.connect(**pg_params()) as connection:
            connection.execute(f'DROP SCHEMA "{name}" CASCADE')
            connection.execute(f'DROP SCHEMA IF EXISTS "{name}_keys" CASCADE')


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def one_round(events: int, env: dict[str, str], round_no: int) -> dict[str, float]:
    """Seconds per case on one fresh store."""
    conversation = build(f"enc-{round_no}", events=events)
    intents = [i for group in conversation.groups for i in group][:events]
    times: dict[str, float] = {}
    app = Sessions(env=env)
    try:
        handle = app.create_session(cwd="/bench", session_id=conversation.session_id)
        times["append"] = timed(lambda: append_flushed(app, handle, intents, 100))
        boundary = max(
            i["seq"]
            for i in app.read_events(handle.id, limit=len(intents) // 2)
            if i["type"] == "turn/end"
        )
        app.close(handle)
    finally:
        app.close()
    for case, read in (
        ("cold read", lambda a: a.read_events(conversation.session_id)),
        ("messages", lambda a: a.messages(conversation.session_id)),
        ("fork", lambda a: a.close(a.fork(conversation.session_id, boundary))),
    ):
        reader = Sessions(env=env)
        try:
            times[case] = timed(lambda: read(reader))  # noqa: B023
        finally:
            reader.close()
    return times


def seal_open_micro(rows: int = 20_000) -> tuple[float, float]:
    """Microseconds to seal and to open one ~1 KiB state."""
    key = DataKey(DataKey.generate())
    context = row_context("session", 42, "assistant/message")
    state = os.urandom(1024)
    sealed = [b""] * rows
    started = time.perf_counter()
    for i in range(rows):
        sealed[i] = key.seal(context, state)
    seal = time.perf_counter() - started
    started = time.perf_counter()
    for item in sealed:
        key.open(context, item)
    opened = time.perf_counter() - started
    return seal / rows * 1e6, opened / rows * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()
    results: dict[bool, dict[str, list[float]]] = {
        False: {c: [] for c in CASES},
        True: {c: [] for c in CASES},
    }
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        with store(args.postgres, Path(tmp), True) as env:
            one_round(min(args.events, 1_000), env, -1)  # warm-up
        for n in range(args.rounds):
            for encrypted in (n % 2 == 0, n % 2 == 1):
                with store(args.postgres, Path(tmp), encrypted) as env:
                    for case, seconds in one_round(args.events, env, n).items():
                        results[encrypted][case].append(seconds)
    seal_us, open_us = seal_open_micro()
    backend = "PostgreSQL" if args.postgres else f"SQLite {sqlite3.sqlite_version}"
    print(
        f"{args.events:,} events, {args.rounds} rounds, {backend}, CPython "
        f"{platform.python_version()}, nproc={os.cpu_count()}, load average "
        f"{load_before:.1f} before / {os.getloadavg()[0]:.1f} after"
    )
    print()
    print("| case | off | per-session | on/off |")
    print("|---|---|---|---|")
    for case in CASES:
        off = statistics.median(results[False][case])
        on = statistics.median(results[True][case])
        rate = (
            f" ({args.events / off:,.0f} / {args.events / on:,.0f} events/s)"
            if case == "append"
            else ""
        )
        print(
            f"| {case}{rate} | {off * 1000:,.1f} ms | {on * 1000:,.1f} ms | "
            f"{on / off:.2f}x |"
        )
    print(f"| seal / open one 1 KiB state | | {seal_us:.1f} / {open_us:.1f} µs | |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
