"""A PostgreSQL pipeline aborted by an earlier statement is no lost connection.

When racing writers take the same key, the loser's pipeline reports "pipeline
aborted" for the statements after the one that failed. The factory counts lost
connections (a flush's retry then takes rows identical to its own as saved) and
logs each: a pipeline abort must do neither. Found by CI: a losing ``agentlog
fork --id`` printed "lost a PostgreSQL connection" twice before "already exists".
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
from eventsourcing.persistence import OperationalError

from agentlog.infrastructure.backends.postgres.factory import AgentlogPostgresFactory

if TYPE_CHECKING:
    from collections.abc import Iterator


def failing(error: BaseException) -> Any:
    @contextlib.contextmanager
    def get_connection() -> Iterator[None]:
        try:
            raise error
        except psycopg.OperationalError as cause:
            raise OperationalError(str(cause)) from cause
        yield

    return get_connection


@pytest.mark.parametrize(
    ("cause", "lost"),
    [
        (psycopg.errors.PipelineAborted("pipeline aborted"), 0),
        (psycopg.OperationalError("server closed the connection unexpectedly"), 1),
    ],
    ids=["pipeline-aborted", "connection-lost"],
)
def test_only_a_lost_connection_is_counted_and_logged(
    cause: BaseException, lost: int, caplog: pytest.LogCaptureFixture
) -> None:
    factory = AgentlogPostgresFactory.__new__(AgentlogPostgresFactory)
    factory._failures = threading.local()
    counted = factory._counting(failing(cause))
    with caplog.at_level(logging.WARNING), pytest.raises(OperationalError), counted():
        pass
    assert factory.connection_failures() == lost
    logged = [r for r in caplog.records if "lost a PostgreSQL connection" in r.message]
    assert len(logged) == lost
