"""The content-search index as a tracked projection (docs/search.md#the-index).

:class:`SearchProjection` folds each session's events into documents (one per
indexed event, from ``domain.search_text``) and keeps the session's surface as
decision state, so a replace marks the documents it shadows. A batch's changes
and its tracking position commit in one transaction (:meth:`SearchView.apply`),
so a crash loses nothing and indexes nothing twice, and a rebuild from position 0
gives the same index. A session whose log cannot be folded is dropped from the
index with a logged warning; the other sessions of the batch are indexed.

The index keeps no document text: each document row holds its order key
(``search_match.OrderKey``) and what the filters need; a page's snippets are
read from the log. :class:`SearchView` answers pages through two primitives,
driven by ``search_plan``.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import weakref
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, cast

from agentlog.application.catch_up import SessionViews
from agentlog.application.ports import backend_of
from agentlog.application.projections import View, split_erased
from agentlog.application.search_hashing import TokenHashing
from agentlog.application.session_projections import SessionProjection
from agentlog.application.store_errors import store_errors
from agentlog.application.view_rows import HEADER_TYPE
from agentlog.domain.search_text import SearchDocument, SurfaceClass, document_text
from agentlog.domain.surface import Surface, fold_step

if TYPE_CHECKING:
    from collections.abc import (
        Callable,
        Collection,
        Generator,
        Iterator,
        Mapping,
        Sequence,
    )

    from eventsourcing.application import Application
    from eventsourcing.persistence import Tracking

    from agentlog.application.search_match import OrderKey
    from agentlog.application.search_models import EventFilter
    from agentlog.application.sessions import Sessions
    from agentlog.application.view_rows import ProjectedEvent
    from agentlog.domain.json import Json

log = logging.getLogger(__name__)
SURFACES: tuple[SurfaceClass, ...] = ("current", "shadowed", "log-only")
"""Surface classes by their stored code (the index stores the position)."""
TEXT_SUM_MODULUS = 2**62
Bounds = tuple[str | None, "OrderKey | None", "OrderKey | None"]
"""One session's id (or ``None``: every session) and the keys a read starts
after and ends at (``None``: no bound)."""
MAX_BATCH = 4096
"""The largest batch a view without streaming reads reads at once."""


def text_hash(seq: int, text: str) -> int:
    """A short hash of one document's indexed text (summed per session)."""
    raw = f"{seq}:".encode() + text.encode("utf-8", "surrogatepass")
    digest = hashlib.blake2b(raw, digest_size=8).digest()
    return int.from_bytes(digest, "big") % TEXT_SUM_MODULUS


def text_sum(documents: Mapping[int, str]) -> int:
    """The session's ``text_sum``: its documents' hashes summed (order-free)."""
    total = sum(text_hash(seq, text) for seq, text in documents.items())
    return total % TEXT_SUM_MODULUS


@dataclass(frozen=True, slots=True)
class SearchState:
    """One session's decision state: the next seq expected and the surface.

    ``broken`` sessions failed to fold; they have no documents and stay out.
    ``text_sum`` sums the hashes of the session's indexed texts, so a view that
    must name a document's text to forget it (a contentless FTS5 table) can
    check that the texts it recomputes from the log are the ones it indexed.
    """

    session_id: str
    next_seq: int = 0
    surface: Json = None
    broken: bool = False
    text_sum: int = 0

    KINDS: ClassVar[Mapping[str, str]] = {
        "session_id": "text",
        "next_seq": "int",
        "surface": "json",
        "broken": "int",
        "text_sum": "int",
    }


@dataclass(frozen=True, slots=True)
class IndexedDocument:
    """One document as the index holds it: where it is, its class and its key."""

    session_id: str
    seq: int
    type: str
    surface: SurfaceClass
    doc_tokens: int
    neg_time: float
    id: int = field(default=0, compare=False)
    """The document's id in the index (its full-text rowid)."""

    @property
    def key(self) -> OrderKey:
        return (self.doc_tokens, self.neg_time, self.session_id, -self.seq)


@dataclass(frozen=True, slots=True)
class IndexQuery:
    """What a page asks the index: the phrase, the event filter's columns
    (its ``text`` clause is checked by the caller), and which sessions."""

    phrase: tuple[str, ...]
    wanted: EventFilter
    sessions: frozenset[str] | None = None
    excluded: frozenset[str] = frozenset()
    snapshot: int | None = None
    """Only documents with ids up to this one (those of the first page's time)."""


