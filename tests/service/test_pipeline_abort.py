"""A PostgreSQL pipeline aborted by an earlier statement is no lost connection.

When racing writers take the same key, the loser's pipeline reports "pipeline
aborted" for the statements after the one that failed. The datastore counts lost
connections (a flush's retry then takes rows identical to its own as saved) and
logs each: a pipeline abort must do neither. Found by CI: a losing ``agentlog
fork --id`` printed "lost a PostgreSQL connection" twice before "already exists".
"""

from __future__ import annotations

import logging
import threading

import psycopg
import pytest
from eventsourcing.persistence import OperationalError

from agentlog.infrastructure.backends.postgres.datastore import LostConnections


def library_error(cause: BaseException) -> OperationalError:
    """The error the library's ``get_connection`` raises for a psycopg one."""
    error = OperationalError(str(cause))
    error.__cause__ = cause
    return error


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
    connections = LostConnections()
    with (
        caplog.at_level(logging.WARNING),
        pytest.raises(OperationalError),
        connections.watching(),
    ):
        raise library_error(cause)
    assert connections.count() == lost
    logged = [r for r in caplog.records if "lost a PostgreSQL connection" in r.message]
    assert len(logged) == lost


def test_counts_are_per_thread() -> None:
    """A flush compares its own thread's count before and after its commit."""
    connections = LostConnections()

    def lose() -> None:
        with pytest.raises(OperationalError), connections.watching():
            raise library_error(psycopg.OperationalError("server closed"))

    other = threading.Thread(target=lose)
    other.start()
    other.join()
    assert connections.count() == 0
    lose()
    assert connections.count() == 1
