"""Materialised read models of the session log: the listing, titles and lineage.

Each view is a table of rows keyed by session id, kept by a library
:class:`~eventsourcing.projection.Projection`; a view change and its tracking
position commit in one transaction, so every notification counts exactly once.
SQLite cannot ``subscribe()``, so :class:`SessionViews` pulls the notification log
(``catch_up``) before each read; on PostgreSQL a ``ProjectionRunner`` may instead
run the same projections in a worker process. The backend view classes live in
``infrastructure.views``; the merge rules live here, once.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast

from eventsourcing.persistence import IntegrityError, Tracking, TrackingRecorder
from eventsourcing.projection import Projection

from domain.events import SessionEvent
from domain.json import loads
from domain.session import SessionCreated
from domain.title import TITLE_EVENT, is_eligible_message, message_text, normalize_title

if TYPE_CHECKING:
    from eventsourcing.application import Application
    from eventsourcing.persistence import Mapper, Notification

    from domain.json import Envelope

log = logging.getLogger(__name__)

HEADER_TYPE = "session"
"""The stored topic (and ``type``) of the created event that carries the header."""
FIRST_PROMPT_MAX_BYTES = 1000
VIEW_TRACKING_TABLE = "agentlog_view_tracking"
"""PostgreSQL: one tracking table for every view, however the view was built."""

Number = int | float
TRow = TypeVar("TRow")
Merge = Callable[[dict[str, TRow]], list[TRow]]
"""Given the current rows of the keys (mutable), return the rows to write."""


# ------------------------------------------------------------------- events


@dataclass(frozen=True, slots=True)
class ProjectedEvent:
    """One stored log line as the projections see it (``type`` is the wire type)."""

    session_id: str
    type: str
    envelope: dict[str, Any]

    @property
    def header(self) -> dict[str, Any]:
        return {k: v for k, v in self.envelope.items() if k != "type"}


def projected_event(event: object) -> ProjectedEvent | None:
    """Adapt a domain event (as a ``ProjectionRunner`` delivers it) or pass through."""
    if isinstance(event, ProjectedEvent):
        return event
    if isinstance(event, SessionEvent):
        return ProjectedEvent(str(event.originator_id), event.type, event.envelope)
    if isinstance(event, SessionCreated):
        line = {"type": HEADER_TYPE, **event.header}
        return ProjectedEvent(str(event.originator_id), HEADER_TYPE, line)
    return None


def decode_state(mapper: Mapper[Any], state: bytes) -> Any:
    """A stored state as JSON: decrypted and decompressed as the mapper would."""
    if mapper.cipher:
        state = mapper.cipher.decrypt(state)
    if mapper.compressor:
        state = mapper.compressor.decompress(state)
    return loads(state)


def decode_notification(
    mapper: Mapper[Any], notification: Notification
) -> ProjectedEvent | None:
    """Decode a row straight to a dict (no event objects); ``None`` if unusable.

    An undecodable row is logged and skipped: a corrupt log must not stall every
    view of every other session.
    """
    try:
        value = decode_state(mapper, notification.state)
    except Exception:
        log.warning("views skip undecodable notification %s", notification.id)
        return None
    if type(value) is not dict:
        return None
    session_id = str(notification.originator_id)
    if notification.topic == HEADER_TYPE and notification.originator_version == 1:
        return ProjectedEvent(session_id, HEADER_TYPE, value)
    event_type = value.get("type")
    if type(event_type) is not str or event_type == HEADER_TYPE:
        return None
    return ProjectedEvent(session_id, event_type, value)


# --------------------------------------------------------------------- rows

COLUMN_KINDS = ("text", "int", "number", "json")


@dataclass(frozen=True, slots=True)
class ListingRow:
    """One session in the listing: header fields and what the log says so far."""

    session_id: str
    header: dict[str, Any] | None = None
    created_at: Number | None = None
    parent_session: str | None = None
    cwd: str | None = None
    event_count: int = 0
    updated_at: Number | None = None
    first_prompt: str | None = None
    first_prompt_seq: int | None = None
    title: str | None = None
    title_seq: int | None = None

    KINDS: ClassVar[Mapping[str, str]] = {
        "session_id": "text",
        "header": "json",
        "created_at": "number",
        "parent_session": "text",
        "cwd": "text",
        "event_count": "int",
        "updated_at": "number",
        "first_prompt": "text",
        "first_prompt_seq": "int",
        "title": "text",
        "title_seq": "int",
    }


@dataclass(frozen=True, slots=True)
class TitleRow:
    """The latest ``session/title`` event of a session (latest seq wins)."""

    session_id: str
    seq: int
    time: Number
    data: Any

    KINDS: ClassVar[Mapping[str, str]] = {
        "session_id": "text",
        "seq": "int",
        "time": "number",
        "data": "json",
    }

    def event(self) -> Envelope:
        return {"type": TITLE_EVENT, "seq": self.seq, "time": self.time, "data": self.data}


@dataclass(frozen=True, slots=True)
class LineageRow:
    """A session's parent link (parent -> children is the indexed direction)."""

    session_id: str
    parent_session: str | None
    created_at: Number | None
    header: dict[str, Any]

    KINDS: ClassVar[Mapping[str, str]] = {
        "session_id": "text",
        "parent_session": "text",
        "created_at": "number",
        "header": "json",
    }


