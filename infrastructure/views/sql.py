"""What the SQLite and PostgreSQL views share: the save, the purge's transaction
and the reads, written once over each backend's SQL.

A backend view supplies its statements and cursor steps (``_select``, ``_fetch``,
``_delete``, ``_encode``, ``_upsert_sql``); the order of the steps, and which
transaction each runs in, is decided here.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from agentlog.application.projections import ListingView, View
from agentlog.application.view_rows import ListingRow
from agentlog.infrastructure.views import write_tracked

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from eventsourcing.persistence import Tracking

    from agentlog.application.projections import Merge
    from agentlog.application.scope import Scope
    from agentlog.application.view_rows import Number

TRow = TypeVar("TRow")


class SQLView(View[TRow], Generic[TRow]):
    """A keyed table on an SQL datastore (``datastore.transaction``)."""

    datastore: Any
    _upsert_sql: Any

    @abstractmethod
    def _encode(self, row: TRow) -> tuple[Any, ...]:
        """A row as the upsert's parameters."""

    @abstractmethod
    def _fetch(self, cursor: Any, sql: Any, params: Sequence[Any]) -> list[TRow]:
        """Run a select of whole rows and decode them."""

    @abstractmethod
    def _select(self, cursor: Any, keys: Collection[str]) -> dict[str, TRow]:
        """The rows of these session ids that exist, by id."""

    @abstractmethod
    def _delete(self, cursor: Any, session_ids: Collection[str]) -> None:
        """Delete the rows of these (at least one) session ids."""

    def _read(self, sql: Any, params: Sequence[Any]) -> list[TRow]:
        """``_fetch`` in a read transaction of its own."""
        with self.datastore.transaction(commit=False) as cursor:
            return self._fetch(cursor, sql, params)

    def save(
        self,
        keys: Collection[str],
        merge: Merge[TRow],
        tracking: Tracking,
        purge: Collection[str] = (),
    ) -> bool:
        def write(cursor: Any) -> None:
            changed = merge(self._select(cursor, keys))
            if changed:
                cursor.executemany(self._upsert_sql, [self._encode(r) for r in changed])
            self.purge(purge, cursor)

        return write_tracked(self, tracking, write)

    def purge(self, session_ids: Collection[str], cursor: Any = None) -> None:
        if not session_ids:
            return
        if cursor is not None:
            self._delete(cursor, session_ids)
            return
        with self.datastore.transaction(commit=True) as own:
            self._delete(own, session_ids)

    def select_rows(self, keys: Collection[str]) -> dict[str, TRow]:
        with self.datastore.transaction(commit=False) as cursor:
            return self._select(cursor, keys)


class SQLListingView(SQLView[ListingRow], ListingView):
    """The listing's page read: the backend writes the query, this runs it."""

    @abstractmethod
    def page_query(
        self,
        *,
        limit: int,
        after: tuple[Number, str] | None = None,
        scope: Scope | None = None,
    ) -> tuple[Any, list[Any]]:
        """The SQL and parameters :meth:`select_page` runs (tests explain it)."""

    def select_page(
        self,
        *,
        limit: int,
        after: tuple[Number, str] | None = None,
        scope: Scope | None = None,
    ) -> list[ListingRow]:
        return self._read(*self.page_query(limit=limit, after=after, scope=scope))
