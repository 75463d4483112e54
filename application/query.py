"""``SessionQuery``: the read side over live and stored sessions as one corpus.

The seven reads of docs/query.md with its closed set of error codes, plus
``list_summaries`` (the listing view's richer rows). A session live in this
process wins over its stored copy; stored listings come from the materialised
views, logs from the event store, and nothing here ever writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from agentlog.application.catch_up import views_of
from agentlog.application.query_models import (
    SessionEventRecord,
    SessionEventTrace,
    SessionEventWindow,
    SessionLineageNode,
    SessionLineageTrace,
    SessionRecord,
    SessionSummary,
    SessionSummaryPage,
    SessionSurfaceSnapshot,
    SessionTitleSnapshot,
    SurfaceClass,
    headers_conflict,
    make_record,
)
from agentlog.application.store_reader import PersistenceReader, StoreReader
from agentlog.application.summaries import (
    SummaryRow,
    check_window,
    decode_cursor,
    fold_live_row,
    page_of,
    row_after,
    stored_rows,
    summary_row,
)
from agentlog.application.surface_stream import SurfaceStream
from agentlog.domain.errors import (
    EventNotFoundError,
    LineageCycleError,
    SessionNotFoundError,
    SessionQueryError,
)
from agentlog.domain.json import copy_json, js_number
from agentlog.domain.messages import derive_message
from agentlog.domain.surface import SurfaceFold, fold_surface
from agentlog.domain.title import TitleSnapshot, fold_session_title

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from agentlog.application.handle import SessionHandle
    from agentlog.application.scope import Scope, ScopedSessionQuery
    from agentlog.application.search import ContentSearch
    from agentlog.application.search_models import SearchEventPage, SearchSessionPage
    from agentlog.application.sessions import Sessions
    from agentlog.application.view_rows import Number
    from agentlog.domain.header import Header
    from agentlog.domain.json import Envelope
    from agentlog.domain.lineage import LineageCorpus

DEFAULT_READ_WINDOW_MAX = 50
DEFAULT_PAGE_SIZE = 50
_DEFAULT = object()


def _check_id(session_id: object) -> None:
    """A session id that is not a non-empty string names no session."""
    if type(session_id) is not str or not session_id:
        raise SessionQueryError.not_found(session_id)


def _recency(header: Header) -> tuple[Number, str]:
    created = header.get("createdAt")
    number = created if isinstance(created, int | float) else 0
    return (-number, str(header.get("id")))


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


class SessionQuery:
    """Exact reads over live and stored sessions (docs/query.md).

    ``persistence`` is the mounted reader: by default the application's own store
    (through its views); any object with ``list()`` and ``load(id)``; or ``None``
    (unmounted: only live sessions exist). It may be swapped at any time.

    :meth:`scoped` and :meth:`for_caller` give the same reads inside a scope
    (docs/scope.md); the visibility check sits in the resolution steps below
    (``_live``, ``_require_stored``, ``_observe``, ``_corpus``, the listing and
    lineage reads), on the header each read then uses.
    """

    _scope: Scope | None = None
    """``None``: every session (an unscoped query)."""

    def __init__(
        self,
        app: Sessions,
        *,
        read_window_max: object = DEFAULT_READ_WINDOW_MAX,
        persistence: PersistenceReader | object | None = _DEFAULT,
    ) -> None:
        if type(read_window_max) is not int or read_window_max < 0:
            raise SessionQueryError.invalid_config()
        self.app = app
        self.read_window_max = read_window_max
        self.persistence: PersistenceReader | None = (
            self.store_reader()
            if persistence is _DEFAULT
            else cast("PersistenceReader | None", persistence)
        )

    def store_reader(self) -> StoreReader:
        """A reader over this application's store and views."""
        return StoreReader(self.app, views_of(self.app))

    def mount(self, reader: PersistenceReader | None = None) -> None:
        """Mount ``reader`` (default: the application's store)."""
        self.persistence = self.store_reader() if reader is None else reader

    def unmount(self) -> None:
        self.persistence = None

    # -------------------------------------------------------------- scopes

    def scoped(self, scope: Scope) -> ScopedSessionQuery:
        """These reads, restricted to ``scope`` (through the reader mounted now)."""
        from agentlog.application.scope import Scope, ScopedSessionQuery

        if not isinstance(scope, Scope):
            msg = f"scoped() needs a Scope, got {type(scope).__name__}"
            raise SessionQueryError.invalid_scope(msg)
        inner = SessionQuery(
            self.app, read_window_max=self.read_window_max, persistence=self.persistence
        )
        inner._scope = scope
        return ScopedSessionQuery(inner, scope)

    def for_caller(self, caller_session_id: str) -> ScopedSessionQuery:
        """The scope of a caller session, from its own header (docs/scope.md).

        The caller sees the sessions with its ``cwd`` and its ``owner`` (or, if
        it has none, without one); a caller without a ``cwd`` sees only itself.
        An id that names no session fails closed (``SESSION_QUERY_UNKNOWN_CALLER``).
        """
        if type(caller_session_id) is not str or not caller_session_id:
            raise SessionQueryError.unknown_caller(caller_session_id)
        handle = self.app.live_session(caller_session_id)
        header: Header | None = None if handle is None else handle.header
        if header is None and self.persistence is not None:
            header = self._listed_one(self.persistence, caller_session_id)
        if header is None or header.get("id") != caller_session_id:
            raise SessionQueryError.unknown_caller(caller_session_id)
        from agentlog.application.scope import Scope

        return self.scoped(Scope.of_caller(header))

    def _admits(self, header: Header) -> bool:
        return self._scope is None or self._scope.admits(header)

    def _live(self, session_id: str, *, fresh: bool = True) -> SessionHandle | None:
        """The live handle of an id, if the scope sees it and the caller may read
        it (committed reads: ``Sessions.readable_live``)."""
        handle = self.app.readable_live(session_id, fresh=fresh)
        if handle is None or not self._admits(handle.header):
            return None
        return handle

    def _live_all(self) -> list[SessionHandle]:
        return [
            h
            for h in self.app.live_sessions()
            if self._admits(h.header) and self.app.reads.readable(h)
        ]

    def _unflushed(self) -> list[SessionHandle]:
        return [
            h
            for h in self.app.unflushed_sessions()
            if self._admits(h.header) and self.app.reads.readable(h)
        ]

    def _visible_ids(self, session_ids: Sequence[str]) -> set[str]:
        """Which of these ids the scope sees (live or stored), in one view read."""
        found = {key for key in session_ids if self._live(key, fresh=False) is not None}
        rest = [key for key in session_ids if key not in found]
        reader = self.persistence
        if not rest or reader is None:
            return found
        headers: list[Header]
        if isinstance(reader, StoreReader):
            try:
                reader.catch_up()
                rows = reader.rows(rest)
            except Exception as error:
                raise SessionQueryError.listing_failed(error) from error
            headers = [row.header for row in rows.values() if row.header is not None]
        else:
            listed = self._listed(reader)
            headers = [listed[key] for key in rest if key in listed]
        return found | {str(h.get("id")) for h in headers if self._admits(h)}

    # --------------------------------------------------------- resolution

    def _listed(self, reader: PersistenceReader) -> dict[str, Header]:
        headers: list[Header]
        try:
            if isinstance(reader, StoreReader):
                headers = list(reader.list(scope=self._scope))
            else:
                headers = list(reader.list())
        except Exception as error:
            raise SessionQueryError.listing_failed(error) from error
        return {
            str(header.get("id")): header for header in headers if self._admits(header)
        }

    def _listed_one(self, reader: PersistenceReader, session_id: str) -> Header | None:
        if isinstance(reader, StoreReader):
            try:
                return reader.lookup(session_id)
            except Exception as error:
                raise SessionQueryError.listing_failed(error) from error
        return self._listed(reader).get(session_id)

    def _load(
        self, session_id: str, load: Callable[[], tuple[Header, Sequence[Envelope]]]
    ) -> tuple[Header, Sequence[Envelope]]:
        try:
            return load()
        except SessionNotFoundError:
            # Listed, but its rows read as never stored (its key forgotten while
            # a view still lists it): the same answer as a missing id.
            raise SessionQueryError.not_found(session_id) from None
        except Exception as error:
            raise SessionQueryError.load_failed(session_id, error) from error

    def _require_stored(
        self, session_id: str, reader: PersistenceReader | object | None = _DEFAULT
    ) -> tuple[PersistenceReader, Header]:
        """The mounted reader (or ``reader``) and the id's listed header; an id
        it does not list, or lists outside the scope, is not found."""
        if reader is _DEFAULT:
            reader = self.persistence
        if reader is None:
            raise SessionQueryError.not_found(session_id)
        mounted = cast("PersistenceReader", reader)
        listed = self._listed_one(mounted, session_id)
        if listed is None or not self._admits(listed):
            raise SessionQueryError.not_found(session_id)
        return mounted, listed

    def _observe(
        self, session_id: str, window: tuple[int, int] | None = None
    ) -> _Observation:
        """Live first (never touching persistence), else list, load and compare."""
        _check_id(session_id)
        handle = self._live(session_id)
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
        if not self._admits(header):
            # The scope is checked on the header read with these events.
            raise SessionQueryError.not_found(session_id)
        if headers_conflict(listed, header):
            raise SessionQueryError.source_conflict(session_id)
        return _Observation(copy_json(dict(header)), copy_json(list(events)), offset)

    def _corpus(self) -> list[SessionRecord]:
        """Every record, live over persisted (unordered); one ``list()`` call."""
        reader = self.persistence
        listed = self._listed(reader) if reader is not None else {}
        records = {
            key: make_record(header, live=False, persisted=True)
            for key, header in listed.items()
        }
        for handle in self._live_all():
            header = handle.header
            stored = listed.get(handle.id)
            if stored is not None and headers_conflict(header, stored):
                raise SessionQueryError.source_conflict(handle.id)
            records[handle.id] = make_record(
                header, live=True, persisted=stored is not None
            )
        return list(records.values())

    @staticmethod
    def _fold(events: Sequence[Envelope]) -> SurfaceFold:
        try:
            return fold_surface(events)
        except (ValueError, TypeError, LookupError, AttributeError) as error:
            raise SessionQueryError.invalid_surface(error) from error

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
        return SessionEventRecord(
            session_id=session_id,
            seq=event["seq"],
            type=event["type"],
            time=event.get("time"),
            surface=surface,
        )

    def _no_event(self, session_id: str, seq: object) -> SessionQueryError:
        return SessionQueryError.event_not_found(session_id, js_number(seq))

    # ---------------------------------------------------------------- reads

    def list_sessions(self) -> list[SessionRecord]:
        """Every session, newest first (createdAt desc, id asc); no log is read."""
        return sorted(self._corpus(), key=lambda record: _recency(record.header))

    def read_title(self, session_id: str) -> TitleSnapshot | None:
        """The latest ``session/title`` of the session; ``None`` if it has none."""
        _check_id(session_id)
        handle = self._live(session_id)
        if handle is not None:
            return fold_session_title(handle.events)
        reader = self.persistence
        if isinstance(reader, StoreReader):
            self._require_stored(session_id, reader)
            try:
                return reader.title(session_id)
            except Exception as error:
                raise SessionQueryError.listing_failed(error) from error
        return fold_session_title(self._observe(session_id).events)

    def list_events(self, session_id: str) -> list[SessionEventRecord]:
        """Every event with its surface class, ascending seq (strict fold)."""
        observation = self._observe(session_id)
        surface = self._classes(self._fold(observation.events))
        return [
            self._event_record(session_id, event, surface(index))
            for index, event in enumerate(observation.events)
        ]

    def read_surface(
        self, session_id: str, *, at: object = None
    ) -> SessionSurfaceSnapshot:
        """The current surface events (full copies) and the last seq observed;
        ``at``: the surface right after that event (``capturedThroughSeq``)."""
        if at is not None:
            stream = self.stream_surface(session_id, at=at)
            return SessionSurfaceSnapshot(
                session=stream.session,
                captured_through_seq=stream.captured_through_seq,
                events=list(stream.events),
            )
        observation = self._observe(session_id)
        events = observation.events
        fold = self._fold(events)
        return SessionSurfaceSnapshot(
            session=observation.header,
            captured_through_seq=events[-1]["seq"] if events else None,
            events=[events[seq] for seq in fold.nodes],
        )

    def read_messages(
        self, session_id: str, *, at: object = None
    ) -> list[dict[str, Any]]:
        """The derived message history of the surface (``at``: as of that seq),
        as ``Sessions.messages`` gives it (docs/surface.md#derived-messages)."""
        stream = self.stream_surface(session_id, at=at)
        derived = (derive_message(event, copy=False) for event in stream.events)
        return [dict(message) for message in derived if message is not None]

    def stream_surface(self, session_id: str, *, at: object = None) -> SurfaceStream:
        """:meth:`read_surface` with its events as an iterator.

        A stored session is read from its decision state (snapshot plus tail)
        and its surface rows a chunk at a time, so memory stays bounded however
        long the log is; anything else is :meth:`read_surface` itself. ``at``
        (a seq) reads the surface as it was right after that event.
        """
        _check_id(session_id)
        reader = self.persistence
        if at is not None:
            return self._surface_at(session_id, at)
        if self._live(session_id) is not None or not isinstance(reader, StoreReader):
            snapshot = self.read_surface(session_id)
            events = iter(snapshot.events)
            return SurfaceStream(
                snapshot.session, snapshot.captured_through_seq, events
            )
        _, listed = self._require_stored(session_id, reader)
        try:
            stream = reader.surface(session_id)
        except SessionNotFoundError:
            raise SessionQueryError.not_found(session_id) from None
        except Exception as error:
            raise SessionQueryError.load_failed(session_id, error) from error
        if not self._admits(stream.session):
            raise SessionQueryError.not_found(session_id)
        if headers_conflict(listed, stream.session):
            raise SessionQueryError.source_conflict(session_id)
        return stream

    def _surface_at(self, session_id: str, at: object) -> SurfaceStream:
        """The surface as of event ``at``: a stored session from its state at
        that version (no whole-log read), anything else folded up to ``at``."""
        reader = self.persistence
        if self._live(session_id) is not None or not isinstance(reader, StoreReader):
            observation = self._observe(session_id)
            if type(at) is not int or not 0 <= at < len(observation.events):
                raise self._no_event(session_id, at)
            events = observation.events[: at + 1]
            nodes = self._fold(events).nodes
            return SurfaceStream(
                observation.header, at, iter([events[seq] for seq in nodes])
            )
        _, listed = self._require_stored(session_id, reader)
        if type(at) is not int or at < 0:
            raise self._no_event(session_id, at)
        try:
            stream = reader.surface(session_id, at=at)
        except EventNotFoundError:
            raise self._no_event(session_id, at) from None
        except SessionNotFoundError:
            raise SessionQueryError.not_found(session_id) from None
        except Exception as error:
            raise SessionQueryError.load_failed(session_id, error) from error
        if not self._admits(stream.session):
            raise SessionQueryError.not_found(session_id)
        if headers_conflict(listed, stream.session):
            raise SessionQueryError.source_conflict(session_id)
        return SurfaceStream(stream.session, at, stream.events)

    def _window(self, name: str, value: object) -> int:
        if type(value) is not int or not 0 <= value <= self.read_window_max:
            raise SessionQueryError.invalid_window(
                f"{name} must be an integer between 0 and {self.read_window_max}"
            )
        return value

    def read_event(
        self, session_id: str, seq: object, before: object = 0, after: object = 0
    ) -> SessionEventWindow:
        """The event at ``seq`` and up to ``before``/``after`` raw neighbours.

        The window is checked before any lookup; there is no surface validation.
        """
        before = self._window("before", before)
        after = self._window("after", after)
        _check_id(session_id)
        if type(seq) is not int or seq < 0:
            if self._live(session_id) is None:
                self._require_stored(session_id)
            raise self._no_event(session_id, seq)
        start = max(0, seq - before)
        observation = self._observe(session_id, (start, seq + after))
        target = observation.at(seq)
        if target is None:
            raise self._no_event(session_id, seq)
        last = observation.offset + len(observation.events) - 1
        end = min(last, seq + after)
        window = [
            e for e in map(observation.at, range(start, end + 1)) if e is not None
        ]
        return SessionEventWindow(
            session=observation.header,
            target=copy_json(target),
            events=window,
            start_seq=start,
            end_seq=end,
        )

    def trace_event(self, session_id: str, seq: object) -> SessionEventTrace:
        """Replacement chain (the only transitive list) and direct provenance."""
        _check_id(session_id)
        observation = self._observe(session_id)
        target = observation.at(seq)
        if target is None or type(seq) is not int:
            raise self._no_event(session_id, seq)
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
        from agentlog.application.lineage_corpus import (
            StoreLineageCorpus,
            lineage_model,
        )
        from agentlog.application.scope import ScopedCorpus
        from agentlog.domain.lineage import IndexedCorpus, trace_lineage

        _check_id(session_id)
        reader = self.persistence
        if isinstance(reader, StoreReader):
            try:
                reader.catch_up()
            except Exception as error:
                raise SessionQueryError.listing_failed(error) from error
            live = self._live_all()
            corpus: LineageCorpus[Any] = StoreLineageCorpus(reader, live, session_id)
        else:
            corpus = IndexedCorpus(self._corpus(), lambda record: record.header)
        if self._scope is not None:
            corpus = ScopedCorpus(corpus, self._scope)
        try:
            trace = trace_lineage(corpus, session_id)
        except SessionNotFoundError as error:
            raise SessionQueryError.not_found(error.session_id) from error
        except LineageCycleError as error:
            raise SessionQueryError.lineage_cycle(error.session_id) from error
        return lineage_model(trace)

    # ----------------------------------------------------- search, filters

    def _search(self) -> ContentSearch:
        """The search reads, imported on first use: a listing never needs them."""
        from agentlog.application.search import ContentSearch

        return ContentSearch(self)

    def filter_sessions(self, session_filter: object = None) -> list[SessionRecord]:
        """Sessions matching a ``SessionFilter`` (docs/search.md); no index."""
        return self._search().filter_sessions(session_filter)

    def filter_events(
        self, session_id: str, event_filter: object = None
    ) -> list[SessionEventRecord]:
        """Events of one session matching an ``EventFilter``; no index."""
        return self._search().filter_events(session_id, event_filter)

    def search_sessions(self, query: object, **options: Any) -> SearchSessionPage:
        """Sessions whose events contain the literal ``query`` (docs/search.md)."""
        return self._search().search_sessions(query, **options)

    def search_events(
        self, session_id: str, query: object, **options: Any
    ) -> SearchEventPage:
        """Events of one session containing the literal ``query``."""
        return self._search().search_events(session_id, query, **options)

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
        check_window(limit, offset)
        after = None if cursor is None else decode_cursor(cursor)
        reader = self.persistence
        if isinstance(reader, StoreReader):
            rows = self._summaries_from_views(reader, limit + offset, after)
        else:
            rows = self._summaries_from_logs(after)
        return SessionSummaryPage.of(page_of(rows, limit, offset))

    def _summaries_from_views(
        self, reader: StoreReader, count: int, after: tuple[Number, str] | None
    ) -> list[SummaryRow]:
        # Only handles with unflushed events differ from their stored row; a
        # flushed live handle is its row, flagged live. So the cost follows the
        # page and the unflushed handles, never the number of live handles.
        live = {handle.id: handle for handle in self._unflushed()}
        stored, persisted = stored_rows(
            reader, count, after, scope=self._scope, live=list(live)
        )
        rows = [
            summary_row(row, live=self.app.is_live(row.session_id), persisted=True)
            for row in stored
            if row.session_id not in live
        ]
        for session_id, handle in live.items():
            base = persisted.get(session_id)
            header = handle.header
            if base is not None and headers_conflict(header, base.header or {}):
                raise SessionQueryError.source_conflict(session_id)
            row = fold_live_row(base, header, getattr(handle, "pending", None) or [])
            if after is None or row_after(row, after):
                rows.append(summary_row(row, live=True, persisted=base is not None))
        return rows

    def _summaries_from_logs(
        self, after: tuple[Number, str] | None
    ) -> list[SummaryRow]:
        """Any other reader has no views: fold each log (exact, not fast)."""
        rows = []
        for record in self._corpus():
            session_id = str(record.header.get("id"))
            if record.live:
                handle = self._live(session_id)
                events = handle.events if handle is not None else []
            else:
                events = self._observe(session_id).events
            row = fold_live_row(None, record.header, events)
            if after is None or row_after(row, after):
                rows.append(
                    summary_row(row, live=record.live, persisted=record.persisted)
                )
        return rows


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
