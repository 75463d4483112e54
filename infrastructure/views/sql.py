"""What the SQLite and PostgreSQL views share: the save, the purge's transaction
and the reads, written once over each backend's SQL.

A backend view supplies its statements and cursor steps (``_select``,
``_fetch_stored``, ``_delete``, ``_encode``, ``_upsert_sql``); the order of the
steps, and which transaction each runs in, is decided here, and so is where a
sealed view's rows are opened (``views.sealing``).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from agentlog.application.projections import ListingView, View
from agentlog.application.view_rows import ListingRow
from agentlog.infrastructure.views import write_tracked
from agentlog.infrastructure.views.sealing import SealableView

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence
    from contextlib import AbstractContextManager

    from eventsourcing.persistence import Tracking

    from agentlog.application.projections import Merge
    from agentlog.application.scope import Scope
    from agentlog.application.view_rows import Number

TRow = TypeVar("TRow")


class SQLView(SealableView, View[TRow], Generic[TRow]):
    """A keyed table on an SQL datastore (``datastore.transaction``)."""

    datastore: Any
    _upsert_sql: Any

    @abstractmethod
    def _encode(self, row: TRow) -> tuple[Any, ...]:
        """A row as the upsert's parameters (sealed first, in a sealed view)."""

    @abstractmethod
    def _fetch_stored(self, cursor: Any, sql: Any, params: Sequence[Any]) -> list[TRow]:
        """Run a select of whole rows and decode their columns (as stored)."""

    def _fetch(self, cursor: Any, sql: Any, params: Sequence[Any]) -> list[TRow]:
        """Run a select of whole rows: decoded, and opened in a sealed view."""
        return self._opened(self._fetch_stored(cursor, sql, params))

    def _stored(self, row: TRow) -> TRow:
        """The row as written: sealed in a sealed view."""
        return self.row_seal.seal(row) if self.sealed else row

    def _opened(self, rows: list[TRow]) -> list[TRow]:
        """Rows as folded; a sealed row whose key is gone is left out."""
        if not self.sealed:
            return rows
        return self.row_seal.open_all(rows)

    @abstractmethod
    def _select(self, cursor: Any, keys: Collection[str]) -> dict[str, TRow]:
        """The rows of these session ids that exist, by id."""

    @abstractmethod
    def _delete(self, cursor: Any, session_ids: Collection[str]) -> None:
        """Delete the rows of these (at least one) session ids."""

    def _reading(self) -> AbstractContextManager[Any]:
        """A cursor for one read statement: a read transaction of its own
        (PostgreSQL's: the statement alone, one round trip, not three)."""
        return self.datastore.transaction(commit=False)  # type: ignore[no-any-return]

    def _read(self, sql: Any, params: Sequence[Any]) -> list[TRow]:
        """``_fetch`` in a read of its own."""
        with self._reading() as cursor:
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
        with self._reading() as cursor:
            return self._select(cursor, keys)

    @abstractmethod
    def _top_and_positions(
        self, recorder: Any, keys: Sequence[str]
    ) -> tuple[int | None, dict[str, int]]:
        """The application recorder's last notification id, then the recorded
        position of each tracking key that has one, in one read."""

    def read_positions(
        self, application_name: str, views: Sequence[View[Any]], recorder: Any
    ) -> tuple[int, list[int]] | None:
        """One read for what a cold catch-up used to read in four: the log's
        top first (as ``max_notification_id``), then every position."""
        store = self.datastore
        if any(
            getattr(one, "datastore", None) is not store for one in (recorder, *views)
        ):
            return None
        keys = [view.tracking_key(application_name) for view in views]
        top, found = self._top_and_positions(recorder, keys)
        return top or 0, [found.get(key) or 0 for key in keys]


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
        if not self.sealed:
            return self._read(*self.page_query(limit=limit, after=after, scope=scope))
        # A row whose key is gone is left out; read on, so a short page still
        # means the end (callers page until one is short).
        kept: list[ListingRow] = []
        while True:
            with self._reading() as cursor:
                stored = self._fetch_stored(
                    cursor, *self.page_query(limit=limit, after=after, scope=scope)
                )
            kept += self._opened(stored)
            if len(stored) < limit or len(kept) >= limit:
                return kept[:limit]
            last = stored[-1]
            created = last.created_at if last.created_at is not None else 0
            after = (created, last.session_id)
