"""The PostgreSQL datastore ``Sessions`` uses: the library's, with two additions.

- Every libpq parameter of the store URL (``sslmode``, ``sslrootcert``,
  ``application_name``, ``options``…) reaches every pooled connection: the
  library's datastore passes only host, port, database, user and password.
- A connection on which a statement failed is closed (the pool replaces
  it), so no stale record of its prepared statements outlives the failure.
- Connections lost while in use are counted per thread, so a flush whose commit
  may have succeeded before the reply was lost knows to check the store before
  it retries (``application/saving.py``).

Both use public names only: the datastore's ``get_connection`` is overridden
the way a subclass overrides any method, and the pool is built again with the
library's own :class:`~eventsourcing.postgres.ConnectionPool`, from the settings
the library's datastore was given (as the SQLite backend's
:class:`~agentlog.infrastructure.eventsourcing_seam.SecureDeleteDatastore` is).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import TYPE_CHECKING, Any, Literal, cast

import psycopg
from eventsourcing.persistence import InterfaceError, OperationalError
from eventsourcing.postgres import ConnectionPool, PostgresDatastore
from psycopg_pool import PoolClosed

from agentlog.domain.errors import StoreClosedError

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from psycopg import Connection, Cursor
    from psycopg.rows import DictRow

logger = logging.getLogger(__name__)

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


class LostConnections:
    """How many connections each thread lost while using them."""

    def __init__(self) -> None:
        self._local = threading.local()

    def count(self) -> int:
        """This thread's count so far."""
        return int(getattr(self._local, "count", 0))

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        """Count (and log) a lost connection raised inside the block."""
        try:
            yield
        except (OperationalError, InterfaceError) as error:
            if not lost_connection(error):
                # An earlier statement of the pipeline failed (a key taken by a
                # racing writer), or the server refused the statement itself
                # ("stack depth limit exceeded"): the connection is fine.
                # Counted, it would let a retry take another writer's identical
                # rows as its own; logged, it could carry a query.
                raise
            self._local.count = self.count() + 1
            logger.warning(
                "lost a PostgreSQL connection (the recorder retries): %s",
                " ".join(str(error).split()),
            )
            raise


class AgentlogPostgresDatastore(PostgresDatastore):
    """``PostgresDatastore`` whose pool passes extra libpq parameters and whose
    connections count the ones lost in use (:attr:`lost`)."""

    def __init__(
        self,
        *,
        connection_params: Mapping[str, Any],
        **library: Any,
    ) -> None:
        super().__init__(**library)
        self.lost = LostConnections()
        library_pool = self.pool
        kwargs = library_pool.kwargs
        assert isinstance(kwargs, dict)  # the library passes a dict
        extra = {k: v for k, v in connection_params.items() if k not in kwargs}
        self.pool = ConnectionPool(
            get_password_func=library_pool.get_password_func,
            connection_class=library_pool.connection_class,
            kwargs={**kwargs, **extra},
            min_size=library_pool.min_size,
            max_size=library_pool.max_size,
            open=False,
            configure=self.after_connect_func(),
            timeout=library_pool.timeout,
            max_waiting=library_pool.max_waiting,
            max_lifetime=library_pool.max_lifetime,
            check=ConnectionPool.check_connection if self.pre_ping else None,
        )
        library_pool.close()  # never opened: no connection was made

    @classmethod
    def like(
        cls, datastore: PostgresDatastore, connection_params: Mapping[str, Any]
    ) -> AgentlogPostgresDatastore:
        """One with the settings of ``datastore`` (the library factory's)."""
        pool = datastore.pool
        kwargs = pool.kwargs
        assert isinstance(kwargs, dict)
        return cls(
            connection_params=connection_params,
            dbname=kwargs["dbname"],
            host=kwargs["host"],
            port=kwargs["port"],
            user=kwargs["user"],
            password=kwargs["password"],
            connect_timeout=pool.timeout,
            idle_in_transaction_session_timeout=(
                datastore.idle_in_transaction_session_timeout
            ),
            pool_size=pool.min_size,
            max_overflow=pool.max_size - pool.min_size,
            max_waiting=pool.max_waiting,
            conn_max_age=pool.max_lifetime,
            pre_ping=datastore.pre_ping,
            lock_timeout=datastore.lock_timeout,
            schema=datastore.schema,
            pool_open_timeout=datastore.pool_open_timeout,
            get_password_func=pool.get_password_func,
            single_row_tracking=datastore.single_row_tracking,
            originator_id_type=cast(
                "Literal['uuid', 'text']", datastore.originator_id_type
            ),
            enable_db_functions=datastore.enable_db_functions,
        )

    closed = False
    """Whether :meth:`close` was called (the pool is also "closed" before its
    lazy first open)."""

    def close(self) -> None:
        self.closed = True
        super().close()

    @contextlib.contextmanager
    def transaction(
        self, *, commit: bool = False, snapshot: bool = False
    ) -> Iterator[Cursor[DictRow]]:
        """The library's; a read (``commit=False``) is ``BEGIN READ ONLY`` …
        ``COMMIT``, not the library's ``ROLLBACK`` (``snapshot``: one snapshot
        for all its statements, ``REPEATABLE READ``, set by the ``BEGIN``
        itself, not a round trip more).

        psycopg takes a ``ROLLBACK`` for a sign that what the connection
        prepared may be gone: it forgets every prepared statement, sends
        ``DEALLOCATE ALL`` before the connection's next statement and prepares
        each statement again on its next use, a round trip more each
        (docs/scale.md#round-trips-and-latency-per-operation). A read-only
        transaction commits nothing, and refuses a write as a rollback
        would have discarded it; on an error it still rolls back.
        """
        if commit:
            with super().transaction(commit=True) as cursor:
                yield cursor
            return
        begin = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"
        with self.get_connection() as connection:
            connection.execute(begin if snapshot else "BEGIN READ ONLY")
            try:
                yield connection.cursor()
            except BaseException:
                if not connection.broken:
                    with contextlib.suppress(psycopg.Error):
                        connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    @contextlib.contextmanager
    def get_connection(self) -> Iterator[Connection[DictRow]]:
        if self.closed:
            # Not the pool's PoolClosed, an OperationalError the library's
            # recorders retry for 2 s: a closed store fails at once, typed.
            raise StoreClosedError
        with self.lost.watching(), super().get_connection() as connection:
            try:
                yield connection
            except psycopg.Error:
                # A failed statement may leave psycopg's record of the
                # connection's prepared statements ahead of the server's (seen
                # after an aborted pipeline: the next write on the connection
                # failed with 'prepared statement "_pg3_8" does not exist').
                # Closed, the pool replaces it; failures are rare (conflicts).
                connection.close()
                raise
