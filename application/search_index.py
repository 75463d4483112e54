"""The content-search index as a tracked projection (docs/search.md#the-index).

:class:`SearchProjection` folds each session's events into documents (one per
indexed event, from ``domain.search_text``) and keeps the session's surface as
decision state, so a replace marks the documents it shadows. A batch's changes
and its tracking position commit in one transaction (:meth:`SearchView.apply`),
so a crash loses nothing and indexes nothing twice, and a rebuild from position 0
gives the same index. A session whose log cannot be folded is dropped from the
index with a logged warning; the other sessions of the batch are indexed.
"""

from __future__ import annotations

import logging
import threading
import weakref
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING, Any, ClassVar, cast

from agentlog.application.catch_up import SessionViews
from agentlog.application.projections import SessionProjection, View
from agentlog.application.view_rows import HEADER_TYPE
from agentlog.domain.search_text import SearchDocument, document_text
from agentlog.domain.surface import Surface, fold_step

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping, Sequence

    from eventsourcing.application import Application
    from eventsourcing.persistence import Tracking

    from agentlog.application.view_rows import ProjectedEvent
    from agentlog.domain.json import Json

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SearchState:
    """One session's decision state: the next seq expected and the surface.

    ``broken`` sessions failed to fold; they have no documents and stay out.
    """

    session_id: str
    next_seq: int = 0
    surface: Json = None
    broken: bool = False

    KINDS: ClassVar[Mapping[str, str]] = {
        "session_id": "text",
        "next_seq": "int",
        "surface": "json",
        "broken": "int",
    }


@dataclass(slots=True)
class SearchChanges:
    """What one batch writes: states, new documents, shadowed and dropped docs."""

    states: list[SearchState] = field(default_factory=list)
    documents: list[SearchDocument] = field(default_factory=list)
    shadowed: list[tuple[str, int]] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


class SearchView(View[SearchState], ABC):
    """Documents and per-session states, written with a tracking position."""

    view_name = "search.v1"
    table_name = "agentlog_search_v1"
    row_type = SearchState

    @abstractmethod
    def apply(
        self,
        keys: Collection[str],
        change: Callable[[dict[str, SearchState]], SearchChanges],
        tracking: Tracking,
    ) -> bool:
        """In one transaction: skip (False) if ``tracking`` is recorded, else
        write ``change(current states of keys)`` and record ``tracking``."""

    @abstractmethod
    def candidates(
        self, phrase: Sequence[str], sessions: Collection[str] | None
    ) -> list[SearchDocument]:
        """Documents holding the phrase (of these sessions, if given)."""

    @abstractmethod
    def documents(self) -> list[SearchDocument]:
        """Every document, ordered by session id and seq (rebuild checks)."""

    def save(self, keys: Any, merge: Any, tracking: Tracking) -> bool:
        msg = "the search view is written with apply()"
        raise NotImplementedError(msg)


def fold_search(
    state: SearchState | None, events: Sequence[ProjectedEvent], session_id: str
) -> tuple[SearchState, list[SearchDocument], list[int]]:
    """The session's new state, its new documents and the seqs newly shadowed."""
    state = state or SearchState(session_id)
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
    new_state = SearchState(session_id, next_seq, surface.to_state())
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
        by_session: dict[str, list[ProjectedEvent]] = {}
        for event in events:
            if self.relevant(event):
                by_session.setdefault(event.session_id, []).append(event)

        def change(states: dict[str, SearchState]) -> SearchChanges:
            changes = SearchChanges()
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

        return self.view.apply(by_session.keys(), change, tracking)


# ------------------------------------------------------------ catch-up


SEARCH_MODULES: Mapping[str, str] = {
    "eventsourcing.sqlite": "agentlog.infrastructure.views.sqlite_search",
    "eventsourcing.postgres": "agentlog.infrastructure.views.postgres_search",
}
"""Backends with a search index; the others are searched by scanning."""


def search_view_class(factory: object) -> type[SearchView] | None:
    for cls in type(factory).__mro__:
        module = SEARCH_MODULES.get(cls.__module__)
        if module is not None:
            return cast("type[SearchView]", import_module(module).SEARCH_VIEW)
    return None


class SearchIndex(SessionViews):
    """The search projection alone, pulled up to date before each search.

    It shares ``SessionViews``' pull loop but not its projections: the other
    reads never pay for indexing, and a disabled search indexes nothing.
    """

    def __init__(self, app: Application[Any], view_class: type[SearchView]) -> None:
        self._app = weakref.ref(app)
        view = cast("SearchView", app.factory.tracking_recorder(view_class))
        self.search = SearchProjection(view)
        self.projections = (self.search,)
        self._positions = {}
        self._lock = threading.RLock()
        self.processed = 0


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
        index = None if view_class is None else SearchIndex(app, view_class)
        _INDEXES[app] = index
        return index
