"""Content search and filters over live and stored sessions (docs/search.md).

``SessionQuery`` delegates here. This module holds the contract and the scan
that works on every backend: each candidate session's log is read (live handle
first, so unflushed events are searched and marked ``live``), folded for surface
classes, and its documents matched literally. Results are ordered and paged by
the keys in ``search_match``, so an index that returns the same keys returns the
same pages.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from agentlog.application.catch_up import catch_up_to_read
from agentlog.application.query_models import headers_conflict
from agentlog.application.search_index import (
    IndexedDocument,
    IndexQuery,
    SearchIndex,
    SearchView,
    search_index_of,
)
from agentlog.application.search_match import (
    Cursor,
    Match,
    OrderKey,
    check_limit,
    decode_cursor,
    encode_cursor,
    fingerprint,
    match,
    order_key,
    parse_query,
    snippet,
)
from agentlog.application.search_models import (
    EventFilter,
    SearchEventPage,
    SearchHit,
    SearchSessionPage,
    SessionFilter,
    SessionSearchHit,
)
from agentlog.application.search_plan import IndexPlan
from agentlog.application.store_errors import store_errors
from agentlog.application.store_reader import StoreReader
from agentlog.application.stored_log import PlacedEvents
from agentlog.domain.errors import (
    SessionNotFoundError,
    SessionQueryError,
    StoreReadOnlyError,
)
from agentlog.domain.search_text import SearchDocument, document_text, normalize_space
from agentlog.domain.title import fold_session_title

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence

    from agentlog.application.query import SessionQuery
    from agentlog.application.query_models import (
        SessionEventRecord,
        SessionRecord,
        SurfaceClass,
    )
    from agentlog.application.stored_log import Place
    from agentlog.domain.json import Envelope

log = logging.getLogger(__name__)
DEFAULT_LIMIT = 20
TFilter = TypeVar("TFilter", bound=BaseModel)


def search_enabled() -> bool:
    """``AGENTLOG_SEARCH=off`` disables content search (and only it)."""
    return os.environ.get("AGENTLOG_SEARCH", "").strip().lower() != "off"


def _filter(value: object, kind: type[TFilter]) -> TFilter:
    if value is None:
        return kind()
    if not isinstance(value, kind):
        msg = f"the filter must be a {kind.__name__} or None"
        raise SessionQueryError.invalid_search(msg)
    return value


def _in_range(value: Any, low: Any, high: Any) -> bool:
    if low is None and high is None:
        return True
    if type(value) not in (int, float):
        return False
    return (low is None or value >= low) and (high is None or value <= high)


def session_matches(record: SessionRecord, wanted: SessionFilter) -> bool:
    """Every field of the filter holds (a list: any of its values)."""
    return header_matches(record.header, wanted, record.live, record.persisted)


def header_matches(
    header: Mapping[str, Any], wanted: SessionFilter, live: bool, persisted: bool
) -> bool:
    """``session_matches`` on a header and its availability (no record built)."""
    checks = (
        wanted.ids is None or header.get("id") in wanted.ids,
        wanted.cwd is None or header.get("cwd") in wanted.cwd,
        wanted.owner is None or header.get("owner") in wanted.owner,
        wanted.parent is None or header.get("parentSession") in wanted.parent,
        _in_range(header.get("createdAt"), wanted.created_from, wanted.created_to),
        wanted.availability is None
        or ("live" in wanted.availability and live)
        or ("persisted" in wanted.availability and persisted),
    )
    return all(checks)


def event_matches(
    event: Envelope, surface: str, wanted: EventFilter, text: str | None
) -> bool:
    """Every field holds; ``text`` is the event's document text (``None``: none)."""
    seq = event.get("seq")
    if not _in_range(seq, wanted.seq_from, wanted.seq_to):
        return False
    if not _in_range(event.get("time"), wanted.time_from, wanted.time_to):
        return False
    if wanted.types is not None and event.get("type") not in wanted.types:
        return False
    if wanted.surfaces is not None and surface not in wanted.surfaces:
        return False
    if wanted.text is not None:
        return text is not None and normalize_space(wanted.text) in normalize_space(
            text
        )
    return True


