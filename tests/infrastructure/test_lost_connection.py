"""A PostgreSQL error is a lost connection only when the server or libpq says so.

The server's verdict on a statement ("stack depth limit exceeded", bad data, an
aborted pipeline) is the statement's error: never counted, logged or retried as
a lost connection, so its text (which can quote the query) never reaches a log.
"""

from __future__ import annotations

import psycopg
import pytest
from eventsourcing.persistence import OperationalError

from agentlog.infrastructure.backends.postgres.datastore import lost_connection


def library_error(cause: BaseException) -> OperationalError:
    error = OperationalError(str(cause))
    error.__cause__ = cause
    return error


@pytest.mark.parametrize(
    "cause",
    [
        psycopg.errors.AdminShutdown("terminating connection"),
        psycopg.errors.ConnectionFailure("connection failure"),
        psycopg.OperationalError("server closed the connection unexpectedly"),
    ],
)
def test_connection_failures_are_lost_connections(cause: BaseException) -> None:
    assert lost_connection(library_error(cause))


@pytest.mark.parametrize(
    "cause",
    [
        psycopg.errors.StatementTooComplex("stack depth limit exceeded"),
        psycopg.errors.ProgramLimitExceeded("row is too big"),
        psycopg.errors.QueryCanceled("canceling statement due to statement timeout"),
        psycopg.errors.PipelineAborted("pipeline aborted"),
        psycopg.errors.DiskFull("could not extend file"),
    ],
)
def test_a_statement_error_is_not_a_lost_connection(cause: BaseException) -> None:
    assert not lost_connection(library_error(cause))
