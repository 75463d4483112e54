"""In-memory views for the POPO store: dicts guarded by the recorder's lock.

With encryption on, the rows are held sealed as the SQL views store them
(``views.sealing``): the in-memory store keeps the same contract, erase and
filters included, as the stores that are copied.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections import defaultdict
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from eventsourcing.persistence import IntegrityError

from agentlog.application.ports import ViewClasses
from agentlog.application.projections import (
    BatchTracking,
    LineageView,
    ListingView,
    TitleView,
    View,
)
from agentlog.application.view_rows import LineageRow, ListingRow, Number, TitleRow
from agentlog.infrastructure.eventsourcing_seam import KeyedPOPOTracking
from agentlog.infrastructure.views.sealing import SealableView

if TYPE_CHECKING:
    from collections.abc import Collection

    from eventsourcing.persistence import Tracking

    from agentlog.application.projections import Merge
    from agentlog.application.scope import Scope

TRow = TypeVar("TRow")


def _recency(row: ListingRow) -> tuple[Number, str]:
    created = row.created_at if row.created_at is not None else 0
    return (-created, row.session_id)


class POPOView(KeyedPOPOTracking, SealableView, View[TRow], Generic[TRow]):
    """Rows in a dict; a save holds the lock for rows and position together.

    A sealed view holds every row sealed and opens what it returns."""

    def __init__(self) -> None:
        super().__init__()
        self._rows: dict[str, TRow] = {}

    def save(
        self,
        keys: Collection[str],
        merge: Merge[TRow],
        tracking: Tracking,
        purge: Collection[str] = (),
    ) -> bool:
        with self.database_lock:
            done = self.max_tracking_id(tracking.application_name)
            if done is not None and done >= tracking.notification_id:
                return False
            if isinstance(tracking, BatchTracking) and (done or 0) != tracking.after:
                msg = f"the view left {tracking.after}: it is at {done}"
                raise IntegrityError(msg)
            rows = self._opened_by_id(keys)
            changed = [self._stored(row) for row in merge(rows)]
            # Nothing is mutated before this point, so a failing merge changes nothing.
            for row in changed:
                self._rows[row.session_id] = row  # type: ignore[attr-defined]
            self.purge(purge)
            self._changed()
            self.insert_tracking_locked(tracking)
            return True

    def purge(self, session_ids: Collection[str], cursor: Any = None) -> None:
        with self.database_lock:
            for session_id in session_ids:
                self._rows.pop(session_id, None)
            self._changed()

    def _changed(self) -> None:
        """Hook for subclasses that keep a derived index."""

    def _stored(self, row: TRow) -> TRow:
        return self.row_seal.seal(row) if self.sealed else row

    def _opened(self, rows: list[TRow]) -> list[TRow]:
        """Rows as folded; a sealed row whose key is gone is left out."""
        if not self.sealed:
            return rows
        return self.row_seal.open_all(rows)

    def _opened_by_id(self, keys: Collection[str]) -> dict[str, TRow]:
        rows = self._opened([self._rows[key] for key in keys if key in self._rows])
        return {row.session_id: row for row in rows}  # type: ignore[attr-defined]

    def select_rows(self, keys: Collection[str]) -> dict[str, TRow]:
        with self.database_lock:
            return self._opened_by_id(keys)

    def select_all(self) -> list[TRow]:
        with self.database_lock:
            return self._opened([self._rows[key] for key in sorted(self._rows)])

    def clear(self, application_name: str) -> None:
        with self.database_lock:
            self._rows.clear()
            self._changed()
            self.forget_tracking(application_name)


Group = tuple[str | None, str | None]


class POPOListingView(POPOView[ListingRow], ListingView):
    """The listing; the recency order is sorted once per change, then sliced.

    The same order is kept per ``(cwd, owner)`` group, so a scoped page reads
    the groups its scope names, not every row (docs/scope.md).
    """

    def __init__(self) -> None:
        super().__init__()
        self._recent: list[ListingRow] | None = None
        self._groups: dict[Group, list[ListingRow]] = {}

    def _changed(self) -> None:
        self._recent = None
        self._groups = {}

    def _ordered(self, scope: Scope | None) -> list[ListingRow]:
        """Listed rows newest first, of the scope's columns (call under the lock)."""
        if self._recent is None:
            listed = [row for row in self._rows.values() if row.header is not None]
            self._recent = sorted(listed, key=_recency)
            groups: dict[Group, list[ListingRow]] = {}
            for row in self._recent:
                groups.setdefault((row.cwd, row.owner), []).append(row)
            self._groups = groups
        if scope is None:
            return self._recent
        wanted = dict(self.scope_pairs(scope.columns()))
        if "session_id" in wanted:
            one = self._rows.get(str(wanted.pop("session_id")))
            candidates = [] if one is None or one.header is None else [one]
            return [r for r in candidates if _in_columns(r, wanted)]
        picked = [
            rows
            for (cwd, owner), rows in self._groups.items()
            if wanted.get("cwd", cwd) == cwd and wanted.get("owner", owner) == owner
        ]
        if len(picked) == 1:
            return picked[0]
        return list(heapq.merge(*picked, key=_recency))

    def select_page(
        self,
        *,
        limit: int,
        after: tuple[Number, str] | None = None,
        scope: Scope | None = None,
    ) -> list[ListingRow]:
        with self.database_lock:
            rows = self._ordered(scope)
        start = 0
        if after is not None:
            created, session_id = after
            start = bisect_right(rows, (-created, session_id), key=_recency)
        if not self.sealed:
            return rows[start : start + limit]
        # A row whose key is gone is left out; read on, so a short page still
        # means the end (callers page until one is short).
        kept: list[ListingRow] = []
        while start < len(rows) and len(kept) < limit:
            kept += self._opened(rows[start : start + limit])
            start += limit
        return kept[:limit]

    def select_headers(self, *, scope: Scope | None = None) -> list[dict[str, Any]]:
        with self.database_lock:
            if scope is not None:
                rows = self._opened(self._ordered(scope))
                return [row.header for row in rows if row.header]
            rows = self._opened(list(self._rows.values()))
            return [row.header for row in rows if row.header is not None]