@dataclass(slots=True)
class SearchChanges:
    """What one batch writes: states, new documents, shadowed and dropped docs."""

    states: list[SearchState] = field(default_factory=list)
    documents: list[SearchDocument] = field(default_factory=list)
    shadowed: list[tuple[str, int]] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    erased: list[str] = field(default_factory=list)
    """Sessions whose documents *and* state go (docs/erasure.md)."""


class SearchView(View[SearchState], ABC):
    """Documents and per-session states, written with a tracking position."""

    view_name = "search.v2"
    table_name = "agentlog_search_v2"
    row_type = SearchState
    texts: Callable[[str], Mapping[int, str] | None] | None = None
    """The indexed texts of a stored session by seq, recomputed from its log
    (``None``: unreadable); set by :class:`SearchIndex`, needed by a view that
    forgets a document by its text."""
    hashing: TokenHashing | None = None
    """With per-session encryption, how tokens become keyed hashes before they
    reach the index, and a query's phrase once per session (set by
    :class:`SearchIndex`; ``None``: the index holds the tokens themselves)."""
    lists_in_order: ClassVar[bool] = False
    """Whether the view's full-text index lists a phrase's matches in the
    order's first part, so a read across sessions finds its own way and needs
    no ids (``search_plan``); the SQLite view's does."""

    @abstractmethod
    def apply(
        self,
        keys: Collection[str],
        change: Callable[[dict[str, SearchState]], SearchChanges],
        tracking: Tracking,
    ) -> bool:
        """In one transaction: skip (False) if ``tracking`` is recorded, else
        write ``change(current states of keys)`` and record ``tracking``."""

    def rare_cap(self) -> int | None:
        """The most matches a phrase may have to be read sorted by its ids
        rather than walked, if lower than ``search_plan.RARE_CAP`` (what a
        test and a sorted match cost differs by backend)."""
        return None

    def matching_ids(
        self,
        phrase: Sequence[str],
        cap: int | None,
        sessions: Collection[str] | None = None,
    ) -> list[int] | None:
        """The ids of the documents holding the phrase, or ``None`` if there
        are more than ``cap`` (the phrase is common: walk the order instead).
        One evaluation of the phrase, its ids sent as one value."""
        ids = self.select_ids(phrase, None if cap is None else cap + 1, sessions)
        return None if cap is not None and len(ids) > cap else ids

    @abstractmethod
    def select_ids(
        self,
        phrase: Sequence[str],
        limit: int | None,
        sessions: Collection[str] | None = None,
    ) -> list[int]:
        """At most ``limit`` ids of documents holding the phrase, of these
        sessions if given (a hashed index hashes the phrase per session; a
        plain one may return others' too, which the filters then leave out)."""

    @abstractmethod
    def ranked(
        self,
        query: IndexQuery,
        *,
        ids: Sequence[int] | None,
        session_id: str | None = None,
        after: OrderKey | None = None,
        upto: OrderKey | None = None,
        limit: int,
        test: bool = True,
    ) -> list[IndexedDocument]:
        """At most ``limit`` matching documents in the search order, with keys in
        ``(after, upto]``, of one session if given.

        A document matches if it passes the query's filters and its id is in
        ``ids``, or, with ``ids`` ``None``, if the index says it holds the
        phrase: the view then walks its order index and tests each document.
        Without ``test`` (one session only) neither holds: every document of the
        session that passes the filters, for the caller to test.
        """

    @contextmanager
    def reading(self) -> Iterator[Any]:
        """One read transaction for a page's :meth:`stream` calls (``None``:
        the view has no streaming reads, and each call reads in batches)."""
        yield None

    def stream(
        self,
        reader: Any,
        query: IndexQuery,
        *,
        ids: Sequence[int] | None,
        session_id: str | None = None,
        after: OrderKey | None = None,
        upto: OrderKey | None = None,
        test: bool = True,
        batch: int = 64,
    ) -> Generator[IndexedDocument, None, None]:
        """Every document :meth:`ranked` would return, in order, read lazily.

        With a ``reader`` from :meth:`reading`, the view reads one query as the
        caller consumes it (:meth:`read_stream`: the caller stops the database's
        work by stopping); without, :meth:`ranked` batches, each seeking past the
        last key, growing from ``batch`` to :data:`MAX_BATCH`.
        """
        if reader is not None:
            bounds = (session_id, after, upto)
            yield from self.read_stream(reader, query, ids, bounds, test, batch)
            return
        while True:
            rows = self.ranked(
                query,
                ids=ids,
                session_id=session_id,
                after=after,
                upto=upto,
                limit=batch,
                test=test,
            )
            yield from rows
            if len(rows) < batch:
                return
            after = rows[-1].key
            batch = min(batch * 4, MAX_BATCH)

    def read_stream(
        self,
        reader: Any,
        query: IndexQuery,
        ids: Sequence[int] | None,
        bounds: Bounds,
        test: bool,
        batch: int,
    ) -> Generator[IndexedDocument, None, None]:
        """:meth:`stream` within the read transaction ``reader`` of a view
        whose :meth:`reading` yields one."""
        raise NotImplementedError
        yield  # a generator

    @abstractmethod
    def last_id(self) -> int:
        """The mark of the last document added so far (marks grow as documents
        are added): a cursor's snapshot, so its later pages leave out what was
        added after the first."""

    def long_sessions(self) -> set[str]:
        """Sessions with documents the index may not match exactly (searched
        by scanning instead); none unless the backend has such a limit."""
        return set()

    @abstractmethod
    def documents(self) -> list[IndexedDocument]:
        """Every document, ordered by session id and seq (rebuild checks)."""

    @abstractmethod
    def purge(self, session_ids: Collection[str], cursor: Any = None) -> None:
        """Forget these sessions' documents and states (erasure); in the
        caller's transaction if given a cursor. Runs while the sessions'
        events are still readable (a view may need their texts)."""

    def stale(self) -> bool:
        """True if documents could not be forgotten exactly: rebuild."""
        return False

    def optimize(self) -> None:
        """Compact the full-text index after a large catch-up (if it helps)."""

    def begin_bulk(self) -> None:
        """Before a catch-up of at least ``SearchIndex.BULK_AFTER``
        notifications: drop what is better built once at its end (if any)."""

    def end_bulk(self) -> None:
        """After that catch-up, or its failure: build what :meth:`begin_bulk`
        dropped."""

    def save(self, keys: Any, merge: Any, tracking: Tracking, purge: Any = ()) -> bool:
        msg = "the search view is written with apply()"
        raise NotImplementedError(msg)


