"""``SessionQuery``: the read side over live and stored sessions as one corpus.

The seven reads of persistence-query §3 with its closed set of error codes, plus
``list_summaries`` (the listing view's richer rows). A session live in this
process wins over its stored copy; stored listings come from the materialised
views, logs from the event store, and nothing here ever writes.
"""

from __future__ import annotations

import base64
import binascii
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    model_serializer,
)
from pydantic.alias_generators import to_camel

from application.projections import (
    HEADER_TYPE,
    ListingRow,
    Number,
    ProjectedEvent,
    fold_listing,
    views_of,
)
from application.store_reader import PersistenceReader, StoreReader
from domain.errors import SessionQueryError
from domain.json import copy_json, dumps, js_number, loads
from domain.lineage import IndexedCorpus, LineageTrace, trace_lineage
from domain.surface import SurfaceFold, fold_surface
from domain.title import TitleSnapshot, fold_session_title

if TYPE_CHECKING:
    from application.sessions import SessionHandle, Sessions
    from domain.json import Envelope, Json

SessionTitleSnapshot = TitleSnapshot
SurfaceClass = Literal["current", "shadowed", "log-only"]
DEFAULT_READ_WINDOW_MAX = 50
DEFAULT_PAGE_SIZE = 50
CONFLICT_FIELDS = ("version", "id", "createdAt", "cwd", "parentSession", "seedLength")
"""Compared live vs persisted and listed vs loaded; ``delegationDepth`` is not."""
_ABSENT = object()
_DEFAULT = object()
Header = Mapping[str, Any]

# ------------------------------------------------------------------ outputs


class QueryModel(BaseModel):
    """An output: camelCase JSON, optional keys omitted, a fresh mutable copy."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )
    omit_when_none: ClassVar[frozenset[str]] = frozenset()
    """Field names whose key is left out (not written as null) when ``None``."""

    @model_serializer(mode="wrap")
    def _omit_none(self, handler: SerializerFunctionWrapHandler) -> Any:
        dumped = handler(self)
        if isinstance(dumped, dict):
            for name in self.omit_when_none:
                for key in (name, to_camel(name)):
                    if dumped.get(key, _ABSENT) is None:
                        del dumped[key]
        return dumped

    def to_json(self) -> Json:
        """The spec's JSON shape (what ``--json`` prints)."""
        return self.model_dump(mode="json")


class SessionRecord(QueryModel):
    """``{header, live, persisted}``: exactly these keys (scenario 101)."""

    header: dict[str, Any]
    live: bool
    persisted: bool


class SessionSummary(QueryModel):
    """A listing row: header fields plus what the log says (seed 001's summary)."""

    omit_when_none = frozenset({"title", "first_prompt", "parent_session", "cwd"})

    id: str
    created_at: Any
    updated_at: Any
    event_count: int
    title: str | None = None
    first_prompt: str | None = None
    parent_session: str | None = None
    cwd: str | None = None
    live: bool
    persisted: bool
    header: dict[str, Any]


class SessionSummaryPage(QueryModel):
    """One page of summaries; ``nextCursor`` continues after its last row."""

    items: list[SessionSummary]
    next_cursor: str | None = None


class SessionEventRecord(QueryModel):
    """One event's place: ``current``, ``shadowed`` or ``log-only``."""

    session_id: str
    seq: int
    type: str
    time: Any
    surface: SurfaceClass


class SessionSurfaceSnapshot(QueryModel):
    """The current surface in model-history order, with its capture boundary."""

    session: dict[str, Any]
    captured_through_seq: int | None
    events: list[dict[str, Any]]


class SessionEventWindow(QueryModel):
    """A target event and the raw events ``startSeq..endSeq`` around it."""

    session: dict[str, Any]
    target: dict[str, Any]
    events: list[dict[str, Any]]
    start_seq: int
    end_seq: int


class SessionLineageNode(QueryModel):
    """A descendant and its own descendants, oldest first."""

    session: SessionRecord
    descendants: list[SessionLineageNode]


