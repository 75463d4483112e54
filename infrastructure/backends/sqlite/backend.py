"""The SQLite backend's descriptor."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agentlog.infrastructure.backends.backend import Backend

if TYPE_CHECKING:
    from collections.abc import Mapping

    from eventsourcing.utils import Environment

    from agentlog.application.ports import ListingShortcut, ViewClasses
    from agentlog.application.search_index import SearchView
    from agentlog.infrastructure.crypto import MasterKey
    from agentlog.infrastructure.keystore import KeyStore
    from agentlog.infrastructure.store_url import StoreConfig


class SQLiteBackend(Backend):
    """One file: events, views and the FTS5 search index; keys in another file.

    SQLite cannot notify another process, so its views are kept by the reader
    that catches them up, never by a view worker.
    """

    name = "sqlite"
    persistence_module = "eventsourcing.sqlite"
    factory_topic = (
        "agentlog.infrastructure.backends.sqlite.factory:AgentlogSQLiteFactory"
    )
    can_subscribe = False

    def view_classes(self) -> ViewClasses:
        from agentlog.infrastructure.backends.sqlite.views import VIEW_CLASSES

        return VIEW_CLASSES

    def search_view(self) -> type[SearchView] | None:
        from agentlog.infrastructure.backends.sqlite.search import SEARCH_VIEW

        return SEARCH_VIEW

    def default_keystore(self, env: Mapping[str, str]) -> str | None:
        """``<database>.keys`` beside the file; memory beside an in-memory one."""
        database = env.get("SQLITE_DBNAME") or ""
        if not database or database == ":memory:" or "mode=memory" in database:
            return "memory:"
        return "sqlite:///" + str(Path(database).absolute()) + ".keys"

    def key_store(self, master: MasterKey, config: StoreConfig) -> KeyStore:
        from agentlog.infrastructure.backends.sqlite.keystore import SQLiteKeyStore

        assert config.sqlite_path is not None
        return SQLiteKeyStore(master, config.sqlite_path)

    def listing_shortcut(self, env: Environment) -> ListingShortcut | None:
        """The listing read from the file itself (``sqlite.listing_shortcut``)."""
        from agentlog.infrastructure.backends.sqlite.listing_shortcut import (
            listing_shortcut,
        )

        return listing_shortcut(env)

    def holds(self, config: StoreConfig, events: Mapping[str, str]) -> bool:
        """The same database file."""
        database = events.get("SQLITE_DBNAME") or ""
        return config.sqlite_path is not None and (
            Path(database).absolute() == Path(config.sqlite_path).absolute()
        )


BACKEND = SQLiteBackend()
