"""Stores several processes can share: a SQLite file and a PostgreSQL schema.

POPO keeps its store inside one process, so the multi-process tests run on the two
real backends only; the single-process durability tests use the ``make_app`` matrix
of ``tests/conftest.py`` (POPO included).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.conftest import postgres_schema_env

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

SHARED_BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=SHARED_BACKENDS)
def shared_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store_env(shared_backend: str, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment of a store that outlives processes, fresh for this test."""
    if shared_backend == "sqlite":
        yield {
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": str(tmp_path / "agentlog.db"),
        }
    else:
        yield from postgres_schema_env()
