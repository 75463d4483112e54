"""What one operation costs on PostgreSQL, in round trips, pinned.

Counted by the relay of ``bench.round_trips`` (one round trip per ReadyForQuery
from the server), warm: each operation runs first until every pooled
connection has prepared its statements (docs/scale.md#round-trips-and-latency-per-operation).
A change that adds a round trip to one of these fails here, whatever the load.
"""

from __future__ import annotations

import base64
import os
from typing import TYPE_CHECKING, Any

import psycopg
import pytest

from agentlog.application import SessionQuery, Sessions
from agentlog.application.catch_up import views_of
from agentlog.application.search_index import search_index_of
from agentlog.domain.errors import SessionNotFoundError
from bench.round_trips import WARM_RUNS, RoundTripRelay
from tests.builders import SE, SS, TE, TS, A, U
from tests.conftest import pg_params, postgres_schema_env
from tests.scenarios.harness import add

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

pytestmark = pytest.mark.slow


@pytest.fixture
def pg_env() -> Iterator[dict[str, str]]:
    yield from postgres_schema_env()


@pytest.fixture
def keys() -> Iterator[dict[str, str]]:
    """Another schema, for a key store."""
    yield from postgres_schema_env()


@pytest.fixture
def relay(pg_env: dict[str, str]) -> Iterator[RoundTripRelay]:
    relay = RoundTripRelay(pg_env["POSTGRES_HOST"], int(pg_env["POSTGRES_PORT"]))
    yield relay
    relay.close()


@pytest.fixture
def relayed(pg_env: dict[str, str], relay: RoundTripRelay) -> dict[str, str]:
    """The schema's environment, through the relay."""
    return {**pg_env, "POSTGRES_HOST": "127.0.0.1", "POSTGRES_PORT": str(relay.port)}


@pytest.fixture
def open_app(relayed: dict[str, str]) -> Iterator[Callable[..., Sessions]]:
    apps: list[Sessions] = []

    def make(**env: str) -> Sessions:
        app = Sessions(env={**relayed, **env})
        apps.append(app)
        # Every pooled connection made before the warm runs, so that each has
        # prepared the statements when one is counted (the pool hands them
        # out in turn).
        app.factory.datastore.pool.wait(timeout=60)  # type: ignore[attr-defined]
        return app

    yield make
    for app in reversed(apps):
        app.close()


def store_turns(app: Sessions, session_id: str, turns: int) -> None:
    handle = app.create_session(session_id=session_id, cwd="/srv")
    for turn in range(1, turns + 1):
        add(
            handle,
            TS(turn),
            U(f"question {turn} about zebra"),
            SS(turn, 1),
            A(f"answer {turn}", turn=turn, step=1),
            SE(turn, 1),
            TE(turn),
        )
        app.flush(handle)


def warm_trips(relay: RoundTripRelay, operation: Callable[[], Any]) -> int:
    """The round trips of ``operation`` once every pooled connection ran it."""
    for _ in range(WARM_RUNS):
        operation()
    with relay.counted() as counted:
        operation()
    return counted[0]


def test_messages_of_a_stored_session_is_one_round_trip(
    relay: RoundTripRelay, open_app: Callable[..., Sessions]
) -> None:
    writer = open_app()
    ids = [f"s{n}" for n in range(20)]  # more than the history caches
    for sid in ids:
        store_turns(writer, sid, 3)
    reader = open_app()
    turn = iter(range(10**6))

    def read() -> None:
        assert len(reader.messages(ids[next(turn) % len(ids)])) == 6

    assert warm_trips(relay, read) == 1


