"""The PostgreSQL factory ``Sessions`` uses: the library's, made safe to share.

Three additions over :class:`eventsourcing.postgres.PostgresFactory`:

- every libpq parameter of the store URL (``sslmode``, ``sslrootcert``,
  ``application_name``, ``options``…) reaches every pooled connection;
- a first connection is made at once, so a wrong database, password or SSL
  setting fails now, naming the cause, instead of after the pool's timeout;
- table creation holds a PostgreSQL advisory lock. The library's ``CREATE TYPE``
  and ``CREATE TABLE IF NOT EXISTS`` race when several processes open the same
  schema at once (``duplicate key … pg_type``, "tuple concurrently updated");
  serialised, each opener finds the others' tables and creates nothing. Under the
  same lock the URL's schema is created if it is missing (the library expects it
  to exist), however the store was named: ``Sessions(store=…)``,
  ``AGENTLOG_STORE`` or :func:`~agentlog.infrastructure.store.open_sessions`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import TYPE_CHECKING, Any, ClassVar

import psycopg
from eventsourcing.persistence import InterfaceError, OperationalError
from eventsourcing.postgres import PostgresFactory
from psycopg.sql import SQL, Identifier
from psycopg_pool import PoolClosed

from agentlog.infrastructure.backends.postgres.backend import BACKEND
from agentlog.infrastructure.backends.postgres.connection import (
    connection_kwargs,
    unavailable,
)
from agentlog.infrastructure.backends.postgres.recorders import PostgresSessionRecorder

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from eventsourcing.persistence import AggregateRecorder, ApplicationRecorder
    from eventsourcing.utils import Environment, EnvType

    from agentlog.infrastructure.backends.backend import Backend

logger = logging.getLogger(__name__)

DDL_LOCK_KEY = 0x6167656E746C6F67  # "agentlog" as a bigint: one key for all schemas


LOST_CONNECTION_SQLSTATES = frozenset({"57P01", "57P02", "57P03"})
"""admin_shutdown, crash_shutdown, cannot_connect_now (besides class 08)."""


def lost_connection(error: BaseException) -> bool:
    """Whether the library's error is a lost or refused connection.

    The server's verdict on a statement (a limit, bad data, an aborted
    pipeline) has a SQLSTATE outside class 08 and the shutdowns; libpq's own
    connection failures have none.
    """
    cause = error.__cause__
    if isinstance(cause, (psycopg.errors.PipelineAborted, PoolClosed)):
        return False  # a closed Sessions: nothing was lost
    sqlstate = getattr(cause, "sqlstate", None)
    return (
        sqlstate is None
        or sqlstate.startswith("08")
        or sqlstate in LOST_CONNECTION_SQLSTATES
    )


class AgentlogPostgresFactory(PostgresFactory):
    """``PostgresFactory`` with URL parameters, an early check and locked DDL."""

    backend: ClassVar[Backend] = BACKEND
    # Copies a stream's rows in the database (a fork of a stored session).
    application_recorder_class = PostgresSessionRecorder

    def __init__(self, env: Environment | EnvType | None) -> None:
        super().__init__(env)
        kwargs = connection_kwargs(self.env)
        pool_kwargs = self.datastore.pool.kwargs
        assert isinstance(pool_kwargs, dict)
        pool_kwargs.update({k: v for k, v in kwargs.items() if k not in pool_kwargs})
        self._kwargs = {**kwargs, "password": pool_kwargs.get("password", "")}
        with self._connection():
            pass  # fail now, naming the cause, if the database cannot be reached
        self._failures = threading.local()
        self.datastore.get_connection = self._counting(  # type: ignore[method-assign,assignment]
            self.datastore.get_connection
        )

    def _counting(
        self, get_connection: Callable[[], contextlib.AbstractContextManager[Any]]
    ) -> Callable[[], contextlib.AbstractContextManager[Any]]:
        """Count, per thread, the connections that failed while in use."""
        failures = self._failures

        @contextlib.contextmanager
        def counted() -> Iterator[Any]:
            try:
                with get_connection() as connection:
                    yield connection
            except (OperationalError, InterfaceError) as error:
                if not lost_connection(error):
                    # An earlier statement of the pipeline failed (a key taken
                    # by a racing writer), or the server refused the statement
                    # itself ("stack depth limit exceeded"): the connection is
                    # fine. Counted, it would let a retry take another writer's
                    # identical rows as its own; logged, it could carry a query.
                    raise
                failures.count = getattr(failures, "count", 0) + 1
                logger.warning(
                    "lost a PostgreSQL connection (the recorder retries): %s",
                    " ".join(str(error).split()),
                )
                raise

        return counted

    def connection_failures(self) -> int:
        """How many connections this thread lost (the recorder retries after each)."""
        return int(getattr(self._failures, "count", 0))

    @contextlib.contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        try:
            connection = psycopg.connect(**self._kwargs, autocommit=True)
        except psycopg.Error as error:
            raise unavailable(self._kwargs, error) from error
        try:
            with connection:
                yield connection
        except psycopg.Error as error:
            # The backend killed while opening (AdminShutdown), the connection
            # lost: as typed as a refused connection (docs/errors.md).
            raise unavailable(self._kwargs, error) from error

    @contextlib.contextmanager
    def _ddl_lock(self) -> Iterator[None]:
        """Hold the advisory lock while the library creates tables (if it does)."""
        if not self.env_create_table():
            yield
            return
        with self._connection() as connection:
            connection.execute("SELECT pg_advisory_lock(%s)", (DDL_LOCK_KEY,))
            try:
                connection.execute(
                    SQL("CREATE SCHEMA IF NOT EXISTS {0}").format(
                        Identifier(self.datastore.schema)
                    )
                )
                yield
            finally:
                with contextlib.suppress(psycopg.Error):
                    connection.execute("SELECT pg_advisory_unlock(%s)", (DDL_LOCK_KEY,))

    def aggregate_recorder(self, purpose: str = "events") -> AggregateRecorder:
        with self._ddl_lock():
            return super().aggregate_recorder(purpose)

    def application_recorder(self) -> ApplicationRecorder:
        with self._ddl_lock():
            return super().application_recorder()

    def tracking_recorder(self, tracking_recorder_class: Any = None) -> Any:
        with self._ddl_lock():
            return super().tracking_recorder(tracking_recorder_class)