class SessionLineageTrace(QueryModel):
    """Ancestors immediate-to-outermost, descendant trees, and completeness.

    Trees may be thousands deep, beyond pydantic's serialiser: use ``to_json``.
    """

    omit_when_none = frozenset({"root", "unresolved_parent_id"})

    target: SessionRecord
    ancestors: list[SessionRecord]
    descendants: list[SessionLineageNode]
    complete: bool
    root: SessionRecord | None = None
    unresolved_parent_id: str | None = None

    def to_json(self) -> Json:
        """Iterative, so a 3,000-deep chain serialises."""
        out: dict[str, Any] = {
            "target": self.target.to_json(),
            "ancestors": [record.to_json() for record in self.ancestors],
            "descendants": [],
            "complete": self.complete,
        }
        if self.root is not None:
            out["root"] = self.root.to_json()
        if self.unresolved_parent_id is not None:
            out["unresolvedParentId"] = self.unresolved_parent_id
        stack = [(self.descendants, out["descendants"])]
        while stack:
            nodes, sink = stack.pop()
            for node in nodes:
                item = {"session": node.session.to_json(), "descendants": []}
                sink.append(item)
                stack.append((node.descendants, item["descendants"]))
        return out


class SessionEventTrace(QueryModel):
    """Direct positional replacement and direct provenance of one event."""

    omit_when_none = frozenset({"replaced_by"})

    target: SessionEventRecord
    replaced_by: int | None = None
    replacement_chain: list[int]
    replaced_event_seqs: list[int]
    source_event_seqs: list[int]
    derived_event_seqs: list[int]


# ---------------------------------------------------------------- helpers


def _error(message: str, code: str, cause: BaseException | None = None) -> Exception:
    return SessionQueryError(message, code, cause)


def _reason(error: BaseException) -> str:
    """The failure's message; a failure that carries none is an ``unknown error``."""
    return str(error) or "unknown error"


def _not_found(session_id: str) -> Exception:
    return _error(f'session "{session_id}" not found', SessionQueryError.SESSION_NOT_FOUND)


def _conflict(session_id: str) -> Exception:
    return _error(
        f'live and persisted headers conflict for session "{session_id}"',
        SessionQueryError.SOURCE_CONFLICT,
    )


def headers_conflict(first: Header, second: Header) -> bool:
    """Whether two headers of one id disagree on an immutable field (§3.1)."""
    return any(
        first.get(key, _ABSENT) != second.get(key, _ABSENT) for key in CONFLICT_FIELDS
    )


def _recency(header: Header) -> tuple[Number, str]:
    created = header.get("createdAt")
    number = created if isinstance(created, int | float) else 0
    return (-number, str(header.get("id")))


def _record(header: Header, *, live: bool, persisted: bool) -> SessionRecord:
    return SessionRecord.model_construct(
        header=copy_json(dict(header)), live=live, persisted=persisted
    )


def _encode_cursor(created_at: Number, session_id: str) -> str:
    return base64.urlsafe_b64encode(dumps([created_at, session_id])).decode("ascii")


def _decode_cursor(cursor: str) -> tuple[Number, str]:
    try:
        created_at, session_id = loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, TypeError, binascii.Error) as error:
        msg = f"invalid listing cursor {cursor!r}"
        raise ValueError(msg) from error
    if not isinstance(created_at, int | float) or not isinstance(session_id, str):
        msg = f"invalid listing cursor {cursor!r}"
        raise ValueError(msg)
    return created_at, session_id


@dataclass(slots=True)
class _Observation:
    """One consistent read of a session: header and log (or a slice of it)."""

    header: dict[str, Any]
    events: list[Envelope]
    offset: int = 0

    def at(self, seq: object) -> Envelope | None:
        """``events[seq]`` if present and really at that seq."""
        if type(seq) is not int:
            return None
        index = seq - self.offset
        if not 0 <= index < len(self.events):
            return None
        event = self.events[index]
        return event if event.get("seq") == seq else None


# ------------------------------------------------------------------ corpus


