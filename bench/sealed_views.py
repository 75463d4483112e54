"""The cost of sealed views: listing reads and catch-up, encryption off and on.

Each round fills two fresh stores with the same ``--sessions`` sessions (a
header with a cwd and an owner, a prompt, a title), one plain and one encrypted
(the order alternates by round), then times on each:

- catch-up: a new ``Sessions`` folds the whole log into the empty views (each
  listing, title and lineage row sealed when on);
- first page: a new ``Sessions`` reads the listing's first page of 50 (each
  row opened, its data key read from the key store when on);
- first page again: the same read in the same ``Sessions`` (keys cached; the
  median of 15);
- owner page: a first page scoped to one owner (a keyed-hash filter when on;
  the median of 15).

The report gives medians and the on/off ratio of each case; ratios within one
run are what to read on a shared machine.

    python -m bench.sealed_views [--sessions 2000] [--rounds 5] [--postgres]

docs/encryption.md quotes a run.
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agentlog import SessionQuery
from agentlog.application import Sessions
from agentlog.application.catch_up import views_of
from agentlog.application.scope import Scope
from agentlog.domain.title import TITLE_EVENT

from .encryption_cost import store

CASES = ("catch-up", "first page", "first page again", "owner page")
PAGE = 50
OWNERS = 20
REPEATS = 15


def fill(env: dict[str, str], sessions: int) -> None:
    """The sessions, written without reading (the views stay empty)."""
    app = Sessions(env=env)
    try:
        for n in range(sessions):
            handle = app.create_session(
                cwd=f"/projects/p{n % 37}",
                session_id=f"s{n:06d}",
                owner=f"user{n % OWNERS}",
                created_at=1_700_000_000_000 + n,
            )
            handle.append("turn/start", {"turn": 1})
            handle.append(
                "user/message",
                {
                    "content": [{"type": "text", "text": f"please look at item {n}"}],
                    "source": {"kind": "user"},
                },
                "append",
            )
            handle.append("turn/end", {"turn": 1})
            data = {
                "title": f"Item {n} review",
                "messageSeqs": [1],
                "source": {"kind": "fallback"},
            }
            app.append_out_of_band(handle, TITLE_EVENT, data)
            app.close(handle)
    finally:
        app.close()


def median_of(read: Callable[[], object], repeats: int = REPEATS) -> float:
    """The median time of ``repeats`` reads (a warm read is short and noisy)."""
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        read()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def timed_cases(env: dict[str, str]) -> dict[str, float]:
    times: dict[str, float] = {}
    app = Sessions(env=env)
    try:
        started = time.perf_counter()
        views_of(app).catch_up()
        times["catch-up"] = time.perf_counter() - started
    finally:
        app.close()
    app = Sessions(env=env)
    try:
        query = SessionQuery(app)
        views_of(app).catch_up()  # nothing new: the pages alone are timed
        started = time.perf_counter()
        assert len(query.list_summaries(PAGE).items) == PAGE
        times["first page"] = time.perf_counter() - started
        times["first page again"] = median_of(lambda: query.list_summaries(PAGE))
        scoped = query.scoped(Scope(owner="user3"))
        times["owner page"] = median_of(lambda: scoped.list_summaries(PAGE))
    finally:
        app.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()
    results: dict[bool, dict[str, list[float]]] = {
        False: {c: [] for c in CASES},
        True: {c: [] for c in CASES},
    }
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(args.rounds):
            for encrypted in (n % 2 == 0, n % 2 == 1):
                with store(args.postgres, Path(tmp), encrypted) as env:
                    fill(env, args.sessions)
                    for case, seconds in timed_cases(env).items():
                        results[encrypted][case].append(seconds)
    backend = "PostgreSQL" if args.postgres else f"SQLite {sqlite3.sqlite_version}"
    print(
        f"{args.sessions:,} sessions, {args.rounds} rounds, {backend}, CPython "
        f"{platform.python_version()}, nproc={os.cpu_count()}, load average "
        f"{load_before:.1f} before / {os.getloadavg()[0]:.1f} after"
    )
    print()
    print("| case | off | sealed | on/off |")
    print("|---|---|---|---|")
    for case in CASES:
        off = statistics.median(results[False][case])
        on = statistics.median(results[True][case])
        print(
            f"| {case} | {off * 1000:,.2f} ms | {on * 1000:,.2f} ms | {on / off:.2f}x |"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
