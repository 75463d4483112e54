"""The PostgreSQL scale benchmarks run (tiny sizes), and the round-trip relay
counts what it claims: one per exchange, one for a whole pipeline."""

from __future__ import annotations

import psycopg
import pytest

from agentlog.infrastructure.store_url import parse_store_url
from bench import round_trips, writers
from tests.conftest import PG_URL, postgres_schema

pytestmark = pytest.mark.slow  # PostgreSQL, and the writers' processes


def test_the_relay_counts_each_exchange_and_a_pipeline_once() -> None:
    server = parse_store_url(PG_URL).env
    relay = round_trips.RoundTripRelay(
        server["POSTGRES_HOST"], int(server["POSTGRES_PORT"])
    )
    try:
        with psycopg.connect(
            host="127.0.0.1",
            port=relay.port,
            dbname=server["POSTGRES_DBNAME"],
            user=server["POSTGRES_USER"],
            autocommit=True,
        ) as connection:
            with relay.counted() as three:
                for _ in range(3):
                    connection.execute("SELECT 1").fetchone()
            with relay.counted() as one, connection.pipeline():
                cursors = [connection.execute("SELECT 1") for _ in range(3)]
            assert [cursor.fetchone() for cursor in cursors] == [(1,)] * 3
    finally:
        relay.close()
    assert three == [3]
    assert one == [1]


def test_the_round_trip_figures_run() -> None:
    figures, opened = round_trips.measure(sessions=3, turns=1, repeat=2)
    text = round_trips.render(figures, opened)
    assert "append one event + flush" in text
    assert all(figure.trips for figure in figures)
    assert opened[0] > 0 and opened[1] > 0


def test_the_writer_figures_run(capsys: pytest.CaptureFixture[str]) -> None:
    for schema in postgres_schema("bw_"):
        url = f"{PG_URL}?schema={schema}"
        for mode in ("processes", "threads"):
            writers.main(
                [
                    "--writers",
                    "1,2",
                    "--seconds",
                    "0.3",
                    "--sessions",
                    "2",
                    "--mode",
                    mode,
                    "--url",
                    url,
                ]
            )
    rows = [
        line
        for line in capsys.readouterr().out.splitlines()
        if line[:4] in {"| 1 ", "| 2 "}
    ]
    assert len(rows) == 4
    assert all(line.rstrip().endswith("| 0 |") for line in rows)  # no errors


def test_the_worker_lag_figures_run(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import worker_lag

    worker_lag.main(["--writers", "0", "--seconds", "0.5", "--interval", "0.1"])
    [row] = [
        line for line in capsys.readouterr().out.splitlines() if line[:4] == "| 0 "
    ]
    assert "inf" not in row  # every probed turn was seen by the worker's views


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_many_sessions_figures_run(backend: str) -> None:
    from bench import many_sessions
    from bench.base import bench_store

    with bench_store(backend) as (app, where):
        many_sessions.build(app, 200, where if isinstance(where, str) else None)
        figures = many_sessions.measure({200: app}, repeat=1)[200]
    assert set(figures) == {
        "listing, first page of 50",
        "scoped listing, first page of 50",
        "scoped listing, every record",
        "lineage trace of a fork 9 deep",
        "fork of a stored session (+ close)",
    }