class _LiveCorpus:
    """Live sessions overlaid on the stored views, one id at a time (lineage)."""

    def __init__(self, reader: StoreReader, live: Sequence[SessionHandle]) -> None:
        self.reader = reader
        self.live = {handle.id: handle.header for handle in live}
        self.live_children: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
        for header in self.live.values():
            parent = header.get("parentSession")
            if isinstance(parent, str):
                self.live_children[parent].append(header)

    def _listed(self, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except Exception as error:
            raise _error(
                f"session persistence listing failed: {_reason(error)}",
                SessionQueryError.PERSISTENCE_FAILED,
                error,
            ) from error

    def _overlay(self, header: Header, listed: Header | None) -> SessionRecord:
        session_id = str(header.get("id"))
        live = self.live.get(session_id)
        if live is None:
            return _record(header, live=False, persisted=True)
        if listed is not None and headers_conflict(live, listed):
            raise _conflict(session_id)
        return _record(live, live=True, persisted=listed is not None)

    def record(self, session_id: str) -> SessionRecord | None:
        listed = self._listed(lambda: self.reader.lookup(session_id, catch_up=False))
        if session_id in self.live:
            return self._overlay(self.live[session_id], listed)
        return None if listed is None else _record(listed, live=False, persisted=True)

    def children(self, session_id: str) -> list[SessionRecord]:
        stored = self._listed(lambda: self.reader.children(session_id))
        found = {str(h.get("id")): self._overlay(h, h) for h in stored}
        for header in self.live_children.get(session_id, ()):
            key = str(header.get("id"))
            if key not in found:
                listed = self._listed(lambda key=key: self.reader.lookup(key, catch_up=False))
                found[key] = self._overlay(header, listed)
        return list(found.values())

    def header(self, record: SessionRecord) -> Header:
        return record.header


# ------------------------------------------------------------------- query


class SessionQuery:
    """Exact reads over live and stored sessions (persistence-query §3).

    ``persistence`` is the mounted reader: by default the application's own store
    (through its views); any object with ``list()`` and ``load(id)``; or ``None``
    (unmounted: only live sessions exist). It may be swapped at any time.
    """

    def __init__(
        self,
        app: Sessions,
        *,
        read_window_max: object = DEFAULT_READ_WINDOW_MAX,
        persistence: PersistenceReader | object | None = _DEFAULT,
    ) -> None:
        if type(read_window_max) is not int or read_window_max < 0:
            raise _error(
                "session-query: readWindowMax must be a non-negative integer",
                SessionQueryError.INVALID_CONFIG,
            )
        self.app = app
        self.read_window_max = read_window_max
        self.persistence: PersistenceReader | None = (
            self.store_reader() if persistence is _DEFAULT else persistence  # type: ignore[assignment]
        )

    def store_reader(self) -> StoreReader:
        """A reader over this application's store and views."""
        return StoreReader(self.app, views_of(self.app))

    def mount(self, reader: PersistenceReader | None = None) -> None:
        """Mount ``reader`` (default: the application's store)."""
        self.persistence = self.store_reader() if reader is None else reader

    def unmount(self) -> None:
        self.persistence = None

    # --------------------------------------------------------- resolution

    def _listing_failed(self, error: BaseException) -> Exception:
        return _error(
            f"session persistence listing failed: {_reason(error)}",
            SessionQueryError.PERSISTENCE_FAILED,
            error,
        )

    def _listed(self, reader: PersistenceReader) -> dict[str, Header]:
        try:
            headers = list(reader.list())
        except Exception as error:
            raise self._listing_failed(error) from error
        return {str(header.get("id")): header for header in headers}

    def _listed_one(self, reader: PersistenceReader, session_id: str) -> Header | None:
        if isinstance(reader, StoreReader):
            try:
                return reader.lookup(session_id)
            except Exception as error:
                raise self._listing_failed(error) from error
        return self._listed(reader).get(session_id)

    def _load(
        self, session_id: str, load: Callable[[], tuple[Header, Sequence[Envelope]]]
    ) -> tuple[Header, Sequence[Envelope]]:
        try:
            return load()
        except Exception as error:
            raise _error(
                f'failed to load session "{session_id}": {_reason(error)}',
                SessionQueryError.PERSISTENCE_FAILED,
                error,
            ) from error

    def _require_stored(self, session_id: str) -> tuple[PersistenceReader, Header]:
        reader = self.persistence
        if reader is None:
            raise _not_found(session_id)
        listed = self._listed_one(reader, session_id)
        if listed is None:
            raise _not_found(session_id)
        return reader, listed

    def _observe(
        self, session_id: str, window: tuple[int, int] | None = None
    ) -> _Observation:
        """Live first (never touching persistence), else list, load and compare."""
        handle = self.app.live_session(session_id)
        if handle is not None:
            return _Observation(handle.header, handle.events)
        reader, listed = self._require_stored(session_id)
        if window is not None and isinstance(reader, StoreReader):
            first, last = window
            header, events = self._load(
                session_id, lambda: reader.load_range(session_id, first, last)
            )
            offset = first
        else:
            header, events = self._load(session_id, lambda: reader.load(session_id))
            offset = 0
        if headers_conflict(listed, header):
            raise _conflict(session_id)
        return _Observation(copy_json(dict(header)), copy_json(list(events)), offset)

    def _corpus(self) -> list[SessionRecord]:
        """Every record, live over persisted (unordered); one ``list()`` call."""
        reader = self.persistence
        listed = self._listed(reader) if reader is not None else {}
        records = {
            key: _record(header, live=False, persisted=True)
            for key, header in listed.items()
        }
        for handle in self.app.live_sessions():
            header = handle.header
            stored = listed.get(handle.id)
            if stored is not None and headers_conflict(header, stored):
                raise _conflict(handle.id)
            records[handle.id] = _record(header, live=True, persisted=stored is not None)
        return list(records.values())

    @staticmethod
    def _fold(events: Sequence[Envelope]) -> SurfaceFold:
        try:
            return fold_surface(events)
        except (ValueError, TypeError, LookupError, AttributeError) as error:
            raise _error(
                f"invalid session surface: {error}",
                SessionQueryError.INVALID_SURFACE,
                error,
            ) from error

    @staticmethod
    def _classes(fold: SurfaceFold) -> Callable[[int], SurfaceClass]:
        current = set(fold.nodes)
        shadowed = {seq for r in fold.replacements for seq in r.shadowed_seqs}

        def surface(seq: int) -> SurfaceClass:
            if seq in current:
                return "current"
            return "shadowed" if seq in shadowed else "log-only"

        return surface

    @staticmethod
    def _event_record(
        session_id: str, event: Envelope, surface: SurfaceClass
    ) -> SessionEventRecord:
        return SessionEventRecord.model_construct(
            session_id=session_id,
            seq=event["seq"],
            type=event["type"],
            time=event.get("time"),
            surface=surface,
        )

    def _no_event(self, session_id: str, seq: object) -> Exception:
        return _error(
            f'session "{session_id}" has no event at seq {js_number(seq)}',
            SessionQueryError.EVENT_NOT_FOUND,
        )

    # ---------------------------------------------------------------- reads

    def list_sessions(self) -> list[SessionRecord]:
        """Every session, newest first (createdAt desc, id asc); no log is read."""
        return sorted(self._corpus(), key=lambda record: _recency(record.header))

    def read_title(self, session_id: str) -> TitleSnapshot | None:
        """The latest ``session/title`` of the session; ``None`` if it has none."""
        handle = self.app.live_session(session_id)
        if handle is not None:
            return fold_session_title(handle.events)
        reader = self.persistence
        if isinstance(reader, StoreReader):
            self._require_stored(session_id)
            try:
                return reader.title(session_id)
            except Exception as error:
                raise self._listing_failed(error) from error
        return fold_session_title(self._observe(session_id).events)

    def list_events(self, session_id: str) -> list[SessionEventRecord]:
        """Every event with its surface class, ascending seq (strict fold)."""
        observation = self._observe(session_id)
        surface = self._classes(self._fold(observation.events))
        return [
            self._event_record(session_id, event, surface(index))
            for index, event in enumerate(observation.events)
        ]

    def read_surface(self, session_id: str) -> SessionSurfaceSnapshot:
        """The current surface events (full copies) and the last seq observed."""
        observation = self._observe(session_id)
        events = observation.events
        fold = self._fold(events)
        return SessionSurfaceSnapshot(
            session=observation.header,
            captured_through_seq=events[-1]["seq"] if events else None,
            events=[events[seq] for seq in fold.nodes],
        )

    def read_event(
        self, session_id: str, seq: object, before: object = 0, after: object = 0
    ) -> SessionEventWindow:
        """The event at ``seq`` and up to ``before``/``after`` raw neighbours.

        The window is checked before any lookup; there is no surface validation.
        """
        for name, value in (("before", before), ("after", after)):
            if type(value) is not int or not 0 <= value <= self.read_window_max:
                raise _error(
                    f"{name} must be an integer between 0 and {self.read_window_max}",
                    SessionQueryError.INVALID_WINDOW,
                )
        assert type(before) is int and type(after) is int
        if type(seq) is not int or seq < 0:
            if self.app.live_session(session_id) is None:
                self._require_stored(session_id)
            raise self._no_event(session_id, seq)
        start = max(0, seq - before)
        observation = self._observe(session_id, (start, seq + after))
        target = observation.at(seq)
        if target is None:
            raise self._no_event(session_id, seq)
        last = observation.offset + len(observation.events) - 1
        end = min(last, seq + after)
        window = [e for e in map(observation.at, range(start, end + 1)) if e is not None]
        return SessionEventWindow(
            session=observation.header,
            target=copy_json(target),
            events=window,
            start_seq=start,
            end_seq=end,
        )

    def trace_event(self, session_id: str, seq: object) -> SessionEventTrace:
        """Replacement chain (the only transitive list) and direct provenance."""
        observation = self._observe(session_id)
        target = observation.at(seq)
        if target is None:
            raise self._no_event(session_id, seq)
        assert type(seq) is int
        events = observation.events
        fold = self._fold(events)
        replaced_by: dict[int, int] = {}
        replaced: dict[int, list[int]] = {}
        for replacement in fold.replacements:
            replaced[replacement.seq] = list(replacement.shadowed_seqs)
            for shadowed in replacement.shadowed_seqs:
                replaced_by[shadowed] = replacement.seq
        chain: list[int] = []
        cursor = seq
        while cursor in replaced_by:
            cursor = replaced_by[cursor]
            chain.append(cursor)
        derived = [
            event["seq"]
            for event in events[seq + 1 :]
            if seq in (event.get("sourceEventSeqs") or ())
        ]
        return SessionEventTrace(
            target=self._event_record(session_id, target, self._classes(fold)(seq)),
            replaced_by=replaced_by.get(seq),
            replacement_chain=chain,
            replaced_event_seqs=replaced.get(seq, []),
            source_event_seqs=list(target.get("sourceEventSeqs") or ()),
            derived_event_seqs=derived,
        )

    def trace_session(self, session_id: str) -> SessionLineageTrace:
        """Ancestors, descendant trees and completeness; no log is loaded."""
        reader = self.persistence
        if isinstance(reader, StoreReader):
            try:
                reader.catch_up()
            except Exception as error:
                raise self._listing_failed(error) from error
            live = self.app.live_sessions()
            trace = trace_lineage(_LiveCorpus(reader, live), session_id)
        else:
            corpus = IndexedCorpus(self._corpus(), lambda record: record.header)
            trace = trace_lineage(corpus, session_id)
        return _lineage_model(trace)

    # ------------------------------------------------------------- listing

    def list_summaries(
        self,
        limit: int = DEFAULT_PAGE_SIZE,
        *,
        cursor: str | None = None,
        offset: int = 0,
    ) -> SessionSummaryPage:
        """Listing rows newest first, a page at a time, from the listing view.

        ``cursor`` (the previous page's ``nextCursor``) pages in O(page);
        ``offset`` is exact too but reads ``offset`` rows of the view first.
        """
        if type(limit) is not int or limit <= 0:
            msg = "limit must be a positive integer"
            raise ValueError(msg)
        if type(offset) is not int or offset < 0:
            msg = "offset must be a non-negative integer"
            raise ValueError(msg)
        after = None if cursor is None else _decode_cursor(cursor)
        reader = self.persistence
        if isinstance(reader, StoreReader):
            rows = self._summaries_from_views(reader, limit + offset, after)
        else:
            rows = self._summaries_from_logs(after)
        rows.sort(key=lambda row: (-row.created_at, row.id))
        page = rows[offset : offset + limit]
        more = len(rows) > offset + limit
        next_cursor = _encode_cursor(page[-1].created_at, page[-1].id) if more else None
        return SessionSummaryPage(items=page, next_cursor=next_cursor)

    def _summaries_from_views(
        self, reader: StoreReader, count: int, after: tuple[Number, str] | None
    ) -> list[SessionSummary]:
        live = {handle.id: handle for handle in self.app.live_sessions()}
        try:
            reader.catch_up()
            stored = reader.page(limit=count + len(live) + 1, after=after)
            persisted = reader.rows(list(live))
        except Exception as error:
            raise self._listing_failed(error) from error
        rows = [
            _summary(row, live=False, persisted=True)
            for row in stored
            if row.session_id not in live
        ]
        for session_id, handle in live.items():
            base = persisted.get(session_id)
            header = handle.header
            if base is not None and base.header is not None:
                if headers_conflict(header, base.header):
                    raise _conflict(session_id)
            row = _fold_live(base, header, getattr(handle, "pending", None) or [])
            if after is None or _after(row, after):
                rows.append(_summary(row, live=True, persisted=base is not None))
        return rows

    def _summaries_from_logs(
        self, after: tuple[Number, str] | None
    ) -> list[SessionSummary]:
        """Any other reader has no views: fold each log (exact, not fast)."""
        rows = []
        for record in self._corpus():
            session_id = str(record.header.get("id"))
            if record.live:
                handle = self.app.live_session(session_id)
                events = handle.events if handle is not None else []
            else:
                events = self._observe(session_id).events
            row = _fold_live(None, record.header, events)
            if after is None or _after(row, after):
                rows.append(_summary(row, live=record.live, persisted=record.persisted))
        return rows


def _after(row: ListingRow, after: tuple[Number, str]) -> bool:
    created = row.created_at if row.created_at is not None else 0
    return (-created, row.session_id) > (-after[0], after[1])


def _fold_live(
    base: ListingRow | None, header: Header, events: Sequence[Envelope]
) -> ListingRow:
    """A listing row for a live session: its stored row plus its pending events.

    The listing folds are idempotent (counts and times take maxima, the first
    prompt the lowest seq, the title the highest), so folding events the row
    already holds changes nothing.
    """
    session_id = str(header.get("id"))
    created = ProjectedEvent(session_id, HEADER_TYPE, {"type": HEADER_TYPE, **header})
    row = fold_listing(base, created)
    for event in events:
        row = fold_listing(row, ProjectedEvent(session_id, str(event.get("type")), event))
    return row


def _summary(row: ListingRow, *, live: bool, persisted: bool) -> SessionSummary:
    header = row.header or {}
    created = row.created_at if row.created_at is not None else 0
    return SessionSummary.model_construct(
        id=row.session_id,
        created_at=created,
        updated_at=row.updated_at if row.updated_at is not None else created,
        event_count=row.event_count,
        title=row.title,
        first_prompt=row.first_prompt,
        parent_session=row.parent_session,
        cwd=row.cwd,
        live=live,
        persisted=persisted,
        header=copy_json(dict(header)),
    )


def _lineage_model(trace: LineageTrace[SessionRecord]) -> SessionLineageTrace:
    """Models from the pure trace, built iteratively; every record is distinct."""
    top: list[SessionLineageNode] = []
    stack = [(trace.descendants, top)]
    while stack:
        nodes, sink = stack.pop()
        for node in nodes:
            model = SessionLineageNode.model_construct(session=node.record, descendants=[])
            sink.append(model)
            stack.append((node.descendants, model.descendants))
    root = None if trace.root is None else trace.root.model_copy(deep=True)
    return SessionLineageTrace.model_construct(
        target=trace.target,
        ancestors=trace.ancestors,
        descendants=top,
        complete=trace.complete,
        root=root,
        unresolved_parent_id=trace.unresolved_parent_id,
    )


__all__ = [
    "PersistenceReader",
    "SessionEventRecord",
    "SessionEventTrace",
    "SessionEventWindow",
    "SessionLineageNode",
    "SessionLineageTrace",
    "SessionQuery",
    "SessionRecord",
    "SessionSummary",
    "SessionSummaryPage",
    "SessionSurfaceSnapshot",
    "SessionTitleSnapshot",
    "StoreReader",
    "headers_conflict",
]
