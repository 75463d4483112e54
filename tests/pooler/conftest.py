"""Fixtures for the pooler suite: a PgBouncer per test process, a schema per test.

PgBouncer comes from Debian's package (``.ci/run`` installs it). Without it the
suite is skipped, except with ``CI=true``, where it fails, as PostgreSQL does.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from agentlog.infrastructure.store_url import parse_store_url
from tests.conftest import PG_URL, postgres_schema
from tests.pooler import bouncer

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(scope="session")
def pgbouncer_port() -> Iterator[int]:
    """The port of this process's PgBouncer (transaction mode)."""
    if bouncer.executable() is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("PgBouncer is not installed in CI (apt-get install pgbouncer)")
        pytest.skip("PgBouncer is not installed (apt-get install pgbouncer)")
    with bouncer.running(parse_store_url(PG_URL).env) as port:
        yield port


def pooled(port: int, schema: str, **params: str) -> str:
    """A store URL of ``schema`` through the PgBouncer at ``port``."""
    server = parse_store_url(PG_URL).env
    query = "&".join(
        f"{k}={v}"
        for k, v in {"schema": schema, "pooler": "transaction", **params}.items()
    )
    return (
        f"postgresql://{server['POSTGRES_USER']}@127.0.0.1:{port}/"
        f"{server['POSTGRES_DBNAME']}?{query}"
    )


@pytest.fixture
def pg_schema() -> Iterator[str]:
    """A fresh schema on the test server (direct), dropped afterwards."""
    yield from postgres_schema("pgb_")


@pytest.fixture
def pooled_url(pgbouncer_port: int, pg_schema: str) -> str:
    """A fresh schema's store URL through PgBouncer, ``?pooler=transaction``."""
    return pooled(pgbouncer_port, pg_schema)