def columns(row_type: type[Any]) -> list[tuple[str, str]]:
    """``(name, kind)`` per column, in field order (the row's constructor order)."""
    kinds: Mapping[str, str] = row_type.KINDS
    return [(f.name, kinds[f.name]) for f in dataclasses.fields(row_type)]


def row_values(row: Any) -> tuple[Any, ...]:
    return tuple(getattr(row, f.name) for f in dataclasses.fields(row))


def _number(value: object) -> Number | None:
    if type(value) is int or (type(value) is float and math.isfinite(value)):
        return cast("Number", value)
    return None


def _text(value: object) -> str | None:
    return value if type(value) is str else None


# ---------------------------------------------------------------- row folds


def listing_created(row: ListingRow | None, event: ProjectedEvent) -> ListingRow:
    header = event.header
    row = row or ListingRow(event.session_id)
    created_at = _number(header.get("createdAt"))
    return dataclasses.replace(
        row,
        header=header,
        created_at=created_at,
        parent_session=_text(header.get("parentSession")),
        cwd=_text(header.get("cwd")),
        updated_at=row.updated_at if row.updated_at is not None else created_at,
    )


def listing_event(row: ListingRow | None, event: ProjectedEvent) -> ListingRow:
    """Any log event: the count and the updated time move forward."""
    row = row or ListingRow(event.session_id)
    seq, time = event.envelope.get("seq"), _number(event.envelope.get("time"))
    count = max(row.event_count, seq + 1) if type(seq) is int else row.event_count
    updated = row.updated_at
    if time is not None and (updated is None or time > updated):
        updated = time
    if count == row.event_count and updated == row.updated_at:
        return row
    return dataclasses.replace(row, event_count=count, updated_at=updated)


def listing_user_message(row: ListingRow | None, event: ProjectedEvent) -> ListingRow:
    row = listing_event(row, event)
    seq = event.envelope.get("seq")
    if (
        type(seq) is int
        and (row.first_prompt_seq is None or seq < row.first_prompt_seq)
        and is_eligible_message(event.envelope)
    ):
        prompt = normalize_title(message_text(event.envelope), FIRST_PROMPT_MAX_BYTES)
        row = dataclasses.replace(row, first_prompt=prompt, first_prompt_seq=seq)
    return row


def listing_title(row: ListingRow | None, event: ProjectedEvent) -> ListingRow:
    row = listing_event(row, event)
    seq, data = event.envelope.get("seq"), event.envelope.get("data")
    title = data.get("title") if isinstance(data, Mapping) else None
    if type(seq) is int and type(title) is str and (
        row.title_seq is None or seq > row.title_seq
    ):
        row = dataclasses.replace(row, title=title, title_seq=seq)
    return row


LISTING_HANDLERS: Mapping[
    str, Callable[[ListingRow | None, ProjectedEvent], ListingRow]
] = {
    HEADER_TYPE: listing_created,
    "user/message": listing_user_message,
    TITLE_EVENT: listing_title,
}


def fold_listing(row: ListingRow | None, event: ProjectedEvent) -> ListingRow:
    """The listing row after one more event (dispatch on the wire type)."""
    return LISTING_HANDLERS.get(event.type, listing_event)(row, event)


