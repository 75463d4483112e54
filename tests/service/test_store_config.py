"""One way to name a store; every URL parameter used or refused; typed failures."""

from __future__ import annotations

import multiprocessing
import threading
import time
import uuid
from typing import TYPE_CHECKING

import psycopg
import pytest

from agentlog.application import Sessions
from agentlog.domain.errors import StoreNotFoundError, StoreUnavailableError
from agentlog.infrastructure.store import migrate, open_sessions
from agentlog.infrastructure.store_url import StoreURLError, mask_url, parse_store_url
from tests.conftest import PG_URL, pg_params, postgres_schema
from tests.service.requests import serve, stored_requests

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


def factory_module(app: Sessions) -> str:
    """The library backend the factory is (ours subclass the library's)."""
    return next(
        cls.__module__
        for cls in type(app.factory).__mro__
        if cls.__module__.startswith("eventsourcing.")
    )


def test_nothing_named_means_memory_and_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENTLOG_STORE", raising=False)
    monkeypatch.delenv("PERSISTENCE_MODULE", raising=False)
    for app in (Sessions(), open_sessions()):
        assert factory_module(app) == "eventsourcing.popo"
        app.close()
    assert list(tmp_path.iterdir()) == []


def test_agentlog_store_is_honoured_and_store_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    named = tmp_path / "named.db"
    monkeypatch.setenv("AGENTLOG_STORE", f"sqlite:///{named}")
    monkeypatch.setenv("PERSISTENCE_MODULE", "eventsourcing.popo")
    app = Sessions()
    serve(app, "s", "r", fail=False)
    app.close()
    assert named.is_file()
    explicit = Sessions(store="memory:")
    assert factory_module(explicit) == "eventsourcing.popo"
    explicit.close()
    # Code beats the process environment: an explicit env picks its backend.
    coded = Sessions({"PERSISTENCE_MODULE": "eventsourcing.popo"})
    assert factory_module(coded) == "eventsourcing.popo"
    coded.close()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "postgresql://u@h/db?connect_timeout=abc",
            "connect_timeout='abc' must be a non-negative integer",
        ),
        ("postgresql://u@h/db?schema=Probe_X", "schema 'Probe_X' is not a lowercase"),
        ("postgresql://u@h/db?sslmode=maybe", "sslmode='maybe' must be one of"),
        ("postgresql://u@h/db?colour=blue", "unknown parameter 'colour'"),
        ("postgresql://u@h/db?host=x", "unknown parameter 'host'"),
        ("postgresql://u@h/db?mode=rw", "the one mode is ro (read-only)"),
        ("postgresql://u@h/db?pool_size=-1", "pool_size='-1' must be"),
        ("postgresql://u@h/db?schema=a&schema=b", "parameter 'schema' is given twice"),
        ("postgresql://u:pw@h:99999/db", "Port out of range"),
        ("sqlite:///x.db?mode=rw", "the one SQLite URL parameter is mode=ro"),
        ("postgresql://u@h/db?pooler=session", "pooler='session' must be"),
        (
            "postgresql://u@h/db?pooler=transaction"
            "&idle_in_transaction_session_timeout=5",
            "idle_in_transaction_session_timeout is a per-connection setting",
        ),
        ("mysql://u@h/db", "expected memory:"),
    ],
)
def test_every_url_parameter_is_checked_in_one_line(url: str, message: str) -> None:
    with pytest.raises(StoreURLError) as caught:
        parse_store_url(url)
    text = str(caught.value)
    assert message in text
    assert "\n" not in text
    assert "pw" not in text.replace("pool", "")


def test_libpq_and_pool_parameters_are_kept() -> None:
    config = parse_store_url(
        "postgresql://u:s3cret@h:5433/db?schema=app&sslmode=require"
        "&application_name=svc&options=-c%20statement_timeout%3D5000"
        "&connect_timeout=3&pool_size=7"
    )
    assert config.conninfo == {
        "sslmode": "require",
        "application_name": "svc",
        "options": "-c statement_timeout=5000",
        "connect_timeout": "3",
    }
    assert config.env["POSTGRES_POOL_SIZE"] == "7"
    assert config.env["POSTGRES_CONNECT_TIMEOUT"] == "3"
    assert config.env["POSTGRES_SCHEMA"] == "app"
    assert "s3cret" not in config.display


def test_a_transaction_pooler_turns_prepared_statements_off() -> None:
    from agentlog.infrastructure.backends.postgres.connection import (
        connection_kwargs,
    )

    pooled = parse_store_url("postgresql://u@h/db?pooler=transaction")
    assert pooled.env["AGENTLOG_POSTGRES_POOLER"] == "transaction"
    assert connection_kwargs(pooled.env)["prepare_threshold"] is None
    direct = parse_store_url("postgresql://u@h/db")
    assert "prepare_threshold" not in connection_kwargs(direct.env)


