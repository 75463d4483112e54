"""The PostgreSQL factory ``Sessions`` uses: the library's, made safe to share.

Three additions over :class:`eventsourcing.postgres.PostgresFactory`:

- its datastore is an ``AgentlogPostgresDatastore`` (``datastore.py``): every
  libpq parameter of the store URL reaches every pooled connection, and
  connections lost in use are counted (``connection_failures``);
- a first connection is made at once, so a wrong database, password or SSL
  setting fails now, naming the cause, instead of after the pool's timeout; it
  also asks whether the server takes writes: a hot standby (a read replica) or
  a read-only role opens the store read-only, as ``?mode=ro`` does, so nothing
  is created and every write is refused up front;
- a recorder whose tables, types and functions all exist creates nothing:
  the names are read once, with the first connection's check, and a view
  checks its own (``PostgresView.tables_ready``), so an opening runs no DDL
  and makes no connection for the lock below;
- table creation holds a PostgreSQL advisory lock. The library's ``CREATE TYPE``
  and ``CREATE TABLE IF NOT EXISTS`` race when several processes open the same
  schema at once (``duplicate key … pg_type``, "tuple concurrently updated");
  serialised, each opener finds the others' tables and creates nothing. Under the
  same lock the URL's schema is created if it is missing (the library expects it
  to exist), however the store was named: ``Sessions(store=…)``,
  ``AGENTLOG_STORE`` or :func:`~agentlog.infrastructure.store.open_sessions`.
  The lock is a transaction's, held by an open transaction, so it is released
  with it even behind a transaction-mode pooler (``pooler.py``), where a
  session's lock would stay on a server session after the client left.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import psycopg
from eventsourcing.postgres import PostgresFactory
from psycopg.sql import SQL, Identifier

from agentlog.domain.errors import StoreReadOnlyError
from agentlog.infrastructure.backends.postgres.backend import BACKEND
from agentlog.infrastructure.backends.postgres.connection import (
    connection_kwargs,
    creates_nothing,
    ddl_lock,
    describe,
    opening_facts,
    schema_exists,
    transaction_pooler,
    unavailable,
)
from agentlog.infrastructure.backends.postgres.datastore import (
    AgentlogPostgresDatastore,
)
from agentlog.infrastructure.backends.postgres.pooler import (
    TransactionPoolerDatastore,
)
from agentlog.infrastructure.backends.postgres.recorders import PostgresSessionRecorder
from agentlog.infrastructure.backends.postgres.views import PostgresView
from agentlog.infrastructure.store_url import READ_ONLY_ENV_VAR
from agentlog.infrastructure.views.sealing_factory import SealingFactory

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from eventsourcing.persistence import AggregateRecorder, ApplicationRecorder
    from eventsourcing.utils import Environment, EnvType

    from agentlog.infrastructure.backends.backend import Backend

DDL_LOCK_KEY = 0x6167656E746C6F67  # "agentlog" as a bigint: one key for all schemas
R = TypeVar("R")


class AgentlogPostgresFactory(SealingFactory, PostgresFactory):
    """``PostgresFactory`` with URL parameters, an early check and locked DDL."""

    backend: ClassVar[Backend] = BACKEND
    datastore: AgentlogPostgresDatastore
    # Copies a stream's rows in the database (a fork of a stored session).
    application_recorder_class = PostgresSessionRecorder

    def __init__(self, env: Environment | EnvType | None) -> None:
        self._deferring = threading.local()
        super().__init__(env)
        kwargs = connection_kwargs(self.env)
        library = self.datastore
        ours = (
            TransactionPoolerDatastore
            if transaction_pooler(self.env)
            else AgentlogPostgresDatastore
        )
        self.datastore = ours.like(library, kwargs)
        library.close()
        pool_kwargs = self.datastore.pool.kwargs
        assert isinstance(pool_kwargs, dict)
        self._kwargs = {**kwargs, "password": pool_kwargs.get("password", "")}
        # Fail now, naming the cause, if the database cannot be reached.
        with self._connection() as connection:
            refuses, existing = opening_facts(connection, self.datastore.schema)
            self._existing = existing
            """The schema's names when it opened: recorders that find all of
            theirs create nothing (see :meth:`_created`)."""
            self.read_only = self.env.get(READ_ONLY_ENV_VAR) == "y" or refuses
            """Opened read-only: reads work, writes raise ``StoreReadOnlyError``."""
            if self.read_only and not schema_exists(connection, self.datastore.schema):
                msg = (
                    f"cannot open {describe(kwargs)} read-only: its schema"
                    f" {self.datastore.schema!r} does not exist (nothing was ever"
                    " stored there)"
                )
                raise StoreReadOnlyError(msg)

    def connection_failures(self) -> int:
        """How many connections this thread lost (the recorder retries after each)."""
        return self.datastore.lost.count()

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
        """Hold the advisory lock while the library creates tables (if it does).

        The schema is created in a first locked transaction, committed so the
        library's connections see it; a second one holds the lock while they
        create the tables.
        """
        if not self.env_create_table():
            yield
            return
        with self._connection() as connection:
            with ddl_lock(connection, DDL_LOCK_KEY):
                connection.execute(
                    SQL("CREATE SCHEMA IF NOT EXISTS {0}").format(
                        Identifier(self.datastore.schema)
                    )
                )
            with ddl_lock(connection, DDL_LOCK_KEY):
                yield

    def _created(self, build: Callable[[], R], ready: Callable[[R], bool]) -> R:
        """The recorder ``build`` makes, its tables created under the lock
        unless ``ready`` says they all exist: no DDL, no lock's connection."""
        create = self.env_create_table()
        self._deferring.on = True
        try:
            recorder = build()  # the library's, without its create_table
        finally:
            self._deferring.on = False
        if create and not ready(recorder):
            with self._ddl_lock():
                recorder.create_table()  # type: ignore[attr-defined]
        return recorder

    def _recorder_ready(self, recorder: object) -> bool:
        """Every name the recorder's statements create existed at opening;
        its composite types are then registered as ``create_table`` would."""
        statements = getattr(recorder, "sql_create_statements", None)
        if not statements or not creates_nothing(
            [statement.as_string() for statement in statements], self._existing
        ):
            return False
        self.datastore.register_type_adapters()
        return True

    def aggregate_recorder(self, purpose: str = "events") -> AggregateRecorder:
        def build() -> AggregateRecorder:
            made: AggregateRecorder = super(
                AgentlogPostgresFactory, self
            ).aggregate_recorder(purpose)
            return made

        return self._created(build, self._recorder_ready)

    def application_recorder(self) -> ApplicationRecorder:
        def build() -> ApplicationRecorder:
            made: ApplicationRecorder = super(
                AgentlogPostgresFactory, self
            ).application_recorder()
            return made

        return self._created(build, self._recorder_ready)

    def tracking_recorder(self, tracking_recorder_class: Any = None) -> Any:
        """The library's; on a read-only store, refused when its tables are missing."""
        recorder = self._created(
            lambda: super(AgentlogPostgresFactory, self).tracking_recorder(
                tracking_recorder_class
            ),
            lambda made: isinstance(made, PostgresView) and made.tables_ready(),
        )
        if (
            self.read_only
            and isinstance(recorder, PostgresView)
            and not recorder.tables_ready()
        ):
            raise StoreReadOnlyError.views_never_built()
        return recorder

    def env_create_table(self) -> bool:
        """Never on a read-only store (what is missing stays missing), nor
        while :meth:`_created` builds a recorder (it decides after)."""
        if getattr(self._deferring, "on", False):
            return False
        return not self.read_only and super().env_create_table()
