"""``StoreQuery``: the query service on a store opened for reading only.

What :func:`~agentlog.infrastructure.store.open_query` returns: every read of
:class:`~agentlog.application.query.SessionQuery`, over a store this process
does not write. It holds no live session, so it needs no ``Sessions`` to list:
the listing is read through the backend's shortcut when it has one
(``ports.ListingShortcut``: one connection, one check of the views, the page;
docs/performance.md), and the store is opened in full (a ``Sessions``, whose
opening finishes a pending erase, docs/erasure.md) only for the first read the
shortcut cannot answer. The pages are the same either way: same rows, JSON,
cursors and errors.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from agentlog.application.query import (
    DEFAULT_PAGE_SIZE,
    DEFAULT_READ_WINDOW_MAX,
    SessionQuery,
)
from agentlog.application.summaries import (
    check_window,
    decode_cursor,
    page_of,
    summary_row,
)
from agentlog.domain.errors import SessionQueryError, StoreClosedError

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

    from agentlog.application.ports import ListingShortcut
    from agentlog.application.query_models import SessionSummaryPage
    from agentlog.application.sessions import Sessions
    from agentlog.application.store_reader import PersistenceReader

_STORE = object()
"""``persistence`` not set by the caller: the store's own reader."""


class StoreQuery(SessionQuery):
    """:class:`SessionQuery` over a store it opens itself, for reading.

    ``open_app`` opens the store in full (a ``Sessions``) the first time a read
    needs it; ``shortcut`` lists without it. Close it (or use it as a context
    manager) to close what it opened. Thread-safe as ``SessionQuery`` is.
    """

    def __init__(
        self,
        open_app: Callable[[], Sessions],
        *,
        shortcut: ListingShortcut | None = None,
        read_window_max: object = DEFAULT_READ_WINDOW_MAX,
    ) -> None:
        if type(read_window_max) is not int or read_window_max < 0:
            raise SessionQueryError.invalid_config()
        self.read_window_max = read_window_max
        self._open_app = open_app
        self._app: Sessions | None = None
        self._shortcut = shortcut
        self._mounted: PersistenceReader | object | None = _STORE
        self._own_reader: PersistenceReader | None = None
        self._lock = threading.RLock()
        self._closed = False

    @property
    def app(self) -> Sessions:
        """The store opened in full, on first use (``StoreClosedError`` once
        this query is closed)."""
        with self._lock:
            if self._closed:
                raise StoreClosedError
            if self._app is None:
                self._app = self._open_app()
            return self._app

    @app.setter
    def app(self, value: Sessions) -> None:
        with self._lock:
            self._app = value

    @property
    def persistence(self) -> PersistenceReader | None:
        """The mounted reader: the store's own unless another was mounted."""
        with self._lock:
            if self._mounted is _STORE:
                self._mounted = self._own_reader = self.store_reader()
            return self._mounted  # type: ignore[return-value]

    @persistence.setter
    def persistence(self, reader: PersistenceReader | None) -> None:
        with self._lock:
            self._mounted = reader

    def mount(self, reader: PersistenceReader | None = None) -> None:
        """Mount ``reader`` (default: the store's own, opened on first use)."""
        with self._lock:
            self._mounted = _STORE if reader is None else reader

    def list_summaries(
        self,
        limit: int = DEFAULT_PAGE_SIZE,
        *,
        cursor: str | None = None,
        offset: int = 0,
    ) -> SessionSummaryPage:
        """:meth:`SessionQuery.list_summaries`, through the shortcut when it
        can answer (a first or a cursor's page of the store's own listing)."""
        check_window(limit, offset)
        after = None if cursor is None else decode_cursor(cursor)
        stored = self._shortcut_page(limit + 1, after) if offset == 0 else None
        if stored is None:
            return super().list_summaries(limit, cursor=cursor, offset=offset)
        from agentlog.application.query_models import SessionSummaryPage

        rows = [
            summary_row(row, live=False, persisted=True, copy=False) for row in stored
        ]
        return SessionSummaryPage.of(page_of(rows, limit))

    def _shortcut_page(self, count: int, after: Any) -> list[Any] | None:
        """The shortcut's rows, while nothing else could differ: no other
        reader mounted, no session live in the opened store, not closed."""
        with self._lock:
            shortcut = self._shortcut
            own = self._mounted is _STORE or self._mounted is self._own_reader
            if shortcut is None or self._closed or not own:
                return None
            if self._app is not None and self._app.live_sessions():
                return None
        return shortcut.page(count, after)

    def close(self) -> None:
        """Close what this query opened; its reads then raise ``StoreClosedError``."""
        with self._lock:
            self._closed = True
            shortcut, self._shortcut = self._shortcut, None
            app, self._app = self._app, None
        if shortcut is not None:
            shortcut.close()
        if app is not None:
            app.close()

    def __enter__(self) -> StoreQuery:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
