"""What a pooler in transaction mode changes (``?pooler=transaction``).

PgBouncer (and its kin) in transaction mode lend a server session to a client
for one transaction, then to another client. Whatever a session holds between
transactions is lost or, worse, shared: prepared statements, ``SET`` settings,
session advisory locks, ``LISTEN``. agentlog keeps none of them there:

- no statement is prepared (``connection_kwargs``);
- a new pooled connection is only put in autocommit (this datastore), without
  the library's ``SET idle_in_transaction_session_timeout``;
- table creation holds transaction-scoped advisory locks, in every mode
  (``AgentlogPostgresFactory``, ``PostgresKeyStore``);
- a subscription (the view worker) polls instead of listening
  (:class:`~agentlog.infrastructure.eventsourcing_seam_postgres.PollingPostgresSubscription`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentlog.infrastructure.backends.postgres.datastore import (
    AgentlogPostgresDatastore,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from eventsourcing.postgres import PostgresDatastore
    from psycopg import Connection


class TransactionPoolerDatastore(AgentlogPostgresDatastore):
    """Our datastore, with nothing set per server session.

    The library's ``SET idle_in_transaction_session_timeout`` would stay on a
    server session the pooler then lends to other clients; set that limit on
    the server or in the pooler instead (``store_url`` refuses it here).
    """

    def after_connect_func(self) -> Callable[[Connection[Any]], None]:
        def after_connect(conn: Connection[Any]) -> None:
            conn.autocommit = True

        return after_connect


def listens(datastore: PostgresDatastore) -> bool:
    """Whether a subscription on ``datastore`` can ``LISTEN`` (not behind a
    transaction-mode pooler, which drops the session's notifications)."""
    return not isinstance(datastore, TransactionPoolerDatastore)