def fold_search(
    state: SearchState | None, events: Sequence[ProjectedEvent], session_id: str
) -> tuple[SearchState, list[SearchDocument], list[int]]:
    """The session's new state, its new documents and the seqs newly shadowed."""
    state = state or SearchState(session_id)
    total = state.text_sum
    surface = Surface() if state.surface is None else Surface.from_state(state.surface)
    next_seq = state.next_seq
    documents: list[SearchDocument] = []
    shadowed: list[int] = []
    for event in events:
        envelope = event.envelope
        removed = fold_step(surface, envelope, next_seq)
        shadowed.extend(removed)
        text = document_text(envelope)
        if text is not None:
            seq = next_seq
            total += text_hash(seq, text)
            klass = "current" if seq in surface else "log-only"
            documents.append(
                SearchDocument(
                    session_id,
                    seq,
                    event.type,
                    envelope.get("time"),
                    klass,  # type: ignore[arg-type]
                    text,
                )
            )
        next_seq += 1
    gone = set(shadowed)
    documents = [
        doc
        if doc.seq not in gone
        else SearchDocument(
            doc.session_id, doc.seq, doc.type, doc.time, "shadowed", doc.text
        )
        for doc in documents
    ]
    new_state = SearchState(
        session_id, next_seq, surface.to_state(), text_sum=total % TEXT_SUM_MODULUS
    )
    return new_state, documents, shadowed


class SearchProjection(SessionProjection[SearchView]):
    """Documents per event and surface classes per session."""

    name = "agentlog_search"

    def relevant(self, event: ProjectedEvent) -> bool:
        return event.type != HEADER_TYPE

    def fold(self, row: Any, events: list[ProjectedEvent], session_id: str) -> Any:
        return fold_search(row, events, session_id)

    def process_batch(
        self, events: Sequence[ProjectedEvent], tracking: Tracking
    ) -> bool:
        by_session, erased = split_erased(events, self.relevant)

        def change(states: dict[str, SearchState]) -> SearchChanges:
            changes = SearchChanges(erased=sorted(erased))
            for session_id, batch in by_session.items():
                state = states.get(session_id)
                if state is not None and state.broken:
                    continue
                try:
                    new, documents, shadowed = fold_search(state, batch, session_id)
                except Exception as error:
                    log.warning("search index skips session %r: %s", session_id, error)
                    changes.states.append(SearchState(session_id, broken=True))
                    changes.dropped.append(session_id)
                    continue
                changes.states.append(new)
                changes.documents.extend(documents)
                known = {doc.seq for doc in documents}
                changes.shadowed.extend(
                    (session_id, seq) for seq in shadowed if seq not in known
                )
            return changes

        applied = self.view.apply(by_session.keys(), change, tracking)
        if erased and self.view.hashing is not None:
            # An erase that forgot a key while this batch was being read lets
            # the batch make the session a new one to hash with: forget again.
            self.view.hashing.forget(erased)
        return applied