def title_row(row: TitleRow | None, event: ProjectedEvent) -> TitleRow | None:
    seq, time = event.envelope.get("seq"), _number(event.envelope.get("time"))
    if type(seq) is not int or time is None or (row is not None and row.seq >= seq):
        return None
    return TitleRow(event.session_id, seq, time, event.envelope.get("data"))


def lineage_row(row: LineageRow | None, event: ProjectedEvent) -> LineageRow:
    header = event.header
    return LineageRow(
        event.session_id,
        _text(header.get("parentSession")),
        _number(header.get("createdAt")),
        header,
    )


# -------------------------------------------------------------------- views


class View(TrackingRecorder, ABC, Generic[TRow]):
    """Rows keyed by session id, written together with a tracking position.

    Tracking is *per view*: the library keys tracking rows by the upstream
    application name only, so two views in one database would share a position.
    Each view therefore records ``"<application>#<view_name>"``.
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
    def save(self, keys: Collection[str], merge: Merge[TRow], tracking: Tracking) -> bool:
        """In one transaction: skip (False) if ``tracking`` is already recorded,
        else write ``merge(current rows of keys)`` and record ``tracking``."""

    @abstractmethod
    def select_rows(self, keys: Collection[str]) -> dict[str, TRow]:
        """The rows of these session ids that exist."""

    @abstractmethod
    def select_all(self) -> list[TRow]:
        """Every row, ordered by session id (for rebuild checks and tools)."""

    @abstractmethod
    def clear(self, application_name: str) -> None:
        """Drop every row and this view's position, in one transaction."""


class ListingView(View[ListingRow], ABC):
    view_name = "listing"
    table_name = "agentlog_listing"
    row_type = ListingRow

    @abstractmethod
    def select_page(
        self, *, limit: int, after: tuple[Number, str] | None = None
    ) -> list[ListingRow]:
        """Rows with a header, newest first (createdAt desc, id asc), after a key."""

    @abstractmethod
    def select_headers(self) -> list[dict[str, Any]]:
        """Every listed header (unordered); no log is read."""


class TitleView(View[TitleRow], ABC):
    view_name = "titles"
    table_name = "agentlog_titles"
    row_type = TitleRow


class LineageView(View[LineageRow], ABC):
    view_name = "lineage"
    table_name = "agentlog_lineage"
    row_type = LineageRow

    @abstractmethod
    def select_children(self, parent_id: str) -> list[LineageRow]:
        """The sessions whose ``parentSession`` is ``parent_id``."""


# -------------------------------------------------------------- projections

TView = TypeVar("TView", bound=View[Any])


class SessionProjection(Projection[TView], ABC, Generic[TView]):
    """Folds log lines into a view's rows; one batch is one transaction."""

    @abstractmethod
    def fold(self, row: Any, event: ProjectedEvent) -> Any:
        """The new row for this event, or ``None`` for no change."""

    def relevant(self, event: ProjectedEvent) -> bool:
        return True

    def process_event(self, domain_event: Any, tracking: Tracking) -> None:
        event = projected_event(domain_event)
        self.process_batch([] if event is None else [event], tracking)

    def process_batch(self, events: Sequence[ProjectedEvent], tracking: Tracking) -> bool:
        """Apply events up to ``tracking``; False if that position was already done."""
        wanted = [event for event in events if self.relevant(event)]

        def merge(rows: dict[str, Any]) -> list[Any]:
            changed: dict[str, Any] = {}
            for event in wanted:
                row = self.fold(rows.get(event.session_id), event)
                if row is not None and row is not rows.get(event.session_id):
                    rows[event.session_id] = changed[event.session_id] = row
            return list(changed.values())

        return self.view.save({event.session_id for event in wanted}, merge, tracking)


class ListingProjection(SessionProjection[ListingView]):
    """Header fields, title, first prompt, times and event count per session."""

    name = "agentlog_listing"

    def fold(self, row: Any, event: ProjectedEvent) -> Any:
        return fold_listing(row, event)


class TitleProjection(SessionProjection[TitleView]):
    """The latest ``session/title`` event per session."""

    name = "agentlog_titles"
    topics = (TITLE_EVENT,)

    def relevant(self, event: ProjectedEvent) -> bool:
        return event.type == TITLE_EVENT

    def fold(self, row: Any, event: ProjectedEvent) -> Any:
        return title_row(row, event)