@dataclass(frozen=True, slots=True)
class _Found:
    key: OrderKey
    document: SearchDocument
    found: Match
    live: bool

    def hit(self) -> SearchHit:
        text, marks = snippet(self.document.text, self.found.first)
        doc = self.document
        return SearchHit.model_construct(
            session_id=doc.session_id,
            seq=doc.seq,
            type=doc.type,
            time=doc.time,
            surface=doc.surface,
            snippet=text,
            highlights=marks,
            matched_tokens=self.found.matched_tokens,
            live=self.live,
        )


class ContentSearch:
    """The search and filter reads of one ``SessionQuery`` (scan backend)."""

    def __init__(self, query: SessionQuery) -> None:
        self.query = query

    # ------------------------------------------------------------ filters

    def filter_sessions(self, session_filter: object = None) -> list[SessionRecord]:
        """Sessions matching the filter, newest first (as ``list_sessions``)."""
        wanted = _filter(session_filter, SessionFilter)
        return [r for r in self.query.list_sessions() if session_matches(r, wanted)]

    def filter_events(
        self, session_id: str, event_filter: object = None
    ) -> list[SessionEventRecord]:
        """Events of one session matching the filter, ascending seq."""
        wanted = _filter(event_filter, EventFilter)
        events, surface, _ = self._session(session_id)
        return [
            self.query._event_record(session_id, event, surface[index])
            for index, event in enumerate(events)
            if event_matches(event, surface[index], wanted, document_text(event))
        ]

    def _session(
        self, session_id: str
    ) -> tuple[list[Envelope], list[SurfaceClass], int]:
        """The log, each event's surface class, and the first unflushed seq."""
        query = self.query
        observation = query._observe(session_id)
        events = observation.events
        classes = query._classes(query._fold(events))
        handle = query._live(session_id)
        unflushed = handle.unflushed if handle is not None else 0
        surface = [classes(index) for index in range(len(events))]
        return events, surface, len(events) - unflushed

    # ------------------------------------------------------------- search

    def _found(
        self, session_id: str, phrase: tuple[str, ...], wanted: EventFilter
    ) -> list[_Found]:
        events, surface, first_unflushed = self._session(session_id)
        found: list[_Found] = []
        for index, event in enumerate(events):
            text = document_text(event)
            if text is None or not event_matches(event, surface[index], wanted, text):
                continue
            result = match(text, phrase)
            if result is None:
                continue
            document = SearchDocument(
                session_id,
                event["seq"],
                event["type"],
                event.get("time"),
                surface[index],
                text,
            )
            key = order_key(
                result.document_tokens, document.time, session_id, document.seq
            )
            found.append(_Found(key, document, result, index >= first_unflushed))
        return found

    def search_events(
        self,
        session_id: str,
        query: object,
        *,
        event_filter: object = None,
        limit: object = DEFAULT_LIMIT,
        cursor: object = None,
    ) -> SearchEventPage:
        """Matching events of one session in the search order, a page at a time."""
        if not search_enabled():
            raise SessionQueryError.search_disabled()
        phrase = parse_query(query)
        size = check_limit(limit)
        wanted = _filter(event_filter, EventFilter)
        mark = fingerprint("events", session_id, phrase, wanted.model_dump())
        position = None if cursor is None else decode_cursor(cursor, mark)
        after = None if position is None else position.key
        index = self._index()
        snapshot = _snapshot(index, position)
        plan_query = IndexQuery(phrase, wanted, snapshot=snapshot)
        if index is not None and index.search.view.hashing is not None:
            # A hashed index spells the phrase per session: only this one's.
            plan_query = replace(plan_query, sessions=frozenset({session_id}))
        hits = self._indexed_events(index, session_id, plan_query, after, size)
        if hits is None:
            snapshot = None
            found = sorted(self._found(session_id, phrase, wanted), key=_key)
            page, more = _page(found, after, size)
            hits = [(f.key, f.hit()) for f in page], more
        items, more = hits
        return SearchEventPage(
            items=[hit for _, hit in items],
            next_cursor=encode_cursor(mark, items[-1][0], snapshot) if more else None,
        )

    def search_sessions(
        self,
        query: object,
        *,
        session_filter: object = None,
        event_filter: object = None,
        limit: object = DEFAULT_LIMIT,
        cursor: object = None,
    ) -> SearchSessionPage:
        """Sessions with a match, each with its strongest event, strongest first.

        A session whose log cannot be read or folded is skipped with a warning:
        one session's data never fails the search of the others.
        """
        if not search_enabled():
            raise SessionQueryError.search_disabled()
        phrase = parse_query(query)
        size = check_limit(limit)
        sessions = _filter(session_filter, SessionFilter)
        wanted = _filter(event_filter, EventFilter)
        mark = fingerprint(
            "sessions", phrase, sessions.model_dump(), wanted.model_dump()
        )
        position = None if cursor is None else decode_cursor(cursor, mark)
        after = None if position is None else position.key
        top = self._log_top()
        index = self._index(top)
        snapshot = _snapshot(index, position)
        allowed = None
        if index is None or sessions != SessionFilter():
            # Without a session filter the index alone says which sessions match.
            allowed = self._allowed(sessions)
        if index is None:
            scanned = allowed or set()
            best = self._scanned_best(scanned, phrase, wanted, after)
        else:
            query = IndexQuery(phrase, wanted, snapshot=snapshot)
            best = self._indexed_best(index, allowed, query, after, size)
        best.sort(key=lambda pair: pair[0])
        page, more = best[:size], len(best) > size
        titles = self._titles([hit.session_id for _, hit in page], top)
        items = [
            SessionSearchHit.model_construct(
                session_id=hit.session_id, title=titles.get(hit.session_id), hit=hit
            )
            for _, hit in page
        ]
        return SearchSessionPage(
            items=items,
            next_cursor=encode_cursor(mark, page[-1][0], snapshot) if more else None,
        )

    # ---------------------------------------------------------- sources

    def _allowed(self, wanted: SessionFilter) -> set[str]:
        """The ids ``filter_sessions`` would return, from the listed headers
        and the live handles as they are (no records built, no order)."""
        query = self.query
        reader = query.persistence
        listed = query._listed(reader) if reader is not None else {}
        live = {handle.id: handle.header for handle in query.app.live_sessions()}
        allowed = {
            key
            for key, header in listed.items()
            if key not in live and header_matches(header, wanted, False, True)
        }
        for key, header in live.items():
            stored = listed.get(key)
            if stored is not None and headers_conflict(header, stored):
                raise SessionQueryError.source_conflict(key)
            if header_matches(header, wanted, True, stored is not None):
                allowed.add(key)
        return allowed

    def _log_top(self) -> int | None:
        """The log's last notification id, read once for the views a search
        reads (the index, then the titles: one round trip, not one each);
        ``None``: the views are not caught up here (read-only, or not a store)."""
        app = self.query.app
        if not isinstance(self.query.persistence, StoreReader) or getattr(
            app, "read_only", False
        ):
            return None
        try:
            with store_errors():
                return app.recorder.max_notification_id() or 0
        except Exception as error:
            raise SessionQueryError.listing_failed(error) from error

    def _index(self, top: int | None = None) -> SearchIndex | None:
        """The store's search index, caught up (to ``top`` if given: see
        ``SessionViews.catch_up``); ``None``: scan instead."""
        if not isinstance(self.query.persistence, StoreReader):
            return None
        try:
            index = search_index_of(self.query.app)
        except StoreReadOnlyError as error:
            # A read-only copy whose index was never built: scan the events.
            log.info("no search index in a read-only store: %s", error)
            return None
        if index is not None:
            try:
                catch_up_to_read(index, top)
            except Exception as error:
                raise SessionQueryError.listing_failed(error) from error
        return index

    def _scan(
        self, session_id: str, phrase: tuple[str, ...], wanted: EventFilter
    ) -> list[_Found]:
        try:
            return self._found(session_id, phrase, wanted)
        except SessionQueryError as error:
            log.warning("search skips session %r: %s", session_id, error)
            return []

    def _scanned_best(
        self,
        session_ids: Collection[str],
        phrase: tuple[str, ...],
        wanted: EventFilter,
        after: OrderKey | None,
    ) -> list[tuple[OrderKey, SearchHit]]:
        """Each scanned session's strongest hit, if it comes after ``after``."""
        best: list[tuple[OrderKey, SearchHit]] = []
        for session_id in session_ids:
            found = self._scan(session_id, phrase, wanted)
            if found:
                top = min(found, key=_key)
                if after is None or top.key > after:
                    best.append((top.key, top.hit()))
        return best

    def _indexed_best(
        self,
        index: SearchIndex,
        allowed: set[str] | None,
        query: IndexQuery,
        after: OrderKey | None,
        size: int,
    ) -> list[tuple[OrderKey, SearchHit]]:
        """Strongest hits per session: from the index for stored sessions,
        by scanning for sessions with unflushed events (or that the index
        cannot match exactly)."""
        view = index.search.view
        try:
            scanned = {h.id for h in self.query._unflushed()}
            scanned |= view.long_sessions()
        except Exception as error:
            raise SessionQueryError.listing_failed(error) from error
        if allowed is not None:
            scanned &= allowed
            allowed = allowed - scanned
        best = self._scanned_best(scanned, query.phrase, query.wanted, after)
        stored = _Stored(self.query, query.phrase, query.wanted)
        plan_query = replace(
            query,
            sessions=None if allowed is None else frozenset(allowed),
            excluded=frozenset(scanned),
        )
        try:
            plan = IndexPlan(view, plan_query, check=stored.check)
            rows = plan.sessions(after, size)
        except SessionQueryError:
            raise
        except Exception as error:
            raise SessionQueryError.listing_failed(error) from error
        stored.prefetch(rows)
        for row in rows:
            try:
                best.append((row.key, stored.hit(row)))
            except SessionQueryError as error:
                if error.code != SessionQueryError.SESSION_NOT_FOUND:
                    raise
                # Its key forgotten (it reads as never stored): left out, as a
                # scanned session that cannot be read is.
                log.warning("search skips session %r: %s", row.session_id, error)
        return best

    def _indexed_events(
        self,
        index: SearchIndex | None,
        session_id: str,
        plan_query: IndexQuery,
        after: OrderKey | None,
        size: int,
    ) -> tuple[list[tuple[OrderKey, SearchHit]], bool] | None:
        """One session's page from the index; ``None``: scan it instead (no
        index, unflushed events, or documents the index cannot match)."""
        query = self.query
        handle = query._live(session_id)  # a scoped query sees only its scope's
        if index is None or (handle is not None and handle.unflushed):
            return None
        if handle is None:
            query._require_stored(session_id)
        view: SearchView = index.search.view
        try:
            state = view.select_rows([session_id]).get(session_id)
            if state is None:
                return [], False
            if state.broken or session_id in view.long_sessions():
                return None  # the scan raises the fold error, or matches exactly
            _require_key(view, session_id)
            stored = _Stored(query, plan_query.phrase, plan_query.wanted)
            plan = IndexPlan(view, plan_query, check=stored.check)
            rows = plan.events(session_id, after, size)
        except SessionQueryError:
            raise
        except Exception as error:
            raise SessionQueryError.listing_failed(error) from error
        stored.prefetch(rows[:size])
        page = [(row.key, stored.hit(row)) for row in rows[:size]]
        return page, len(rows) > size

    def _titles(
        self, session_ids: list[str], top: int | None = None
    ) -> dict[str, str | None]:
        """The page's titles: stored ones from the titles view in one read,
        live ones (and any other reader's) as ``read_title`` gives them."""
        query = self.query
        reader = query.persistence
        titles: dict[str, str | None] = {}
        stored = [
            key
            for key in session_ids
            if isinstance(reader, StoreReader) and query.app.live_session(key) is None
        ]
        if stored:
            assert isinstance(reader, StoreReader)
            try:
                reader.catch_up(top)
                rows = reader.views.titles_view.select_rows(stored)
            except Exception as error:
                raise SessionQueryError.listing_failed(error) from error
            for key in stored:
                row = rows.get(key)
                title = None if row is None else fold_session_title([row.event()])
                titles[key] = None if title is None else title.title
        for key in session_ids:
            if key not in titles:
                titles[key] = self._title(key)
        return titles

    def _title(self, session_id: str) -> str | None:
        try:
            title = self.query.read_title(session_id)
        except SessionQueryError:
            return None
        return None if title is None else title.title


