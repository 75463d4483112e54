"""The default persistence reader of the query service: views plus the event store.

The spec's persistence port offers ``list() -> [header]`` and ``load(id) ->
(header, events)``; any object with those two methods can be mounted. This one
answers ``list`` and the per-id lookups from the materialised views (never
reading a log) and ``load`` straight from the recorder, without taking the
session over: reads never write. The listing's reads import no model: titles
are folded by :mod:`~agentlog.domain.title` when one is asked for
(docs/performance.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, cast

from agentlog.application.catch_up import catch_up_to_read
from agentlog.domain.legacy import check_legacy

if TYPE_CHECKING:
    import builtins
    from collections.abc import Sequence

    from eventsourcing.application import Application
    from eventsourcing.persistence import StoredEvent

    from agentlog.application.catch_up import SessionViews
    from agentlog.application.scope import Scope
    from agentlog.application.sessions import Sessions
    from agentlog.application.stored_log import StoredLog
    from agentlog.application.surface_stream import SurfaceStream
    from agentlog.application.view_rows import ListingRow, Number
    from agentlog.domain.header import Header
    from agentlog.domain.json import Envelope
    from agentlog.domain.title import TitleSnapshot

Headers = list[dict[str, Any]]
Log = tuple[dict[str, Any], list["Envelope"]]


class PersistenceReader(Protocol):
    """What the query needs from a mounted persistence backend."""

    def list(self) -> Sequence[Header]: ...

    def load(self, session_id: str) -> tuple[Header, Sequence[Envelope]]: ...


class StoreReader:
    """Listing, titles and lineage from the views; logs from the event store."""

    def __init__(self, app: Application[Any], views: SessionViews) -> None:
        self.app = app
        self.views = views

    def catch_up(self, top: int | None = None) -> None:
        catch_up_to_read(self.views, top)

    # ------------------------------------------------------------ the port

    def list(self, *, scope: Scope | None = None) -> Headers:
        """Every listed header; with ``scope``, those it admits, selected in the
        view's query (docs/scope.md#enforced-in-the-query)."""
        self.catch_up()
        headers = self.views.listing_view.select_headers(scope=scope)
        if scope is None:
            return headers
        return [header for header in headers if scope.admits(header)]

    def load(self, session_id: str) -> Log:
        return self._load(session_id, None, None)

    # ------------------------------------------------------- fast lookups

    def lookup(
        self, session_id: str, *, catch_up: bool = True
    ) -> dict[str, Any] | None:
        """The listed header of one id, or ``None`` (the view, not the log)."""
        row = self.row(session_id, catch_up=catch_up)
        return None if row is None else row.header

    def row(self, session_id: str, *, catch_up: bool = True) -> ListingRow | None:
        if catch_up:
            self.catch_up()
        row = self.views.listing_view.select_rows([session_id]).get(session_id)
        return row if row is not None and row.header is not None else None

    def rows(self, session_ids: Sequence[str]) -> dict[str, ListingRow]:
        found = self.views.listing_view.select_rows(session_ids)
        return {key: row for key, row in found.items() if row.header is not None}

    def page(
        self,
        *,
        limit: int,
        after: tuple[Number, str] | None,
        scope: Scope | None = None,
    ) -> builtins.list[ListingRow]:
        """Up to ``limit`` rows newest first after ``after``, inside ``scope``.

        The view selects by the scope's columns; each row's header is then
        checked by the exact rule, and a row that fails it (a header value of
        another type, which the view stores as NULL) is replaced by reading on.
        """
        view = self.views.listing_view
        rows = view.select_page(limit=limit, after=after, scope=scope)
        if scope is None:
            return rows
        kept = [row for row in rows if row.header and scope.admits(row.header)]
        while len(rows) == limit and len(kept) < limit:
            last = rows[-1]
            created = last.created_at if last.created_at is not None else 0
            after = (created, last.session_id)
            rows = view.select_page(limit=limit, after=after, scope=scope)
            kept += [row for row in rows if row.header and scope.admits(row.header)]
        return kept[:limit]

    def children(self, session_id: str) -> Headers:
        """Headers of the sessions whose parent is ``session_id`` (lineage view)."""
        return [
            row.header for row in self.views.lineage_view.select_children(session_id)
        ]

    def lineage(self, session_id: str) -> tuple[Headers, Headers]:
        """Stored headers of the ancestry and of the subtree of an id (two reads)."""
        view = self.views.lineage_view
        ancestry = [row.header for row in view.select_ancestry(session_id)]
        return ancestry, [row.header for row in view.select_subtree(session_id)]

    def title(self, session_id: str) -> TitleSnapshot | None:
        """The latest title, from the titles view (equal to folding the log)."""
        from agentlog.domain.title import fold_session_title

        self.catch_up()
        row = self.views.titles_view.select_rows([session_id]).get(session_id)
        return None if row is None else fold_session_title([row.event()])

    def surface(self, session_id: str, *, at: int | None = None) -> SurfaceStream:
        """The surface from the stored state (``at``: as of that seq), its rows
        read a chunk at a time."""
        from agentlog.application.surface_stream import stored_surface

        sessions = cast("Sessions", self.app)
        return stored_surface(
            sessions,
            session_id,
            sessions.history.rows_at,
            lambda row: self._event(session_id, row),
            at,
        )

    def load_range(self, session_id: str, first: int, last: int) -> Log:
        """The header and the stored events with seqs ``first..last`` only."""
        return self._load(session_id, first, last)

    # ------------------------------------------------------------ decoding

    def _load(self, session_id: str, first: int | None, last: int | None) -> Log:
        stored = self._stored_log()
        header = stored.header(session_id, check_version=True)
        if first is None or last is None:
            events = stored.events(session_id)
        else:
            events = stored.events(session_id, first, last)
        for event in events:
            self._check_legacy(session_id, event)
        return header, events

    def _event(self, session_id: str, row: StoredEvent) -> Envelope:
        value = self._stored_log().envelope(row)
        self._check_legacy(session_id, value)
        return value

    def _stored_log(self) -> StoredLog:
        """The application's one reader of stored rows (the same checks everywhere)."""
        return cast("Sessions", self.app).stored_log

    @staticmethod
    def _check_legacy(session_id: str, event: Envelope) -> None:
        check_legacy(session_id, str(event["type"]), event.get("data"), event["seq"])
