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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from agentlog.application.search_index import SearchIndex, search_index_of
from agentlog.application.search_match import (
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
from agentlog.application.store_reader import StoreReader
from agentlog.domain.errors import SessionQueryError
from agentlog.domain.search_text import SearchDocument, document_text, normalize_space

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentlog.application.query import SessionQuery
    from agentlog.application.query_models import (
        SessionEventRecord,
        SessionRecord,
        SurfaceClass,
    )
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
    header = record.header
    checks = (
        wanted.ids is None or header.get("id") in wanted.ids,
        wanted.cwd is None or header.get("cwd") in wanted.cwd,
        wanted.owner is None or header.get("owner") in wanted.owner,
        wanted.parent is None or header.get("parentSession") in wanted.parent,
        _in_range(header.get("createdAt"), wanted.created_from, wanted.created_to),
        wanted.availability is None
        or ("live" in wanted.availability and record.live)
        or ("persisted" in wanted.availability and record.persisted),
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
        handle = query.app.live_session(session_id)
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
            key = order_key(result, document.time, session_id, document.seq)
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
        after = None if cursor is None else decode_cursor(cursor, mark)
        found = sorted(self._events(session_id, phrase, wanted), key=lambda f: f.key)
        page, more = _page(found, after, size)
        return SearchEventPage(
            items=[f.hit() for f in page],
            next_cursor=encode_cursor(mark, page[-1].key) if more else None,
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
        after = None if cursor is None else decode_cursor(cursor, mark)
        index = self._index()
        ids = None
        if index is None or sessions != SessionFilter():
            # Without a session filter the index alone says which sessions match.
            records = self.filter_sessions(sessions)
            ids = [str(record.header.get("id")) for record in records]
        best = [
            min(found, key=lambda f: f.key)
            for found in self._by_session(index, ids, phrase, wanted).values()
            if found
        ]
        best.sort(key=lambda f: f.key)
        page, more = _page(best, after, size)
        items = [
            SessionSearchHit.model_construct(
                session_id=f.document.session_id,
                title=self._title(f.document.session_id),
                hit=f.hit(),
            )
            for f in page
        ]
        return SearchSessionPage(
            items=items,
            next_cursor=encode_cursor(mark, page[-1].key) if more else None,
        )

    # ---------------------------------------------------------- sources

    def _index(self) -> SearchIndex | None:
        """The store's search index, caught up; ``None``: scan instead."""
        if not isinstance(self.query.persistence, StoreReader):
            return None
        index = search_index_of(self.query.app)
        if index is not None:
            try:
                index.catch_up()
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

    def _by_session(
        self,
        index: SearchIndex | None,
        ids: list[str] | None,
        phrase: tuple[str, ...],
        wanted: EventFilter,
    ) -> dict[str, list[_Found]]:
        """Hits per session (of ``ids``; ``None``: every session): stored ones
        from the index, unflushed ones by scan."""
        if index is None:
            return {key: self._scan(key, phrase, wanted) for key in ids or ()}
        unflushed = {h.id for h in self.query.app.unflushed_sessions()}
        allowed = None if ids is None else set(ids) - unflushed
        found: dict[str, list[_Found]] = {
            session_id: self._scan(session_id, phrase, wanted)
            for session_id in unflushed
            if ids is None or session_id in ids
        }
        try:
            documents = index.search.view.candidates(phrase, None)
        except Exception as error:
            raise SessionQueryError.listing_failed(error) from error
        for document in documents:
            key = document.session_id
            if (key not in unflushed) if allowed is None else (key in allowed):
                hit = _indexed(document, phrase, wanted)
                if hit is not None:
                    found.setdefault(document.session_id, []).append(hit)
        return found

    def _events(
        self, session_id: str, phrase: tuple[str, ...], wanted: EventFilter
    ) -> list[_Found]:
        """One session's hits: from the index if it is stored and flushed."""
        index = self._index()
        query = self.query
        handle = query.app.live_session(session_id)
        if index is None or (handle is not None and handle.unflushed):
            return self._found(session_id, phrase, wanted)
        if handle is None:
            query._require_stored(session_id)
        view = index.search.view
        try:
            state = view.select_rows([session_id]).get(session_id)
            documents = [] if state is None else view.candidates(phrase, [session_id])
        except Exception as error:
            raise SessionQueryError.listing_failed(error) from error
        if state is not None and state.broken:
            return self._found(session_id, phrase, wanted)  # raises its fold error
        hits = (_indexed(document, phrase, wanted) for document in documents)
        return [hit for hit in hits if hit is not None]

    def _title(self, session_id: str) -> str | None:
        try:
            title = self.query.read_title(session_id)
        except SessionQueryError:
            return None
        return None if title is None else title.title


def _indexed(
    document: SearchDocument, phrase: tuple[str, ...], wanted: EventFilter
) -> _Found | None:
    """An index candidate, checked exactly as the scan checks an event."""
    place = {"seq": document.seq, "time": document.time, "type": document.type}
    if not event_matches(place, document.surface, wanted, document.text):
        return None
    result = match(document.text, phrase)
    if result is None:
        return None
    key = order_key(result, document.time, document.session_id, document.seq)
    return _Found(key, document, result, live=False)


def _page(
    found: Sequence[_Found], after: OrderKey | None, size: int
) -> tuple[list[_Found], bool]:
    rest = [f for f in found if after is None or f.key > after]
    return rest[:size], len(rest) > size
