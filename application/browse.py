"""What the web viewer reads: listing pages, timelines, conversations and steps.

Every read names its session through a scoped ``SessionQuery`` first (the server's
binding scope, or ``Scope()`` for everything), so a session outside the scope reads
as missing, exactly as in docs/scope.md. The reads are bounded by the page, never by
the session: a timeline page reads its window of rows, surface classes come from the
aggregate's decision state (snapshot plus tail), and the conversation and step views
read surface rows only (docs/viewer.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentlog.application.as_of import SurfaceAsOf, events_of, surface_as_of
from agentlog.application.query import SessionQuery
from agentlog.application.scope import ANY, Scope, ScopedSessionQuery
from agentlog.application.summaries import encode_cursor
from agentlog.domain.errors import SessionQueryError

if TYPE_CHECKING:
    from agentlog.application.query_models import (
        SessionEventTrace,
        SessionLineageTrace,
        SessionSummary,
        SessionSummaryPage,
    )
    from agentlog.application.search_models import SearchSessionPage
    from agentlog.application.sessions import Sessions
    from agentlog.domain.json import Envelope

TIMELINE_WINDOW = 500
"""Raw events read per window of a timeline page."""
TIMELINE_SCAN = 5_000
"""A filtered timeline page reads at most this many events before it stops."""
STEP_SHOWN = 300
"""A step reads and shows the last surface events (and every added one)."""
STEP_LOOKBACK = 5_000
"""How far back a step view looks for the previous ``step/start``."""
_LAST_ID = "\U0010ffff" * 4


@dataclass(frozen=True, slots=True)
class ListingFilter:
    """The listing's filters: exact cwd and owner, and a ``createdAt`` range
    (``created_from`` inclusive, ``created_before`` exclusive, epoch ms)."""

    cwd: str | None = None
    owner: str | None = None
    created_from: int | None = None
    created_before: int | None = None


@dataclass(frozen=True, slots=True)
class TimelineRow:
    """One raw event of a timeline, with its surface class."""

    event: Envelope
    surface: str


@dataclass(frozen=True, slots=True)
class TimelinePage:
    rows: list[TimelineRow]
    start: int
    next_start: int | None
    previous_start: int | None


@dataclass(frozen=True, slots=True)
class Step:
    """The surface as of ``seq`` (``total`` nodes, of which ``events`` are the
    last ones and the added ones) and what changed since ``previous`` (a seq)."""

    seq: int
    previous: int | None
    events: list[Envelope]
    total: int
    added: list[int]
    removed: list[int]


@dataclass(slots=True)
class _Nodes:
    """Cached current surfaces of sessions, keyed by their length."""

    entries: dict[str, tuple[int, frozenset[int], SurfaceAsOf]] = field(
        default_factory=dict
    )


class Browser:
    """The viewer's reads over one store, inside one binding scope."""

    def __init__(self, app: Sessions, binding: Scope | None = None) -> None:
        self.app = app
        self.binding = binding or Scope()
        self._base = SessionQuery(app, read_window_max=TIMELINE_WINDOW)
        self.reads: ScopedSessionQuery = self._base.scoped(self.binding)
        self._nodes = _Nodes()

    # ------------------------------------------------------------- listing

    def _narrowed(self, wanted: ListingFilter) -> Scope | None:
        """The binding scope and the filter's cwd/owner; ``None`` if disjoint."""
        fields: dict[str, Any] = {}
        for name, value in (("cwd", wanted.cwd), ("owner", wanted.owner)):
            bound = getattr(self.binding, name)
            if value is None:
                fields[name] = bound
            elif bound is ANY or bound == value:
                fields[name] = value
            else:
                return None
        if self.binding.session_id is not ANY:
            fields["session_id"] = self.binding.session_id
        return Scope(**fields)

    def listing(
        self, wanted: ListingFilter, limit: int, cursor: str | None
    ) -> SessionSummaryPage:
        """A page of listing rows, newest first, through the listing view's index."""
        scope = self._narrowed(wanted)
        reads = self._base.scoped(scope) if scope is not None else None
        if cursor is None and wanted.created_before is not None:
            cursor = encode_cursor(wanted.created_before, _LAST_ID)
        if reads is None:
            return _empty_page()
        page = reads.list_summaries(limit, cursor=cursor)
        since = wanted.created_from
        if since is None:
            return page
        kept = [row for row in page.items if _number(row.created_at) >= since]
        if len(kept) == len(page.items):
            return page
        return page.model_copy(update={"items": kept, "next_cursor": None})

    def summary(self, session_id: str) -> SessionSummary:
        """The session's listing row (one indexed read); not found if unseen."""
        if not isinstance(session_id, str) or not session_id:
            raise SessionQueryError.not_found(session_id)
        fields: dict[str, Any] = {"session_id": session_id}
        for name in ("cwd", "owner"):
            fields[name] = getattr(self.binding, name)
        bound = self.binding.session_id
        if bound is not ANY and bound != session_id:
            raise SessionQueryError.not_found(session_id)
        page = self._base.scoped(Scope(**fields)).list_summaries(1)
        if not page.items:
            raise SessionQueryError.not_found(session_id)
        return page.items[0]

    def search(
        self, text: str, cursor: str | None, limit: int = 20
    ) -> SearchSessionPage:
        return self.reads.search_sessions(text, cursor=cursor, limit=limit)

    # ------------------------------------------------------------ timeline

    def current_nodes(
        self, session_id: str, length: int
    ) -> tuple[frozenset[int], SurfaceAsOf | None]:
        """The current surface (its node seqs as a set, and the state), from the
        decision state; call only after a scoped read found the session."""
        cached = self._nodes.entries.get(session_id)
        if cached is not None and cached[0] == length:
            return cached[1], cached[2]
        if length <= 0:
            return frozenset(), None
        state = surface_as_of(self.app, session_id, length - 1)
        if len(self._nodes.entries) > 32:
            self._nodes.entries.clear()
        nodes = frozenset(state.nodes)
        self._nodes.entries[session_id] = (length, nodes, state)
        return nodes, state

    def timeline(
        self,
        session_id: str,
        start: int,
        length: int,
        *,
        limit: int = 200,
        types: frozenset[str] | None = None,
    ) -> TimelinePage:
        """Raw events from ``start`` on, with surface classes; a type filter
        scans at most ``TIMELINE_SCAN`` events for one page."""
        start = max(0, min(start, max(length - 1, 0)))
        rows: list[TimelineRow] = []
        cursor = start
        if length == 0:
            return TimelinePage(rows, 0, None, None)
        current, _ = self.current_nodes(session_id, length)
        scanned = 0
        while cursor < length and len(rows) < limit and scanned < TIMELINE_SCAN:
            span = min(
                TIMELINE_WINDOW, limit - len(rows) if types is None else TIMELINE_WINDOW
            )
            window = self.reads.read_event(session_id, cursor, 0, max(span - 1, 0))
            for event in window.events:
                seq = event["seq"]
                if types is None or event["type"] in types:
                    rows.append(TimelineRow(event, _class(event, seq, current)))
                cursor = seq + 1
                if len(rows) >= limit:
                    break
            scanned += len(window.events)
            if not window.events:
                break
        next_start = cursor if cursor < length else None
        previous = max(0, start - limit) if start > 0 else None
        return TimelinePage(rows, start, next_start, previous)

    # --------------------------------------------------------- conversation

    def conversation(
        self, session_id: str, start: int, limit: int
    ) -> tuple[list[Envelope], int]:
        """A page of the current surface's events (model order) and the surface's
        length; only the rows of that page are read."""
        length = self.summary(session_id).event_count
        _, state = self.current_nodes(session_id, length)
        if state is None:
            return [], 0
        page = state.nodes[start : start + limit]
        return events_of(self.app, session_id, state, page), len(state.nodes)

    # ----------------------------------------------------------------- step

    def step(self, session_id: str, seq: int) -> Step:
        """What the model saw right after ``seq`` and what changed since the
        previous ``step/start`` (or the event before); the scoped read of the
        event comes first. Only the last ``STEP_SHOWN`` surface events (and the
        added ones) are read."""
        self.reads.read_event(session_id, seq)
        previous = self._previous_step(session_id, seq)
        now = surface_as_of(self.app, session_id, seq)
        before = (
            []
            if previous is None
            else surface_as_of(self.app, session_id, previous).nodes
        )
        seen = set(before)
        kept = set(now.nodes)
        added = [s for s in now.nodes if s not in seen]
        tail = set(now.nodes[-STEP_SHOWN:]) | set(added)
        shown = [s for s in now.nodes if s in tail]
        return Step(
            seq=seq,
            previous=previous,
            events=events_of(self.app, session_id, now, shown),
            total=len(now.nodes),
            added=added,
            removed=[s for s in before if s not in kept],
        )

    def _previous_step(self, session_id: str, seq: int) -> int | None:
        """The latest ``step/start`` before ``seq`` (a log-only event: the surface
        there is what that model call received), else ``seq - 1``."""
        end = seq - 1
        floor = max(0, seq - STEP_LOOKBACK)
        while end >= floor:
            first = max(floor, end - TIMELINE_WINDOW + 1)
            window = self.reads.read_event(session_id, first, 0, end - first)
            for event in reversed(window.events):
                if event["type"] == "step/start" and event["seq"] < seq:
                    return event["seq"] if event["seq"] > 0 else None
            end = first - 1
        return seq - 1 if seq > 0 else None

    # --------------------------------------------------------- the others

    def trace_event(self, session_id: str, seq: int) -> SessionEventTrace:
        return self.reads.trace_event(session_id, seq)

    def lineage(self, session_id: str) -> SessionLineageTrace:
        return self.reads.trace_session(session_id)

    def event(self, session_id: str, seq: int) -> Envelope:
        return self.reads.read_event(session_id, seq).target

    def title_history(self, session_id: str, length: int) -> list[Envelope] | None:
        """Every ``session/title`` event, oldest first; ``None`` past
        ``TIMELINE_SCAN`` events (the filter reads the whole log)."""
        if length > TIMELINE_SCAN * 4:
            return None
        from agentlog.application.search_models import EventFilter

        records = self.reads.filter_events(
            session_id, EventFilter(types=("session/title",))
        )
        return [self.event(session_id, record.seq) for record in records]


def _class(event: Envelope, seq: int, current: frozenset[int]) -> str:
    """current / shadowed / log-only: a surface event not on the surface now was
    shadowed (docs/surface.md#strict-fold-and-classification)."""
    if seq in current:
        return "current"
    return "shadowed" if "surfaceOp" in event else "log-only"


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def _empty_page() -> SessionSummaryPage:
    from agentlog.application.query_models import SessionSummaryPage

    return SessionSummaryPage(items=[], next_cursor=None)


__all__ = ["Browser", "ListingFilter", "Step", "TimelinePage", "TimelineRow"]
