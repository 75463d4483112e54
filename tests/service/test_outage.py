"""PostgreSQL connections killed mid-flush: nothing lost, nothing twice, typed errors."""

from __future__ import annotations

import threading
import time
import uuid
from typing import TYPE_CHECKING

import psycopg
import pytest

from agentlog.application import Sessions
from agentlog.domain.errors import StoreUnavailableError
from tests.conftest import PG_URL, pg_params, postgres_schema
from tests.service.requests import check_outcome, serve, stored_requests, write_turn

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def pg_schema() -> Iterator[str]:
    yield from postgres_schema("out_")


class Killer(threading.Thread):
    """Terminates this test's backends (found by application_name), ``sweeps`` times."""

    def __init__(self, application_name: str, sweeps: int, every: float) -> None:
        super().__init__(daemon=True)
        self.application_name = application_name
        self.sweeps = sweeps
        self.every = every
        self.stop = threading.Event()
        self.killed = 0

    def run(self) -> None:
        with psycopg.connect(**pg_params()) as connection:
            for _sweep in range(self.sweeps):
                if self.stop.wait(self.every):
                    return
                rows = connection.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = %s AND pid <> pg_backend_pid()",
                    (self.application_name,),
                ).fetchall()
                self.killed += sum(1 for (done,) in rows if done)


@pytest.mark.parametrize("pre_ping", ["n", "y"])
def test_terminated_backends_during_commands(pg_schema: str, pre_ping: str) -> None:
    name = f"agentlog-outage-{uuid.uuid4().hex[:8]}"
    url = f"{PG_URL}?schema={pg_schema}&application_name={name}&pre_ping={pre_ping}"
    app = Sessions(store=url)
    sessions = [f"s{i}" for i in range(3)]
    killer = Killer(name, sweeps=6, every=0.15)
    killer.start()
    typed: list[StoreUnavailableError] = []
    succeeded: list[str] = []
    try:
        # Serve until every sweep has run (at least 60 requests): on a quiet
        # machine 60 requests finish before the first sweep.
        index = -1
        while (index := index + 1) < 60 or killer.is_alive():
            request_id = f"r{index}"
            session_id = sessions[index % 3]
            for _attempt in range(50):
                try:
                    serve(app, session_id, request_id, fail=False)
                except StoreUnavailableError as error:
                    typed.append(error)
                    if "unknown" in str(error) and _stored(app, session_id, request_id):
                        break  # it had committed: do not write it again
                    continue
                break
            else:
                pytest.fail(f"{request_id} never got through")
            succeeded.append(request_id)
    finally:
        killer.stop.set()
        killer.join()
    print(f"backends terminated: {killer.killed}; typed errors: {len(typed)}")
    assert killer.killed > 0
    assert all(isinstance(e.__cause__, Exception) for e in typed)
    reader = Sessions(store=f"{PG_URL}?schema={pg_schema}")
    check_outcome(reader, sessions, succeeded, [])
    reader.close()
    app.close()


def test_a_plain_flush_after_a_lost_connection_saves_exactly_once(
    pg_schema: str,
) -> None:
    name = f"agentlog-flush-{uuid.uuid4().hex[:8]}"
    app = Sessions(store=f"{PG_URL}?schema={pg_schema}&application_name={name}")
    handle = app.create_session(session_id="s")
    write_turn(handle, "r1", fail=False)
    app.flush(handle)  # the pool now holds open connections
    write_turn(handle, "r2", fail=False)
    with psycopg.connect(**pg_params()) as connection:
        connection.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = %s",
            (name,),
        )
    causes = []
    for _attempt in range(10):
        try:
            app.flush(handle)
            break
        except StoreUnavailableError as error:
            causes.append(error.__cause__)
            assert handle.unflushed == 6  # kept for the next flush
    assert None not in causes
    assert stored_requests(app, ["s"]) == {"r1": 1, "r2": 1}
    app.close()


def _stored(app: Sessions, session_id: str, request_id: str) -> bool:
    for _attempt in range(20):
        try:
            return stored_requests(app, [session_id])[request_id] > 0
        except StoreUnavailableError:
            time.sleep(0.05)
    return False
