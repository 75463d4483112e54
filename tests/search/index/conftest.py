"""The stores the search-index tests run on (every index, sealed or not)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlog.application import Sessions
from tests.conftest import postgres_schema_env
from tests.search.index.support import SEALED


@pytest.fixture(params=["sqlite", "postgres", "sqlite-sealed", "postgres-sealed"])
def app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Sessions]:
    """A store with a search index: SQLite (FTS5) or PostgreSQL (GIN), with
    per-session encryption (``-sealed``: tokens hashed) or without."""
    sealed = request.param.endswith("-sealed")
    if request.param.startswith("sqlite"):
        envs: Iterator[dict[str, str]] = iter(
            [
                {
                    "PERSISTENCE_MODULE": "eventsourcing.sqlite",
                    "SQLITE_DBNAME": str(tmp_path / "agentlog.db"),
                }
            ]
        )
    else:
        envs = postgres_schema_env()
    for env in envs:
        if sealed:
            env = {**env, **SEALED}
            if "POSTGRES_SCHEMA" in env:  # a file every process shares
                env["AGENTLOG_KEYSTORE"] = f"sqlite:///{tmp_path / 'keys.db'}"
        app = Sessions(env=env)
        try:
            yield app
        finally:
            app.close()


@pytest.fixture(params=["text", "pairs", "pairs-early"])
def pairs(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """With ``pairs``, the SQLite index chooses its common words after forty
    documents (``pairs-early``: two), so later documents are found by their
    word pairs."""
    from agentlog.infrastructure.backends.sqlite import search as sqlite_search

    after = {"pairs": 40, "pairs-early": 2}.get(request.param)
    if after is not None:
        monkeypatch.setattr(sqlite_search, "PAIRS_AFTER", after)
    return str(request.param)
