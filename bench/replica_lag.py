"""A read replica's lag: from a flush on the primary until a standby shows it.

``python -m bench.replica_lag [--writers 0,1,4] [--seconds 10] [--interval 0.2]``

Starts a primary and a streaming hot standby of its own (``tests/replica/
standby.py``), an ``agentlog worker`` on the primary and, for each load,
``--writers`` background writer processes on the primary (``bench.writers``).
A probe writes a six-event turn to its own session every ``--interval``
seconds and, after each flush, watches the standby's tables: the turn's events
(a ``Sessions`` on the standby reads them), the listing row's event count, and
the search view's position against the notification id of the turn's
assistant message. Then the same reads through agentlog on the standby are
timed against the primary's. Reported: p50 and p95 (docs/scale.md).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import uuid
from typing import TYPE_CHECKING

import psycopg

from agentlog.application import SessionQuery, Sessions
from agentlog.infrastructure.views import encode_text
from bench.base import versions
from bench.worker_lag import ProbeQueries, quantile, wait_until, worker
from tests.builders import SE, SS, TE, TS, A, U
from tests.replica import standby
from tests.scenarios.harness import add

if TYPE_CHECKING:
    from collections.abc import Callable


def probe(
    pair: standby.Pair, schema: str, seconds: float, interval: float, process: object
) -> dict[str, list[float]]:
    """Each lag of a turn flushed on the primary every ``interval`` seconds."""
    app = Sessions(store=pair.primary(schema))
    lags: dict[str, list[float]] = {"events": [], "listing": [], "search": []}
    look = f"host=127.0.0.1 port={pair.standby_port} user=postgres dbname=postgres"
    with (
        psycopg.connect(look, autocommit=True) as check,
        psycopg.connect(look.replace(str(pair.standby_port), str(pair.primary_port))) as primary,
    ):  # fmt: skip
        handle = app.create_session(session_id="probe", cwd="/probe")
        queries = ProbeQueries.of(app, schema)
        ends = time.monotonic() + seconds
        turn = 0
        while time.monotonic() < ends:
            turn += 1
            add(handle, TS(turn), U(f"probe {turn}"), SS(turn, 1),
                A(f"answer {turn}", turn=turn, step=1), SE(turn, 1), TE(turn))  # fmt: skip
            app.flush(handle)
            flushed = time.perf_counter()
            row = primary.execute(queries.assistant).fetchone()  # type: ignore[arg-type]
            assert row is not None
            waits = {
                "events": (queries.events, (), handle.seq + 1),
                "listing": (queries.listing, (encode_text("probe"),), handle.seq),
                "search": (queries.search, (), int(row[0])),
            }
            for name, (sql, args, least) in waits.items():
                lags[name].append(
                    wait_until(check, sql, args, least, flushed, process)  # type: ignore[arg-type]
                )
            time.sleep(interval)
    app.close()
    return lags


def operations(app: Sessions) -> dict[str, Callable[[], object]]:
    query = SessionQuery(app)
    return {
        "messages": lambda: app.messages("probe"),
        "listing": lambda: query.list_summaries(limit=50),
        "search": lambda: query.search_sessions("answer"),
    }


def reads(pair: standby.Pair, schema: str, repeat: int) -> dict[str, list[float]]:
    """``messages``, the listing's first page and a search, timed on each."""
    times: dict[str, list[float]] = {}
    for where, url in (
        ("primary", pair.primary(schema)),
        ("standby", pair.standby(schema)),
    ):
        app = Sessions(store=url)
        for name, operation in operations(app).items():
            operation()  # warm
            for _ in range(repeat):
                started = time.perf_counter()
                operation()
                times.setdefault(f"{name} {where}", []).append(
                    time.perf_counter() - started
                )
        app.close()
    return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", default="0,1,4")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--interval", type=float, default=0.2)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args(argv)
    print(versions())
    ms = 1000
    with standby.running() as pair:
        print("| background writers | turns | events p50 / p95 | listing p50 / p95 "
              "| search p50 / p95 |\n|---|---|---|---|---|")  # fmt: skip
        for writers in [int(n) for n in args.writers.split(",")]:
            schema = "bench_replica_" + uuid.uuid4().hex[:10]
            url = pair.primary(schema)
            Sessions(store=url).close()
            with worker(url) as running:
                background = None
                if writers:
                    background = subprocess.Popen(
                        [sys.executable, "-m", "bench.writers", "--writers",
                         str(writers), "--seconds", str(args.seconds + 5), "--url", url],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    )  # fmt: skip
                    time.sleep(5)  # its processes start and begin writing
                lags = probe(pair, schema, args.seconds, args.interval, running)
                if background is not None:
                    background.wait(args.seconds + 300)
            cells = " | ".join(
                f"{statistics.median(v) * ms:.0f} / {quantile(v, 0.95) * ms:.0f} ms"
                for v in lags.values()
            )
            print(f"| {writers} | {len(lags['events'])} | {cells} |", flush=True)
        pair.wait_for_replay()
        print("\n| read | p50 / p95 |\n|---|---|")
        for name, values in reads(pair, schema, args.repeat).items():
            print(
                f"| {name} | {statistics.median(values) * ms:.2f} / "
                f"{quantile(values, 0.95) * ms:.2f} ms |"
            )


if __name__ == "__main__":
    main()