def test_messages_after_a_snapshot_is_two_round_trips(
    relay: RoundTripRelay, open_app: Callable[..., Sessions]
) -> None:
    """The snapshot and the events after it in one statement; the surface
    rows before the snapshot in a second."""
    writer = open_app(AGENTLOG_SNAPSHOT_INTERVAL="100")  # a snapshot per 10
    ids = [f"s{n}" for n in range(20)]
    for sid in ids:
        store_turns(writer, sid, 4)  # 25 events: 2 snapshots
    reader = open_app(AGENTLOG_SNAPSHOT_INTERVAL="100")
    turn = iter(range(10**6))
    expected = writer.messages(ids[0])
    assert len(expected) == 8
    assert writer.snapshots is not None
    assert writer.snapshots.recorder.select_events(ids[0], desc=True, limit=1)

    def read() -> None:
        assert reader.messages(ids[next(turn) % len(ids)]) == expected

    assert warm_trips(relay, read) == 2


def test_the_one_statement_read_sees_each_flush_and_erasure(
    open_app: Callable[..., Sessions],
) -> None:
    """The read's semantics are the library's two reads': a flush of another
    ``Sessions`` is seen at once, an erased session is missing."""
    writer = open_app(AGENTLOG_SNAPSHOT_INTERVAL="100")
    reader = open_app(AGENTLOG_SNAPSHOT_INTERVAL="100")
    store_turns(writer, "s", 1)
    handle = writer.get_session("s")
    for turn in range(2, 30):
        add(handle, TS(turn), U(f"more {turn}"), TE(turn))
        writer.flush(handle)
        messages = reader.messages("s")
        assert messages == writer.messages("s")
        assert messages[-1]["content"][0]["text"] == f"more {turn}"
    writer.erase("s", reason="test")
    with pytest.raises(SessionNotFoundError):
        reader.messages("s")


def test_an_encrypted_session_reads_in_one_round_trip(
    relay: RoundTripRelay,
    relayed: dict[str, str],
    keys: dict[str, str],
    open_app: Callable[..., Sessions],
) -> None:
    """Once its key is cached (read once per process, one more round trip)."""
    sealed = {
        "AGENTLOG_ENCRYPTION": "per-session",
        "AGENTLOG_MASTER_KEY": base64.b64encode(os.urandom(32)).decode(),
        "AGENTLOG_KEYSTORE": (
            f"postgresql://{relayed['POSTGRES_USER']}@127.0.0.1:{relay.port}/"
            f"{relayed['POSTGRES_DBNAME']}?schema={keys['POSTGRES_SCHEMA']}"
        ),
    }
    writer = open_app(**sealed)
    ids = [f"s{n}" for n in range(20)]
    for sid in ids:
        store_turns(writer, sid, 2)
    reader = open_app(**sealed)
    expected = writer.messages(ids[0])
    turn = iter(range(10**6))

    def read() -> None:
        assert reader.messages(ids[next(turn) % len(ids)]) == expected

    for _ in ids:
        read()
    assert warm_trips(relay, read) == 1


def test_a_warm_listing_page_is_two_round_trips(
    relay: RoundTripRelay, open_app: Callable[..., Sessions]
) -> None:
    """The log's top (are the views current?), then the page: each one
    statement, without ``BEGIN`` and ``ROLLBACK`` around it."""
    writer = open_app()
    for n in range(3):
        store_turns(writer, f"s{n}", 1)
    query = SessionQuery(open_app())

    def page() -> None:
        assert len(query.list_summaries(limit=50).items) == 3

    assert warm_trips(relay, page) == 2


def test_a_cold_catch_up_reads_the_top_and_every_position_in_one_round_trip(
    relay: RoundTripRelay, open_app: Callable[..., Sessions]
) -> None:
    app = open_app()
    store_turns(app, "s", 1)
    views = views_of(app)
    views.catch_up()
    for _ in range(WARM_RUNS):  # each pooled connection prepares it
        views.views[0].read_positions(app.name, views.views, app.recorder)
    with relay.counted() as counted:
        top, positions = views.views[0].read_positions(
            app.name, views.views, app.recorder
        ) or (None, [])
    assert counted == [1]
    assert top == app.recorder.max_notification_id()
    assert positions == [top] * 3


