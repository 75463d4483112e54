"""The PostgreSQL backend's descriptor."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentlog.infrastructure.backends.backend import Backend

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from agentlog.application.ports import ViewClasses
    from agentlog.application.search_index import SearchView
    from agentlog.infrastructure.backends.backend import Closeable
    from agentlog.infrastructure.crypto import MasterKey
    from agentlog.infrastructure.keystore import KeyStore
    from agentlog.infrastructure.store_url import StoreConfig

SAME_DATABASE = ("POSTGRES_HOST", "POSTGRES_PORT", "POSTGRES_DBNAME")


class PostgresBackend(Backend):
    """A schema of a PostgreSQL database: events, views and the search index;
    a view worker (``agentlog worker``) may keep the views from another process.
    """

    name = "postgres"
    persistence_module = "eventsourcing.postgres"
    factory_topic = (
        "agentlog.infrastructure.backends.postgres.factory:AgentlogPostgresFactory"
    )
    can_subscribe = True

    def view_classes(self) -> ViewClasses:
        from agentlog.infrastructure.backends.postgres.views import VIEW_CLASSES

        return VIEW_CLASSES

    def search_view(self) -> type[SearchView] | None:
        from agentlog.infrastructure.backends.postgres.search import SEARCH_VIEW

        return SEARCH_VIEW

    def key_store(self, master: MasterKey, config: StoreConfig) -> KeyStore:
        from agentlog.infrastructure.backends.postgres.keystore import (
            PostgresKeyStore,
        )

        return PostgresKeyStore(master, config)

    def write_listener(
        self, recorder: Any, wake: Callable[[], None]
    ) -> Closeable | None:
        """A ``LISTEN`` on the events' channel; none behind a transaction-mode
        pooler, where it would hear nothing."""
        from agentlog.infrastructure.backends.postgres.listener import WriteListener
        from agentlog.infrastructure.backends.postgres.pooler import listens

        datastore = recorder.datastore
        if not listens(datastore):
            return None
        return WriteListener(datastore.pool.kwargs, recorder.channel_name, wake)

    def holds(self, config: StoreConfig, events: Mapping[str, str]) -> bool:
        """The same database (host, port, name) and the same schema."""
        env = config.env
        return all(
            (events.get(name) or "") == (env.get(name) or "") for name in SAME_DATABASE
        ) and (events.get("POSTGRES_SCHEMA") or "public") == (config.schema or "public")


BACKEND = PostgresBackend()