class _Stored:
    """Indexed documents made hits: each page's events read from the log in
    one read (:meth:`~agentlog.application.stored_log.StoredLog.events_at`)."""

    def __init__(
        self, query: SessionQuery, phrase: tuple[str, ...], wanted: EventFilter
    ) -> None:
        self.log = query.app.stored_log
        self.phrase = phrase
        self.wanted = wanted
        self.check = None if wanted.text is None else self._check
        self._reads: dict[Place, PlacedEvents] = {}
        """The read that holds each place's event (a page's places share one)."""
        self._texts: dict[Place, tuple[Envelope | None, str]] = {}

    def prefetch(self, rows: Iterable[IndexedDocument]) -> None:
        """Read the events of these rows (a page) at once; each hit then reads
        as it would alone, its error included. A failed read is each row's."""
        places = [
            place
            for place in ((row.session_id, row.seq) for row in rows)
            if place not in self._reads
        ]
        if not places:
            return
        try:
            read = self.log.events_at(places)
        except Exception as error:  # raised by each row's read
            read = PlacedEvents(failed=dict.fromkeys(places, error))
        self._reads.update(dict.fromkeys(places, read))

    def _read(self, row: IndexedDocument) -> tuple[Envelope | None, str]:
        place = (row.session_id, row.seq)
        if place not in self._texts:
            if place not in self._reads:
                self.prefetch([row])
            try:
                event = self._reads[place].event(place)
            except SessionNotFoundError:
                # Its key forgotten while the index still holds its documents.
                raise SessionQueryError.not_found(row.session_id) from None
            except Exception as error:
                raise SessionQueryError.load_failed(row.session_id, error) from error
            text = None if event is None else document_text(event)
            self._texts[place] = (event, text or "")
        return self._texts[place]

    def _check(self, rows: Sequence[IndexedDocument]) -> Iterator[bool]:
        """The ``text`` clause, which needs the events' texts from the log: the
        candidates' events read at once, and forgotten unless they pass (a
        page may reject thousands). Lazily, row by row: a row whose read
        failed raises only if the page gets to it, as it would alone."""
        self.prefetch(rows)
        wanted = normalize_space(self.wanted.text or "")
        for row in rows:
            passed = wanted in normalize_space(self._read(row)[1])
            if not passed:
                place = (row.session_id, row.seq)
                self._reads.pop(place, None)
                self._texts.pop(place, None)
            yield passed

    def hit(self, row: IndexedDocument) -> SearchHit:
        event, text = self._read(row)
        found = match(text, self.phrase)
        piece, marks = snippet(text, None if found is None else found.first)
        return SearchHit.model_construct(
            session_id=row.session_id,
            seq=row.seq,
            type=row.type,
            time=None if event is None else event.get("time"),
            surface=row.surface,
            snippet=piece,
            highlights=marks,
            matched_tokens=0 if found is None else found.matched_tokens,
            live=False,
        )


def _require_key(view: SearchView, session_id: str) -> None:
    """A session of a hashed index whose key is forgotten reads as never
    stored, as its hits would (its phrase can no longer be hashed)."""
    if view.hashing is not None and not view.hashing.has_key(session_id):
        raise SessionQueryError.not_found(session_id)


def _snapshot(index: SearchIndex | None, position: Cursor | None) -> int | None:
    """The index's last document id for a first page, the cursor's after."""
    if index is None:
        return None
    if position is not None:
        return position.snapshot
    try:
        return index.search.view.last_id()
    except Exception as error:
        raise SessionQueryError.listing_failed(error) from error


def _key(found: _Found) -> OrderKey:
    return found.key


def _page(
    found: Sequence[_Found], after: OrderKey | None, size: int
) -> tuple[list[_Found], bool]:
    rest = [f for f in found if after is None or f.key > after]
    return rest[:size], len(rest) > size
