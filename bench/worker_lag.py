"""The view worker's lag: from a flush until the listing and the search index show it.

``python -m bench.worker_lag [--writers 0,1,4] [--seconds 10] [--interval 0.2]``

For each load, a fresh PostgreSQL schema gets an ``agentlog worker`` process and,
beside it, ``--writers`` background writer processes (``bench.writers``, writing
six-event turns as fast as they can). A probe writes a six-event turn to its own
session every ``--interval`` seconds and, after each flush, watches the tables
without any catch-up of its own: the listing row's event count, and the search
view's tracking position against the notification id of the turn's assistant
message. Reported: p50 and p95 of each lag (docs/scale.md).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psycopg

from agentlog.application import Sessions
from agentlog.infrastructure.views import encode_text
from bench.base import drop_schema, versions
from tests.builders import SE, SS, TE, TS, A, U
from tests.conftest import PG_URL, pg_params
from tests.scenarios.harness import add

if TYPE_CHECKING:
    from collections.abc import Iterator

LOOK_SECONDS = 0.005
GIVE_UP_SECONDS = 60.0


@contextlib.contextmanager
def worker(url: str) -> Iterator[subprocess.Popen[str]]:
    """``agentlog worker`` on ``url``, once it has said where its views stand."""
    process = subprocess.Popen(
        [sys.executable, "-m", "agentlog", "--store", url, "worker"]
        + ["--status-every", "0"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:
        if "log at" in line:
            break
    try:
        yield process
    finally:
        process.terminate()
        process.wait(60)


@dataclass(frozen=True)
class ProbeQueries:
    """What a probe watches, as SQL on the schema's tables (no catch-up)."""

    events: str
    """The probe session's stored events (the header is a row too)."""
    listing: str
    """The probe's listing row's event count (one argument: its encoded id)."""
    search: str
    """The search view's tracking position."""
    assistant: str
    """The notification id of the probe's last assistant message."""

    @classmethod
    def of(cls, app: Sessions, schema: str) -> ProbeQueries:
        events = f'"{schema}".{app.recorder.events_table_name}'  # type: ignore[attr-defined]
        probe = "WHERE originator_id = 'probe'"
        return cls(
            events=f"SELECT count(*) FROM {events} {probe}",
            listing=(
                f'SELECT event_count FROM "{schema}".agentlog_listing_v3 '
                "WHERE session_id = %s"
            ),
            search=(
                f'SELECT notification_id FROM "{schema}".agentlog_view_tracking '
                "WHERE application_name = 'Sessions#search.v3'"
            ),
            assistant=(
                f"SELECT max(notification_id) FROM {events} {probe} "
                "AND topic = 'assistant/message'"
            ),
        )


def alive(process: subprocess.Popen[str]) -> None:
    """Raise, with the worker's last words, if it has stopped."""
    if process.poll() is not None:
        assert process.stderr is not None
        said = " | ".join(process.stderr.read().strip().splitlines()[-3:])
        msg = f"the worker stopped (exit {process.returncode}): {said}"
        raise RuntimeError(msg)


def wait_until(
    check: psycopg.Connection[tuple[object, ...]],
    sql: str,
    args: tuple[object, ...],
    least: int,
    started: float,
    worker: subprocess.Popen[str],
) -> float:
    """Seconds from ``started`` until ``sql`` gives at least ``least``."""
    while time.perf_counter() - started < GIVE_UP_SECONDS:
        alive(worker)
        row = check.execute(sql, args).fetchone()  # type: ignore[arg-type]
        if row is not None and row[0] is not None and int(row[0]) >= least:  # type: ignore[call-overload]
            return time.perf_counter() - started
        time.sleep(LOOK_SECONDS)
    return float("inf")


def probe(
    url: str,
    schema: str,
    seconds: float,
    interval: float,
    process: subprocess.Popen[str],
) -> tuple[list[float], list[float]]:
    """Listing and search lags of a turn flushed every ``interval`` seconds
    (``process``: the worker, which must not stop meanwhile)."""
    app = Sessions(store=url)
    listing_lags: list[float] = []
    search_lags: list[float] = []
    with psycopg.connect(**pg_params()) as check:
        handle = app.create_session(session_id="probe", cwd="/probe")
        queries = ProbeQueries.of(app, schema)
        listing, search, assistant = (
            queries.listing,
            queries.search,
            queries.assistant,
        )
        ends = time.monotonic() + seconds
        turn = 0
        while time.monotonic() < ends:
            turn += 1
            add(
                handle,
                TS(turn),
                U(f"probe prompt {turn}"),
                SS(turn, 1),
                A(f"probe answer {turn}", turn=turn, step=1),
                SE(turn, 1),
                TE(turn),
            )
            app.flush(handle)
            flushed = time.perf_counter()
            row = check.execute(assistant).fetchone()
            assert row is not None
            listing_lags.append(
                wait_until(
                    check,
                    listing,
                    (encode_text("probe"),),
                    handle.seq,
                    flushed,
                    process,
                )
            )
            search_lags.append(
                wait_until(check, search, (), int(row[0]), flushed, process)
            )
            time.sleep(interval)
    app.close()
    return listing_lags, search_lags


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", default="0,1,4")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--interval", type=float, default=0.2)
    args = parser.parse_args(argv)
    print(versions())
    print(
        "| background writers | turns probed | listing lag p50 / p95 | search lag p50 / p95 |"
    )
    print("|---|---|---|---|")
    for writers in [int(n) for n in args.writers.split(",")]:
        schema = "bench_lag_" + uuid.uuid4().hex[:10]
        url = f"{PG_URL}?schema={schema}"
        Sessions(store=url).close()
        background = None
        try:
            with worker(url) as running:
                if writers:
                    background = subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "bench.writers",
                            "--writers",
                            str(writers),
                            "--seconds",
                            str(args.seconds + 5),
                            "--url",
                            url,
                        ],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                    time.sleep(5)  # its processes start and begin writing
                listing, search = probe(
                    url, schema, args.seconds, args.interval, running
                )
                if background is not None:
                    background.wait(args.seconds + 300)
        finally:
            drop_schema(schema)
        ms = 1000
        print(
            f"| {writers} | {len(listing)} | {statistics.median(listing) * ms:.0f} / "
            f"{quantile(listing, 0.95) * ms:.0f} ms | {statistics.median(search) * ms:.0f}"
            f" / {quantile(search, 0.95) * ms:.0f} ms |",
            flush=True,
        )


if __name__ == "__main__":
    main()
