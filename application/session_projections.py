"""The projections of the session log into the views: one library
:class:`~eventsourcing.projection.Projection` per view.

Each folds a batch of log lines into its view's rows (the folds are in
``view_rows``) and saves them with the tracking position in one transaction.
Built by ``catch_up`` when a view is behind, or run by a ``ProjectionRunner``
(:mod:`agentlog.infrastructure.views.worker`); the views themselves are in
:mod:`~agentlog.application.projections`.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from eventsourcing.projection import Projection

from agentlog.application.projections import (
    LineageView,
    ListingView,
    TitleView,
    View,
    projected_event,
    split_erased,
)
from agentlog.application.view_rows import (
    ERASED_TYPE,
    HEADER_TYPE,
    ProjectedEvent,
    fold_lineage,
    fold_listing,
    fold_title,
)
from agentlog.domain.title_text import TITLE_EVENT

if TYPE_CHECKING:
    from collections.abc import Sequence

    from eventsourcing.persistence import Tracking

log = logging.getLogger(__name__)

TView = TypeVar("TView", bound=View[Any])


class SessionProjection(Projection[TView], ABC, Generic[TView]):
    """Folds log lines into a view's rows; one batch is one transaction."""

    @abstractmethod
    def fold(self, row: Any, events: list[ProjectedEvent], session_id: str) -> Any:
        """The new row after one session's events in this batch, or ``None``."""

    def relevant(self, event: ProjectedEvent) -> bool:
        return True

    def process_event(self, domain_event: Any, tracking: Tracking) -> None:
        event = projected_event(domain_event)
        self.process_batch([] if event is None else [event], tracking)

    def process_batch(
        self, events: Sequence[ProjectedEvent], tracking: Tracking
    ) -> bool:
        """Apply events up to ``tracking``; False if that position was already done."""
        by_session, erased = split_erased(events, self.relevant)

        def merge(rows: dict[str, Any]) -> list[Any]:
            changed = (
                self._fold_isolated(rows.get(key), batch, key)
                for key, batch in by_session.items()
            )
            return [row for row in changed if row is not None]

        return self.view.save(by_session.keys(), merge, tracking, erased)

    def _fold_isolated(
        self, row: Any, events: list[ProjectedEvent], session_id: str
    ) -> Any:
        """``fold``, but a session it cannot fold keeps its row (and is logged).

        The batch holds other sessions' events: one session's data must never
        stop the views, and with them the reads of every other session.
        """
        try:
            return self.fold(row, events, session_id)
        except Exception:
            log.exception("view %s skips session %r", self.name, session_id)
            return None


class ListingProjection(SessionProjection[ListingView]):
    """Header fields, title, first prompt, times and event count per session."""

    name = "agentlog_listing"

    def fold(self, row: Any, events: list[ProjectedEvent], session_id: str) -> Any:
        return fold_listing(row, events, session_id)


class TitleProjection(SessionProjection[TitleView]):
    """The latest ``session/title`` event per session."""

    name = "agentlog_titles"
    topics = (TITLE_EVENT, ERASED_TYPE)  # a runner is sent only these

    def relevant(self, event: ProjectedEvent) -> bool:
        return event.type == TITLE_EVENT

    def fold(self, row: Any, events: list[ProjectedEvent], session_id: str) -> Any:
        return fold_title(row, events, session_id)


class LineageProjection(SessionProjection[LineageView]):
    """Parent links from the created events."""

    name = "agentlog_lineage"
    topics = (HEADER_TYPE, ERASED_TYPE)

    def relevant(self, event: ProjectedEvent) -> bool:
        return event.type == HEADER_TYPE

    def fold(self, row: Any, events: list[ProjectedEvent], session_id: str) -> Any:
        return fold_lineage(row, events, session_id)