# ------------------------------------------------------------ catch-up


def search_view_class(factory: object) -> type[SearchView] | None:
    """The search view of the factory's backend; ``None``: search scans."""
    backend = backend_of(factory)
    return None if backend is None else backend.search_view()


class SearchIndex(SessionViews):
    """The search projection alone, pulled up to date before each search.

    It shares ``SessionViews``' pull loop but not its projections: the other
    reads never pay for indexing, and a disabled search indexes nothing.
    """

    def __init__(self, app: Application[Any], view_class: type[SearchView]) -> None:
        self._app = weakref.ref(app)
        view = cast("SearchView", app.factory.tracking_recorder(view_class))
        view.texts = self.texts
        keys = cast("Sessions", app).key_store
        view.hashing = None if keys is None else TokenHashing(keys)
        self.search = SearchProjection(view)
        self.views = (view,)
        self._projections = (self.search,)
        self._positions = {}
        self._lock = threading.RLock()
        self.processed = 0

    TEXTS_WINDOW = 5_000
    """Events read at a time by :meth:`texts`: a long session's log is never
    held whole, only its texts."""

    def texts(self, session_id: str) -> dict[int, str] | None:
        """The session's document texts by seq, from its stored log (``None``:
        the log cannot be read)."""
        stored = cast("Sessions", self.app).stored_log
        found: dict[int, str] = {}
        start = 0
        while True:
            try:
                events = stored.events(session_id, start, limit=self.TEXTS_WINDOW)
            except Exception as error:
                log.warning(
                    "search index cannot read session %r: %s", session_id, error
                )
                return None
            for event in events:
                text = document_text(event)
                if text is not None:
                    found[event["seq"]] = text
            if len(events) < self.TEXTS_WINDOW:
                return found
            start += len(events)

    OPTIMIZE_AFTER = 50_000
    """A catch-up that reads this many notifications compacts the index after."""
    HASHED_OPTIMIZE_AFTER = 1_000
    """The same for a hashed index, sooner: a search asks the full-text index
    once per session, and each lookup costs more the more segments it reads
    (docs/encryption.md#cost-of-the-hashed-search-index)."""

    BULK_AFTER = 50_000
    """A catch-up this many notifications behind at its first read in this
    process builds the view's indexes once, at its end (``begin_bulk``): on
    PostgreSQL, indexes kept row by row came out a quarter larger
    (docs/search-figures.md)."""

    def catch_up(self, top: int | None = None) -> int:
        """Pull the index up to date; rebuild it first if it went stale."""
        with self._lock:
            view = self.search.view
            if view.stale():
                log.warning("search index: documents could not be forgotten; rebuild")
                return self.rebuild()
            bulk = False
            if not self._positions:
                last, positions = self._read_positions()
                bulk = last - min(positions.values()) >= self.BULK_AFTER
            if bulk:
                view.begin_bulk()
            try:
                read = super().catch_up(top)
            finally:
                if bulk:
                    view.end_bulk()
            hashed = view.hashing is not None
            if read >= (self.HASHED_OPTIMIZE_AFTER if hashed else self.OPTIMIZE_AFTER):
                view.optimize()
            return read


_INDEXES: weakref.WeakKeyDictionary[Application[Any], SearchIndex | None] = (
    weakref.WeakKeyDictionary()
)
_INDEXES_LOCK = threading.Lock()


def search_index_of(app: Application[Any]) -> SearchIndex | None:
    """The application's search index (built once), or ``None``: scan instead."""
    with _INDEXES_LOCK:
        if app in _INDEXES:
            return _INDEXES[app]
        view_class = search_view_class(app.factory)
        with store_errors():  # a store failure is ours, never the library's
            index = None if view_class is None else SearchIndex(app, view_class)
        _INDEXES[app] = index
        return index
