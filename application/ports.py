"""What the application needs from a store backend, declared here.

The application layer imports nothing from infrastructure: it names what it
needs as protocols, and ``agentlog.infrastructure`` implements them. Two
objects cross the line, both chosen by configuration the way the library
chooses its persistence module (a topic, resolved when a ``Sessions`` opens):

- a :class:`StoreSetup`, which turns a store URL and settings into the
  library's environment and gives the mapper its key store;
- the persistence factory, whose class names its :class:`StoreBackend` (the
  views and search view that backend keeps).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

from agentlog.domain.errors import StoreURLError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from eventsourcing.domain import DomainEventProtocol
    from eventsourcing.persistence import Mapper, StoredEvent
    from eventsourcing.utils import Environment

    from agentlog.application.projections import LineageView, ListingView, TitleView
    from agentlog.application.search_index import SearchView
    from agentlog.application.view_rows import ListingRow


@dataclass(frozen=True, slots=True)
class ViewClasses:
    """One backend's view classes."""

    listing: type[ListingView]
    titles: type[TitleView]
    lineage: type[LineageView]


class StoreBackend(Protocol):
    """A store backend as the application sees it: the views it keeps."""

    @property
    def name(self) -> str:
        """A short name (``memory``, ``sqlite``, ``postgres``)."""
        ...

    def view_classes(self) -> ViewClasses:
        """The listing, title and lineage views' classes."""
        ...

    def search_view(self) -> type[SearchView] | None:
        """The search index's view class; ``None``: search scans the logs."""
        ...


class BackendFactory(Protocol):
    """A persistence factory that says which backend it belongs to."""

    backend: ClassVar[StoreBackend]


def backend_of(factory: object) -> StoreBackend | None:
    """The backend of an application's persistence factory (``None``: not ours)."""
    backend: StoreBackend | None = getattr(type(factory), "backend", None)
    return backend


def view_classes_for(factory: object) -> ViewClasses:
    """The view classes of the factory's backend; refused for a foreign factory."""
    backend = backend_of(factory)
    if backend is None:
        msg = f"agentlog has no views for {type(factory).__qualname__}"
        raise StoreURLError(msg)
    return backend.view_classes()


class KeyStore(Protocol):
    """The per-session data keys, as the application uses them."""

    def forget(self, session_ids: Iterable[str]) -> int:
        """Delete these sessions' keys; how many existed."""
        ...

    def search_keys(
        self, session_ids: Iterable[str], *, create: bool = False
    ) -> Mapping[str, bytes]:
        """Each session's search key (derived from its data key); a session
        without a data key is left out unless ``create`` makes one."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class PlainStates(Protocol):
    """A mapper that can compare a pending event with a stored row by their
    plain bytes (a sealed state differs at every encryption)."""

    @staticmethod
    def plain_state(domain_event: DomainEventProtocol[str]) -> tuple[str, bytes]:
        """The row's topic and its plain state."""
        ...

    def decode_bytes(self, stored_event: StoredEvent) -> bytes:
        """The plain bytes of a stored row (opened, decrypted, decompressed)."""
        ...


class StoreSetup(Protocol):
    """How a ``Sessions`` opens its store: infrastructure's side of it.

    One instance per application: :meth:`environment` runs in
    ``construct_env``, :meth:`mapper` in ``construct_mapper``.
    """

    display: str
    """The store's URL with any password masked (``""`` until known)."""
    key_store: KeyStore | None
    """The per-session key store, when encryption is on and it is open."""

    def environment(
        self,
        construct: Callable[[dict[str, str]], Environment],
        given: Mapping[str, str],
        *,
        store: str | None,
        create_tables: bool,
    ) -> Environment:
        """The library's environment for ``store`` (a URL) and ``given``;
        ``construct`` is the library's own ``construct_env``."""
        ...

    def mapper(self, mapper: Mapper[str], env: Mapping[str, str]) -> Mapper[str]:
        """The mapper, given its key store when encryption is on."""
        ...

    def views(self, factory: object) -> None:
        """Give the factory's views the key store (sealed views, when on)."""
        ...

    def close(self) -> None:
        """Close what :meth:`mapper` opened (the key store)."""
        ...


class ListingShortcut(Protocol):
    """A backend's direct read of the listing view, for a query-only open
    (:func:`~agentlog.infrastructure.store.open_query`): one connection, one
    check of the views' positions, the page; no application is built.

    It answers only when its answer is the application's: ``page`` returns
    ``None`` whenever the views are behind the log, an erase is pending, a
    table is missing or the store cannot tell, and the query then opens the
    store in full (docs/query.md#query-only-opening).
    """

    def page(
        self, limit: int, after: tuple[int | float, str] | None
    ) -> list[ListingRow] | None:
        """Up to ``limit`` rows newest first after ``after``, or ``None``."""
        ...

    def close(self) -> None: ...