def test_a_read_transaction_keeps_the_prepared_statements(
    relay: RoundTripRelay, open_app: Callable[..., Sessions]
) -> None:
    """It commits (read only) instead of rolling back: psycopg forgets what a
    connection prepared at a ``ROLLBACK``, then sends ``DEALLOCATE ALL`` and
    prepares every statement again, a round trip more each."""
    store_turns(open_app(), "s", 1)
    reader = open_app()  # no live handle: its reads are one statement each
    datastore: Any = reader.factory.datastore  # type: ignore[attr-defined]

    def read() -> None:
        with datastore.transaction(commit=False) as cursor:
            cursor.execute("SELECT 1")
        assert len(reader.read_events("s")) == 6

    assert warm_trips(relay, read) == 4  # BEGIN, SELECT, COMMIT; the events
    with (
        pytest.raises(Exception, match="read-only transaction"),
        datastore.transaction(commit=False) as cursor,
    ):
        cursor.execute("CREATE TABLE refused (x int)")


def proc_version(env: dict[str, str], name: str) -> str | None:
    """The row version of the schema's function ``name`` (``None``: none):
    ``CREATE OR REPLACE FUNCTION`` writes a new one."""
    with psycopg.connect(**pg_params()) as connection:
        row = connection.execute(
            "SELECT p.xmin::text FROM pg_proc p JOIN pg_namespace n "
            "ON n.oid = p.pronamespace WHERE n.nspname = %s AND p.proname = %s",
            (env["POSTGRES_SCHEMA"], name),
        ).fetchone()
    return None if row is None else str(row[0])


def test_opening_a_store_whose_tables_exist_runs_no_ddl(
    pg_env: dict[str, str], open_app: Callable[..., Sessions]
) -> None:
    store_turns(open_app(), "s", 1)
    made = proc_version(pg_env, "agentlog_write_v1")
    assert made is not None
    app = open_app()
    SessionQuery(app).list_summaries(limit=5)  # the views open too
    assert proc_version(pg_env, "agentlog_write_v1") == made
    app.close()
    with psycopg.connect(**pg_params()) as connection:
        connection.execute(
            f'DROP FUNCTION "{pg_env["POSTGRES_SCHEMA"]}".agentlog_write_v1'
        )
    assert proc_version(pg_env, "agentlog_write_v1") is None
    reopened = open_app()  # something is missing: created, under the lock
    assert proc_version(pg_env, "agentlog_write_v1") is not None
    store_turns(reopened, "t", 1)
    assert len(reopened.messages("t")) == 2


@pytest.mark.parametrize(("phrase", "found"), [("about zebra", 3), ("zebra s1", 1)])
def test_a_warm_search_first_page_is_twelve_round_trips(
    relay: RoundTripRelay, open_app: Callable[..., Sessions], phrase: str, found: int
) -> None:
    """The log's top, the index's rule, its last document's id, the phrase's
    candidate ids: one statement each, none in a transaction block. The page's
    snapshot: ``BEGIN`` (its isolation in it), the server-side cursor declared
    (and described: psycopg's second round trip), one ``FETCH`` (a short one
    is the end), ``CLOSE``, ``COMMIT``. Then the hits' events and the titles."""
    writer = open_app()
    for n in range(3):
        store_turns(writer, f"s{n}", 1)
        handle = writer.get_session(f"s{n}")
        add(handle, TS(2), U(f"zebra s{n}"), TE(2))
        writer.flush(handle)
    query = SessionQuery(open_app())

    def search() -> None:
        assert len(query.search_sessions(phrase).items) == found

    assert warm_trips(relay, search) == 12


def test_a_search_page_reads_one_read_only_snapshot(
    open_app: Callable[..., Sessions],
) -> None:
    """The page's ``BEGIN`` sets what a ``SET TRANSACTION`` after it did."""
    app = open_app()
    store_turns(app, "s", 1)
    index = search_index_of(app)
    assert index is not None
    with index.search.view.reading() as connection:
        shown = connection.execute(
            "SELECT current_setting('transaction_isolation') AS isolation, "
            "current_setting('transaction_read_only') AS read_only"
        ).fetchone()
    assert shown == {"isolation": "repeatable read", "read_only": "on"}