def test_mask_url_hides_the_password_only() -> None:
    assert (
        mask_url("postgresql://u:s3cret@h:1/db?x=1") == "postgresql://u:***@h:1/db?x=1"
    )
    assert mask_url("postgresql://u@h/db") == "postgresql://u@h/db"
    assert mask_url("postgres://:p%40ss@h/db") == "postgres://:***@h/db"


def test_a_missing_sqlite_store_is_not_created_when_asked(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/absent.db"
    with pytest.raises(StoreNotFoundError, match=r"absent\.db does not exist"):
        open_sessions(url, create=False)
    assert not (tmp_path / "absent.db").exists()


# ------------------------------------------------------------------ PostgreSQL


@pytest.fixture
def pg_schema() -> Iterator[str]:
    yield from postgres_schema("svc_")


def pg_url(schema: str, **params: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in {"schema": schema, **params}.items())
    return f"{PG_URL}?{query}"


def test_libpq_parameters_reach_every_connection(pg_schema: str) -> None:
    name = f"probe-{uuid.uuid4().hex[:8]}"
    app = Sessions(
        store=pg_url(
            pg_schema,
            application_name=name,
            options="-c%20statement_timeout%3D4321",
        )
    )
    serve(app, "s", "r", fail=False)
    with app.factory.datastore.get_connection() as connection:  # type: ignore[attr-defined]
        row = connection.execute("SHOW statement_timeout").fetchone()
        assert row is not None and next(iter(row.values())) == "4321ms"
    with psycopg.connect(**pg_params()) as probe:
        count = probe.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
            (name,),
        ).fetchone()
    assert count is not None and count[0] >= 1
    app.close()


def test_sslmode_require_against_a_server_without_ssl_fails_typed(
    pg_schema: str,
) -> None:
    with pytest.raises(StoreUnavailableError, match="SSL"):
        Sessions(store=pg_url(pg_schema, sslmode="require"))


def test_a_missing_database_is_named_at_once() -> None:
    base = PG_URL.rsplit("/", 1)[0]
    url = base.replace("//postgres@", "//postgres:hunter2@") + "/no_such_db_x"
    started = time.monotonic()
    with pytest.raises(StoreUnavailableError) as caught:
        Sessions(store=url + "?connect_timeout=5")
    assert time.monotonic() - started < 4
    assert 'database "no_such_db_x" does not exist' in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_create_tables_false_creates_nothing_and_migrate_does(pg_schema: str) -> None:
    url = pg_url(pg_schema)
    app = Sessions(store=url, create_tables=False)
    with psycopg.connect(**pg_params()) as probe:
        tables = probe.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = %s",
            (pg_schema,),
        ).fetchone()
    assert tables == (0,)
    app.close()
    created = migrate(url)
    assert "events" in created
    app = Sessions(store=url, create_tables=False)
    serve(app, "s", "r", fail=False)
    assert stored_requests(app, ["s"]) == {"r": 1}
    app.close()


def _open_and_write(url: str, name: str) -> None:
    app = Sessions(store=url)
    serve(app, name, name, fail=False)
    app.close()


@pytest.mark.slow
def test_threads_and_processes_open_one_schema_at_once(pg_schema: str) -> None:
    url = pg_url(pg_schema)
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def opener(index: int) -> None:
        try:
            start.wait()
            _open_and_write(url, f"t{index}")
        except BaseException as error:
            errors.append(error)

    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(target=_open_and_write, args=(url, f"p{index}"))
        for index in range(6)
    ]
    for process in processes:
        process.start()
    threads = [threading.Thread(target=opener, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for process in processes:
        process.join(120)
    assert errors == []
    assert [process.exitcode for process in processes] == [0] * 6
    app = Sessions(store=url)
    names = [f"t{i}" for i in range(8)] + [f"p{i}" for i in range(6)]
    assert stored_requests(app, names) == dict.fromkeys(names, 1)
    app.close()


@pytest.mark.parametrize("how", ["Sessions(store=)", "AGENTLOG_STORE", "open_sessions"])
def test_a_missing_schema_is_created_however_the_store_is_named(
    how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = "svc_new_" + uuid.uuid4().hex[:12]
    url = pg_url(schema)
    try:
        if how == "AGENTLOG_STORE":
            monkeypatch.setenv("AGENTLOG_STORE", url)
            app = Sessions()
        elif how == "open_sessions":
            app = open_sessions(url)
        else:
            app = Sessions(store=url)
        try:
            app.flush(app.create_session(session_id="s"))
            assert app.header("s")["id"] == "s"
        finally:
            app.close()
        # A service that must not run DDL does not create one either.
        with pytest.raises(StoreUnavailableError, match="does not exist"):
            Sessions(
                store=pg_url("svc_absent_" + uuid.uuid4().hex[:8]), create_tables=False
            ).create_session()
    finally:
        with psycopg.connect(**pg_params()) as connection:
            connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
