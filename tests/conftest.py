"""The backend matrix: every application-level test runs on POPO, SQLite and PostgreSQL.

PostgreSQL comes from ``AGENTLOG_TEST_PG`` (a store URL without schema) or the CI
default ``postgresql://postgres@127.0.0.1:5432/test``; each test gets its own schema,
dropped afterwards. With ``CI=true`` an unreachable server fails the test instead of
skipping it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from agentlog.application import Sessions
from tests.shared_memory import forget, sharing

# Generation speed depends on the machine's load, not on agentlog: a shared CI
# machine must not fail a property test for drawing its inputs slowly.
settings.register_profile("agentlog", suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("agentlog")

PG_URL = os.environ.get("AGENTLOG_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
BACKENDS = ["popo", "sqlite", "postgres"]


def pg_params() -> dict[str, Any]:
    from agentlog.infrastructure.store import parse_store_url

    env = parse_store_url(PG_URL).env
    return {
        "dbname": env["POSTGRES_DBNAME"],
        "host": env["POSTGRES_HOST"],
        "port": int(env["POSTGRES_PORT"]),
        "user": env["POSTGRES_USER"],
        "password": env["POSTGRES_PASSWORD"],
        "connect_timeout": 3,
        "autocommit": True,
    }


def postgres_schema(prefix: str = "t_") -> Iterator[str]:
    """A fresh schema on the test server; dropped afterwards.

    With ``CI=true`` an unreachable server fails the test instead of skipping it.
    """
    import psycopg

    schema = prefix + uuid.uuid4().hex[:16]
    try:
        connection = psycopg.connect(**pg_params())
    except psycopg.OperationalError as error:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"PostgreSQL is unreachable in CI: {error}")
        pytest.skip(f"PostgreSQL is unreachable: {error}")
    with connection:
        connection.execute(f'CREATE SCHEMA "{schema}"')
        try:
            yield schema
        finally:
            connection.execute(f'DROP SCHEMA "{schema}" CASCADE')


def postgres_schema_env() -> Iterator[dict[str, str]]:
    """A fresh schema on the test server, as environment; dropped afterwards."""
    from agentlog.infrastructure.store import parse_store_url

    for schema in postgres_schema():
        yield {**parse_store_url(PG_URL).env, "POSTGRES_SCHEMA": schema}


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def app_env(backend: str, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment selecting one backend, fresh for this test."""
    yield from backend_env(backend, tmp_path)


def backend_env(backend: str, tmp_path: Path) -> Iterator[dict[str, str]]:
    """A fresh store of ``backend`` as environment: in memory, a SQLite file in
    ``tmp_path``, or a PostgreSQL schema dropped afterwards."""
    if backend == "popo":
        yield {"PERSISTENCE_MODULE": "eventsourcing.popo"}
    elif backend == "sqlite":
        yield {
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": str(tmp_path / "agentlog.db"),
        }
    else:
        yield from postgres_schema_env()


@pytest.fixture
def make_app(app_env: dict[str, str]) -> Iterator[Callable[..., Sessions]]:
    """Build ``Sessions`` on this test's backend; all share one store (not POPO)."""
    apps: list[Sessions] = []
    shared: list[Sessions] = []

    def make(*, invariants: bool = True, **env: str) -> Sessions:
        if app_env["PERSISTENCE_MODULE"] == "eventsourcing.popo" and shared:
            # POPO keeps the store in the recorder: later applications get the
            # first one's recorders from their factory, as from a database.
            env = {**app_env, **env, **sharing(shared[0], name)}
        else:
            env = {**app_env, **env}
        app = Sessions(env=env, invariants=invariants)
        if not shared:
            shared.append(app)
        apps.append(app)
        return app

    name = uuid.uuid4().hex
    yield make
    forget(name)
    for app in apps:
        app.close()


@pytest.fixture
def app(make_app: Callable[..., Sessions]) -> Sessions:
    return make_app()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full",
        action="store_true",
        help="the full tier: also the tests marked slow (what .ci/run runs)",
    )


POSTGRES_FIXTURES = frozenset({"pg_env", "pg_schema"})
"""Fixtures that give a test a PostgreSQL schema (its id may not say so)."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> None:
    """The two tiers (see docs/testing.md#the-two-tiers).

    Every test whose id names PostgreSQL (the PostgreSQL leg of each backend
    matrix, ``TestPostgres…`` cases, ``test_postgres_…``) or that takes a
    PostgreSQL fixture is ``slow``; the default run
    deselects ``slow`` tests unless ``--full`` or a ``-m`` expression says
    otherwise. ``quarantine`` tests run only when ``-m`` names them.
    """
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "postgres" in item.nodeid.lower() or POSTGRES_FIXTURES & set(fixtures):
            item.add_marker(pytest.mark.slow)
    marks = config.getoption("markexpr")
    if "quarantine" not in marks:
        deselect(config, items, "quarantine")
    if not marks and not config.getoption("--full"):
        deselect(config, items, "slow")


def deselect(config: pytest.Config, items: list[pytest.Item], mark: str) -> None:
    """Drop the items carrying ``mark``, reported as deselected."""
    dropped = [item for item in items if item.get_closest_marker(mark) is not None]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item.get_closest_marker(mark) is None]


def pytest_report_header(config: pytest.Config) -> str | None:
    if config.getoption("--full"):
        return "tier: full (the tests marked slow included)"
    if config.getoption("markexpr"):
        return None
    return "tier: fast (the tests marked slow are deselected; --full runs them)"


def pytest_make_parametrize_id(
    config: pytest.Config, val: object, argname: str
) -> str | None:
    """Stable ids for objects whose repr has an address (pytest-xdist needs them)."""
    if val is None or isinstance(val, (bool, int, float, str, bytes)):
        return None
    if callable(val) and hasattr(val, "__name__"):
        return str(val.__name__)
    return f"{argname}-{type(val).__name__}"
