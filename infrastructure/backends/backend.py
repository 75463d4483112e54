"""A store backend's descriptor: one object that says everything agentlog needs
to know about a backend (how the library's environment names it, its factory,
its views, its search view and its key store).

Each backend package defines one (``backends/<name>/backend.py``); the registry
in :mod:`agentlog.infrastructure.backends` lists them. The heavy modules (views,
key stores, drivers) are imported only when asked for, so naming a backend costs
nothing at start-up.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from eventsourcing.utils import Environment

    from agentlog.application.ports import ListingShortcut, ViewClasses
    from agentlog.application.search_index import SearchView
    from agentlog.infrastructure.crypto import MasterKey
    from agentlog.infrastructure.keystore import KeyStore
    from agentlog.infrastructure.store_url import StoreConfig


class Closeable(Protocol):
    def close(self) -> None: ...


class Backend(ABC):
    """One store backend (implements ``agentlog.application.ports.StoreBackend``)."""

    name: str
    """A short name: ``memory``, ``sqlite``, ``postgres``."""
    persistence_module: str
    """The library's ``PERSISTENCE_MODULE`` that names this backend."""
    factory_topic: str
    """Our factory (a subclass of the library's), as ``PERSISTENCE_MODULE``."""
    can_subscribe: bool
    """Whether a view worker in another process may keep its views."""

    def names(self, module: str) -> bool:
        """Whether a ``PERSISTENCE_MODULE`` value is this backend."""
        return module in (self.persistence_module, self.factory_topic)

    def configure(self, environment: Environment) -> None:
        """Point the environment at our factory (the library's, plus our recorder)."""
        environment["PERSISTENCE_MODULE"] = self.factory_topic

    @abstractmethod
    def view_classes(self) -> ViewClasses:
        """The listing, title and lineage views' classes."""

    def search_view(self) -> type[SearchView] | None:
        """The search index's view class; ``None``: search scans the logs."""
        return None

    def default_keystore(self, env: Mapping[str, str]) -> str | None:
        """The key store URL used when ``AGENTLOG_KEYSTORE`` is unset (``None``:
        the operator must name one)."""
        return None

    @abstractmethod
    def key_store(self, master: MasterKey, config: StoreConfig) -> KeyStore:
        """A key store in a store of this backend (``config`` is its URL's)."""

    def write_listener(
        self, recorder: Any, wake: Callable[[], None]
    ) -> Closeable | None:
        """Something calling ``wake`` after each write any process commits to
        the store of ``recorder``, until closed; ``None``: this store cannot
        tell, so its readers poll."""
        return None

    def listing_shortcut(self, env: Environment) -> ListingShortcut | None:
        """A direct read of the listing for a query-only open of the store
        ``env`` opens (``ports.ListingShortcut``); ``None``: the query opens
        the store in full for its listing too."""
        return None

    def holds(self, config: StoreConfig, events: Mapping[str, str]) -> bool:
        """Whether a key store at ``config`` would be inside the event store
        ``events`` (an environment naming this backend)."""
        return False
