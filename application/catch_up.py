"""Keeping the views current by pulling the notification log (``catch_up``).

SQLite cannot ``subscribe()``, so :class:`SessionViews` reads the application's
notification log after each view's tracking position and feeds the projections,
a page per transaction. Reads call it first, so a caller reads its own flushed
writes; on PostgreSQL a view worker (``BatchRunner``) may run the same projections
in another process, sharing the positions.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import TYPE_CHECKING, Any, cast

from eventsourcing.persistence import IntegrityError

from agentlog.application.ports import view_classes_for
from agentlog.application.projections import (
    BatchTracking,
    LineageView,
    ListingView,
    TitleView,
    View,
    decode_notification,
)
from agentlog.application.store_errors import (
    is_disk_full,
    is_unwritable,
    store_errors,
)

if TYPE_CHECKING:
    from eventsourcing.application import Application

    from agentlog.application.ports import ViewClasses
    from agentlog.application.session_projections import (
        LineageProjection,
        ListingProjection,
        SessionProjection,
        TitleProjection,
    )
    from agentlog.application.view_rows import ProjectedEvent


logger = logging.getLogger(__name__)


def catch_up_to_read(views: Any, top: int | None = None) -> None:
    """Catch ``views`` up before a read; if they cannot be written, read what
    they hold. ``top``: the log's top, read at or after the read began (a
    read of several views reads it once, see ``SessionViews.catch_up``).

    A read catches up first so a caller sees its own writes. A store opened
    read-only is not caught up at all: its views are kept by whoever writes it
    (a replica's by the worker or the reads on its primary), so reads answer
    from what they hold without reading the log twice. When the views cannot
    be written because the disk is full (or a store turned read-only under us),
    listing and search keep answering from what is already indexed (logged), as
    the events stay readable. Any other store failure is ours (a closed store's
    ``StoreClosedError``), so a listing names it in the same words.
    """
    if getattr(views.app, "read_only", False):
        return
    try:
        with store_errors():
            views.catch_up(top)
    except Exception as error:
        if not is_unwritable(error):
            raise
        why = "the store's disk is full" if is_disk_full(error) else "read-only"
        logger.warning(
            "the views cannot catch up (%s): reading what they already hold;"
            " newer sessions and events are missing from listings and search",
            why,
        )


# ----------------------------------------------------------------- catch-up


def fold_batch(
    projection: SessionProjection[Any],
    app_name: str,
    decoded: list[tuple[int, ProjectedEvent | None]],
    position: int,
    last: int,
) -> int:
    """Fold the notifications of ``decoded`` (id, event) after ``position``, up
    to ``last``, as one batch; returns the view's position after it.

    The batch is recorded only from ``position`` (:class:`BatchTracking`): if
    another writer (a worker, another process) has moved the view meanwhile,
    what it folded is left out and the rest is folded again from where it
    stopped, so no notification is applied twice. The catch-up and the view
    worker (``infrastructure/views/batch_runner.py``) both fold this way.
    """
    while position < last:
        events = [
            event
            for number, event in decoded
            if number > position and event is not None
        ]
        tracking = BatchTracking(app_name, last, after=position)
        try:
            if projection.process_batch(events, tracking):
                return last
        except IntegrityError:
            logger.info(
                "view %s: moved by another writer since %d; folding after it",
                projection.name,
                position,
            )
        moved = projection.view.max_tracking_id(app_name) or 0
        if moved <= position:
            msg = f"view {projection.name} could not record position {last}"
            raise IntegrityError(msg)
        position = moved
    return position


class SessionViews:
    """The three views of one application, pulled up to date on demand.

    ``catch_up()`` reads the notification log after the lowest view position and
    feeds each projection the part it has not seen, a page per transaction. A
    read calls it first, so a caller always reads its own flushed writes.

    The views are opened at once; their projections (``listing``, ``titles``,
    ``lineage``) are built when first used, which a read of views that are
    already current never does: the library's projection module is not
    imported (``agentlog ls``, docs/performance.md).
    """

    PAGE_SIZE = 1000

    def __init__(
        self, app: Application[Any], *, classes: ViewClasses | None = None
    ) -> None:
        classes = classes or view_classes_for(app.factory)
        self._app = weakref.ref(app)
        factory = app.factory
        self.listing_view = cast(
            "ListingView", factory.tracking_recorder(classes.listing)
        )
        self.titles_view = cast("TitleView", factory.tracking_recorder(classes.titles))
        self.lineage_view = cast(
            "LineageView", factory.tracking_recorder(classes.lineage)
        )
        self.views: tuple[View[Any], ...] = (
            self.listing_view,
            self.titles_view,
            self.lineage_view,
        )
        self._projections: tuple[SessionProjection[Any], ...] = ()
        self._positions: dict[View[Any], int] = {}
        self._lock = threading.RLock()
        self.processed = 0
        """Notifications read by ``catch_up`` in this process (for tests and stats)."""

    @property
    def projections(self) -> tuple[SessionProjection[Any], ...]:
        """The projection of each view, in the order of ``views``."""
        with self._lock:
            if not self._projections:
                from agentlog.application.session_projections import (
                    LineageProjection,
                    ListingProjection,
                    TitleProjection,
                )

                self._projections = (
                    ListingProjection(self.listing_view),
                    TitleProjection(self.titles_view),
                    LineageProjection(self.lineage_view),
                )
            return self._projections

    @property
    def listing(self) -> ListingProjection:
        return cast("ListingProjection", self.projections[0])

    @property
    def titles(self) -> TitleProjection:
        return cast("TitleProjection", self.projections[1])

    @property
    def lineage(self) -> LineageProjection:
        return cast("LineageProjection", self.projections[2])

    @property
    def app(self) -> Application[Any]:
        app = self._app()
        if app is None:
            msg = "the application of these views has been garbage collected"
            raise RuntimeError(msg)
        return app

    def catch_up(self, top: int | None = None) -> int:
        """Bring every view up to the log's last notification; returns rows read.

        ``top``: the log's last notification id as the caller read it at or
        after its read began (a search reads it once for the index and the
        titles); views known to be there read nothing.
        """
        app = self.app
        with self._lock:
            # Views known current need only the log's top: the usual warm read.
            if self._positions:
                if top is None:
                    top = app.recorder.max_notification_id() or 0
                if min(self._positions.values()) >= top:
                    return 0
            top, positions = self._read_positions()
            read = 0
            while (start := min(positions.values())) < top:
                page = app.recorder.select_notifications(
                    start, self.PAGE_SIZE, stop=top, inclusive_of_start=False
                )
                if not page:
                    break
                read += len(page)
                decoded = [(n.id, decode_notification(app.mapper, n)) for n in page]
                last = page[-1].id
                for projection in self.projections:
                    view = projection.view
                    positions[view] = self.fold(
                        projection, decoded, positions[view], last
                    )
            self._positions = positions
            self.processed += read
            if read:
                logger.debug("views caught up: %d notification(s) to %d", read, top)
            return read

    def _position(self, view: View[Any]) -> int:
        return view.max_tracking_id(self.app.name) or 0

    def _read_positions(self) -> tuple[int, dict[View[Any], int]]:
        """The log's top and every view's position: in one transaction where
        the backend can (a cold read's catch-up), else one read each."""
        app = self.app
        together = self.views[0].read_positions(app.name, self.views, app.recorder)
        if together is not None:
            top, found = together
            return top, dict(zip(self.views, found, strict=True))
        top = app.recorder.max_notification_id() or 0
        return top, {view: self._position(view) for view in self.views}

    def fold(
        self,
        projection: SessionProjection[Any],
        decoded: list[tuple[int, ProjectedEvent | None]],
        position: int,
        last: int,
    ) -> int:
        """:func:`fold_batch` for one of these views."""
        return fold_batch(projection, self.app.name, decoded, position, last)

    def rebuild(self) -> int:
        """Drop every view and fold the whole log again from position 0."""
        with self._lock:
            for view in self.views:
                view.clear(self.app.name)
            self._positions = {}
            return self.catch_up()


_VIEWS: weakref.WeakKeyDictionary[Application[Any], SessionViews] = (
    weakref.WeakKeyDictionary()
)
_VIEWS_LOCK = threading.Lock()


def views_of(app: Application[Any]) -> SessionViews:
    """The application's views, built once per application object and shared."""
    with _VIEWS_LOCK:
        views = _VIEWS.get(app)
        if views is None:
            # Opening the views may create their tables: a store failure is
            # ours (StoreUnavailableError), never the library's raw error.
            with store_errors():
                views = SessionViews(app)
            _VIEWS[app] = views
        return views