def _in_columns(row: ListingRow, wanted: dict[str, str | None]) -> bool:
    return all(getattr(row, column) == value for column, value in wanted.items())


class POPOTitleView(POPOView[TitleRow], TitleView):
    """Latest title event per session."""


class POPOLineageView(POPOView[LineageRow], LineageView):
    """Parent links, with a parent -> children index rebuilt after each change."""

    def __init__(self) -> None:
        super().__init__()
        self._children: dict[str, list[LineageRow]] | None = None

    def _changed(self) -> None:
        self._children = None

    def select_children(self, parent_id: str) -> list[LineageRow]:
        with self.database_lock:
            if self._children is None:
                index: defaultdict[str, list[LineageRow]] = defaultdict(list)
                for row in self._rows.values():
                    if row.parent_session is not None:
                        index[row.parent_session].append(row)
                self._children = dict(index)
            return self._opened(list(self._children.get(parent_id, ())))

    def select_subtree(self, session_id: str) -> list[LineageRow]:
        found: list[LineageRow] = []
        seen, pending = {session_id}, [session_id]
        while pending:
            for row in self.select_children(pending.pop()):
                if row.session_id not in seen:
                    seen.add(row.session_id)
                    found.append(row)
                    pending.append(row.session_id)
        return found

    def select_ancestry(self, session_id: str) -> list[LineageRow]:
        found: list[LineageRow] = []
        with self.database_lock:
            row = self._rows.get(session_id)
            while row is not None and row not in found:
                found.append(row)
                parent = row.parent_session
                row = None if parent is None else self._rows.get(parent)
            return self._opened(found)


VIEW_CLASSES = ViewClasses(
    listing=POPOListingView, titles=POPOTitleView, lineage=POPOLineageView
)