class LineageProjection(SessionProjection[LineageView]):
    """Parent links from the created events."""

    name = "agentlog_lineage"
    topics = (HEADER_TYPE,)

    def relevant(self, event: ProjectedEvent) -> bool:
        return event.type == HEADER_TYPE

    def fold(self, row: Any, event: ProjectedEvent) -> Any:
        return lineage_row(row, event)


@dataclass(frozen=True, slots=True)
class ViewClasses:
    """One backend's view classes."""

    listing: type[ListingView]
    titles: type[TitleView]
    lineage: type[LineageView]


VIEW_MODULES: Mapping[str, str] = {
    "eventsourcing.popo": "infrastructure.views.popo",
    "eventsourcing.sqlite": "infrastructure.views.sqlite",
    "eventsourcing.postgres": "infrastructure.views.postgres",
}


def view_classes_for(factory: object) -> ViewClasses:
    """The view classes for a factory's backend, resolved by module name.

    The application layer does not import the adapters; each adapter module
    exports ``VIEW_CLASSES``.
    """
    for cls in type(factory).__mro__:
        module = VIEW_MODULES.get(cls.__module__)
        if module is not None:
            return cast("ViewClasses", import_module(module).VIEW_CLASSES)
    msg = f"agentlog has no views for {type(factory).__qualname__}"
    raise TypeError(msg)


# ----------------------------------------------------------------- catch-up


class SessionViews:
    """The three views of one application, pulled up to date on demand.

    ``catch_up()`` reads the notification log after the lowest view position and
    feeds each projection the part it has not seen, a page per transaction. A
    read calls it first, so a caller always reads its own flushed writes.
    """

    PAGE_SIZE = 1000

    def __init__(
        self, app: Application[Any], *, classes: ViewClasses | None = None
    ) -> None:
        classes = classes or view_classes_for(app.factory)
        self._app = weakref.ref(app)
        factory = app.factory
        self.listing = ListingProjection(
            cast("ListingView", factory.tracking_recorder(classes.listing))
        )
        self.titles = TitleProjection(
            cast("TitleView", factory.tracking_recorder(classes.titles))
        )
        self.lineage = LineageProjection(
            cast("LineageView", factory.tracking_recorder(classes.lineage))
        )
        self.projections: tuple[SessionProjection[Any], ...] = (
            self.listing,
            self.titles,
            self.lineage,
        )
        self._positions: dict[SessionProjection[Any], int] = {}
        self._lock = threading.RLock()
        self.processed = 0
        """Notifications read by ``catch_up`` in this process (for tests and stats)."""

    @property
    def app(self) -> Application[Any]:
        app = self._app()
        if app is None:
            msg = "the application of these views has been garbage collected"
            raise RuntimeError(msg)
        return app

    def catch_up(self) -> int:
        """Bring every view up to the log's last notification; returns rows read."""
        app = self.app
        with self._lock:
            top = app.recorder.max_notification_id() or 0
            if self._positions and min(self._positions.values()) >= top:
                return 0
            positions = {p: self._position(p) for p in self.projections}
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
                    if positions[projection] >= last:
                        continue
                    events = [
                        event
                        for number, event in decoded
                        if number > positions[projection] and event is not None
                    ]
                    positions[projection] = self._process(projection, events, last)
            self._positions = positions
            self.processed += read
            return read

    def _position(self, projection: SessionProjection[Any]) -> int:
        return projection.view.max_tracking_id(self.app.name) or 0

    def _process(
        self, projection: SessionProjection[Any], events: list[ProjectedEvent], last: int
    ) -> int:
        tracking = Tracking(self.app.name, last)
        try:
            if projection.process_batch(events, tracking):
                return last
        except IntegrityError:
            # Another process (a ProjectionRunner) recorded this position first;
            # its transaction holds the same changes, ours rolled back.
            pass
        position = self._position(projection)
        if position < last:
            msg = f"view {projection.name} could not record position {last}"
            raise IntegrityError(msg)
        return position

    def rebuild(self) -> int:
        """Drop every view and fold the whole log again from position 0."""
        with self._lock:
            for projection in self.projections:
                projection.view.clear(self.app.name)
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
            views = _VIEWS[app] = SessionViews(app)
        return views
