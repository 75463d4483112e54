"""The view interfaces of the session log's projections, and decoding its rows.

Each view is a table of rows keyed by session id, kept by a library
:class:`~eventsourcing.projection.Projection`
(:mod:`~agentlog.application.session_projections`); a view change and its
tracking position commit in one transaction, so every notification counts exactly
once. The row folds live in ``view_rows``; the backend classes in
``agentlog.infrastructure.views``; the pull loop that drives them in ``catch_up``.
The projections are a module of their own because the library's projection module
costs milliseconds to import, and a read whose views are current needs only the
views (``agentlog ls``, docs/performance.md).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, cast

from eventsourcing.persistence import Tracking, TrackingRecorder

from agentlog.application.view_rows import (
    ERASED_TYPE,
    HEADER_TYPE,
    LineageRow,
    ListingRow,
    Number,
    ProjectedEvent,
    TitleRow,
)
from agentlog.domain.errors import EncryptionError
from agentlog.domain.json import loads

if TYPE_CHECKING:
    from eventsourcing.persistence import Mapper, Notification, StoredEvent

    from agentlog.application.scope import Scope

log = logging.getLogger(__name__)

VIEW_TRACKING_TABLE = "agentlog_view_tracking"
"""PostgreSQL: one tracking table for every view, however the view was built."""
TRow = TypeVar("TRow")
Merge = Callable[[dict[str, TRow]], list[TRow]]
"""Given the current rows of the keys (mutable), return the rows to write."""


@dataclass(frozen=True)
class BatchTracking(Tracking):
    """The position a batch of notifications reaches, and the one it starts
    from: recorded only if the view is still at ``after``.

    A batch folds every notification in ``(after, notification_id]`` and
    records only its last one, so a writer that recorded a position inside
    that range (a worker, another process's catch-up) has applied some of
    them already: the batch is refused (``IntegrityError``), and its caller
    folds again what lies after the position now recorded. Without it the
    library's rule (a position only moves forward) would let both apply the
    notifications they share.
    """

    after: int = 0


# ------------------------------------------------------------------- events


def projected_event(event: object) -> ProjectedEvent | None:
    """Adapt a domain event (as a ``ProjectionRunner`` delivers it) or pass through."""
    if isinstance(event, ProjectedEvent):
        return event
    # The event classes (and the payload models behind them) are imported by
    # the first fold, not by a read whose views are current (``agentlog ls``).
    from agentlog.domain.events import Erased, SessionEvent
    from agentlog.domain.session import SessionCreated

    if isinstance(event, SessionEvent):
        return ProjectedEvent(str(event.originator_id), event.type, event.envelope)
    if isinstance(event, SessionCreated):
        line = {"type": HEADER_TYPE, **event.header}
        return ProjectedEvent(str(event.originator_id), HEADER_TYPE, line)
    if isinstance(event, Erased):
        return ProjectedEvent(str(event.originator_id), ERASED_TYPE, event.state)
    return None


class RowDecoder(Protocol):
    """What the views need of the application's mapper: a row's plain bytes.

    ``SessionMapper.decode_bytes`` (agentlog.infrastructure.mapper) opens a row
    with its session's key, then decrypts and decompresses as configured: every
    reader of rows decodes them this one way.
    """

    def decode_bytes(self, stored_event: StoredEvent) -> bytes: ...


def decode_state(mapper: RowDecoder, row: StoredEvent) -> Any:
    """A stored row's state as JSON, decoded by the application's mapper."""
    return loads(mapper.decode_bytes(row))


def decode_notification(
    mapper: RowDecoder | Mapper[Any], notification: Notification
) -> ProjectedEvent | None:
    """Decode a row straight to a dict (no event objects); ``None`` if unusable.

    An undecodable row (corrupt, or its session's key forgotten) is logged and
    skipped: one session's rows must not stall every view of every other session.
    An :class:`EncryptionError` is about the store's settings or key store (no
    encryption configured, another master key), not the row: it propagates, so
    no view moves past rows that open with the right settings.
    """
    try:
        value = decode_state(cast("RowDecoder", mapper), notification)
    except EncryptionError:
        raise
    except Exception as error:
        log.warning(
            "views skip undecodable notification %s: %s",
            notification.id,
            type(error).__name__,
        )
        return None
    if type(value) is not dict:
        return None
    session_id = str(notification.originator_id)
    if notification.topic == HEADER_TYPE and notification.originator_version == 1:
        return ProjectedEvent(session_id, HEADER_TYPE, value)
    if notification.topic == ERASED_TYPE:
        from agentlog.domain.events import Erased

        if Erased.is_state(value):
            return ProjectedEvent(session_id, ERASED_TYPE, value)
    event_type = value.get("type")
    if type(event_type) is not str or event_type == HEADER_TYPE:
        return None
    return ProjectedEvent(session_id, event_type, value)


def split_erased(
    events: Sequence[ProjectedEvent], relevant: Callable[[ProjectedEvent], bool]
) -> tuple[dict[str, list[ProjectedEvent]], set[str]]:
    """A batch's relevant events per session, and the sessions erased in it.

    An erased session's events are dropped, whatever their order in the batch:
    its rows are purged instead (docs/erasure.md). Every projection sees the
    tombstone, relevant or not.
    """
    erased = {event.session_id for event in events if event.type == ERASED_TYPE}
    by_session: dict[str, list[ProjectedEvent]] = {}
    for event in events:
        if event.session_id not in erased and relevant(event):
            by_session.setdefault(event.session_id, []).append(event)
    return by_session, erased


# -------------------------------------------------------------------- views


class View(TrackingRecorder, ABC, Generic[TRow]):
    """Rows keyed by session id, written together with a tracking position.

    Tracking is *per view*: the library keys tracking rows by the upstream
    application name only, so two views in one database would share a position.
    Each view therefore records ``"<application>#<view_name>"``. ``view_name``
    and ``table_name`` carry the table layout's version: a new layout gets new
    tables and a position of its own, and the views fold the log again into them.
    """

    view_name: ClassVar[str] = ""
    table_name: ClassVar[str] = ""
    row_type: ClassVar[type[Any]]
    MIGRATION_NAME: ClassVar[str] = "__migration__"

    def tracking_key(self, application_name: str) -> str:
        if application_name == self.MIGRATION_NAME:
            return application_name
        return f"{application_name}#{self.view_name}"

    @abstractmethod
    def save(
        self,
        keys: Collection[str],
        merge: Merge[TRow],
        tracking: Tracking,
        purge: Collection[str] = (),
    ) -> bool:
        """In one transaction: skip (False) if ``tracking`` is already recorded,
        else write ``merge(current rows of keys)``, delete every row of the
        ``purge`` sessions (erased ones) and record ``tracking``."""

    @abstractmethod
    def purge(self, session_ids: Collection[str], cursor: Any = None) -> None:
        """Delete every row about these sessions (erased ones, docs/erasure.md).

        With a ``cursor`` (of a transaction on the view's own datastore: the
        erase's), in that transaction; without, in a transaction of its own.
        The in-memory views take their own lock.
        """

    @abstractmethod
    def select_rows(self, keys: Collection[str]) -> dict[str, TRow]:
        """The rows of these session ids that exist."""

    @abstractmethod
    def select_all(self) -> list[TRow]:
        """Every row, ordered by session id (for rebuild checks and tools)."""

    @abstractmethod
    def clear(self, application_name: str) -> None:
        """Drop every row and this view's position, in one transaction."""

    def read_positions(
        self, application_name: str, views: Sequence[View[Any]], recorder: Any
    ) -> tuple[int, list[int]] | None:
        """The log's last notification id (``recorder``'s) and the position of
        each of ``views``, read in one transaction; ``None``: this backend
        reads them one by one (a catch-up then makes four reads, not one)."""
        return None


class ListingView(View[ListingRow], ABC):
    # v3: the ``owner`` column (listings and filters select by it).
    view_name = "listing.v3"
    table_name = "agentlog_listing_v3"
    row_type = ListingRow

    @abstractmethod
    def select_page(
        self,
        *,
        limit: int,
        after: tuple[Number, str] | None = None,
        scope: Scope | None = None,
    ) -> list[ListingRow]:
        """Rows with a header, newest first (createdAt desc, id asc), after a key.

        With ``scope``, only rows whose columns equal ``scope.columns()``, selected
        in the query through an index (never by reading every row).
        """

    @abstractmethod
    def select_headers(self, *, scope: Scope | None = None) -> list[dict[str, Any]]:
        """Every listed header (unordered), or those of ``scope``'s columns."""


class TitleView(View[TitleRow], ABC):
    view_name = "titles.v2"
    table_name = "agentlog_titles_v2"
    row_type = TitleRow


class LineageView(View[LineageRow], ABC):
    view_name = "lineage.v2"
    table_name = "agentlog_lineage_v2"
    row_type = LineageRow

    @abstractmethod
    def select_children(self, parent_id: str) -> list[LineageRow]:
        """The sessions whose ``parentSession`` is ``parent_id``."""

    @abstractmethod
    def select_subtree(self, session_id: str) -> list[LineageRow]:
        """Every stored descendant of ``session_id``, any depth, in one read."""

    @abstractmethod
    def select_ancestry(self, session_id: str) -> list[LineageRow]:
        """The row of ``session_id`` and its stored ancestors, in one read."""
