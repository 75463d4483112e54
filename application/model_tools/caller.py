"""The caller of the tools: its session, its scope, and its current step.

Every read a tool makes goes through the caller's scoped query
(docs/scope.md): a session outside the scope is exactly a missing one. The caller
is resolved once, when the tools are bound to it, and an unknown caller fails
closed there. Its log is read again on each call that needs the current step,
because the caller keeps appending.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agentlog.application.query import DEFAULT_READ_WINDOW_MAX, SessionQuery
from agentlog.application.search_models import EventFilter, SessionFilter
from agentlog.domain.errors import SessionQueryError

if TYPE_CHECKING:
    from agentlog.application.query_models import (
        SessionEventRecord,
        SessionEventTrace,
        SessionEventWindow,
        SessionLineageTrace,
        SessionRecord,
    )
    from agentlog.application.search_models import SearchEventPage, SearchSessionPage
    from agentlog.application.sessions import Sessions
    from agentlog.domain.title import TitleSnapshot

STEP_START = "step/start"
WINDOW = DEFAULT_READ_WINDOW_MAX
"""Raw events read per window when looking back for the current step."""
STEP_WINDOWS = 20


class CallerReads(Protocol):
    """The reads the tools make; a scoped ``SessionQuery`` view provides them."""

    def read_title(self, session_id: str) -> TitleSnapshot | None: ...

    def read_event(
        self, session_id: str, seq: object, before: object = 0, after: object = 0
    ) -> SessionEventWindow: ...

    def trace_event(self, session_id: str, seq: object) -> SessionEventTrace: ...

    def trace_session(self, session_id: str) -> SessionLineageTrace: ...

    def filter_sessions(self, session_filter: object = None) -> list[SessionRecord]: ...

    def filter_events(
        self, session_id: str, event_filter: object = None
    ) -> list[SessionEventRecord]: ...

    def search_sessions(self, query: object, **options: Any) -> SearchSessionPage: ...

    def search_events(
        self, session_id: str, query: object, **options: Any
    ) -> SearchEventPage: ...


def scoped_reads(app: Sessions, caller_id: str) -> CallerReads:
    """The reads ``caller_id`` may make: only sessions in its scope exist
    (docs/scope.md#caller-scope); an unknown caller fails closed."""
    return SessionQuery(app).for_caller(caller_id)


@dataclass(frozen=True, slots=True)
class Caller:
    """The session the tools act for, and the reads its scope allows."""

    id: str
    header: dict[str, Any]
    reads: CallerReads

    @classmethod
    def resolve(cls, app: Sessions, caller_id: object) -> Caller:
        """The caller, or ``SESSION_QUERY_UNKNOWN_CALLER`` (fail closed)."""
        if type(caller_id) is not str or not caller_id:
            raise SessionQueryError.unknown_caller(caller_id)
        reads = scoped_reads(app, caller_id)
        found = reads.filter_sessions(SessionFilter(ids=(caller_id,)))
        if not found:
            raise SessionQueryError.unknown_caller(caller_id)
        return cls(caller_id, found[0].header, reads)

    @property
    def cwd(self) -> str | None:
        cwd = self.header.get("cwd")
        return cwd if isinstance(cwd, str) else None

    def current_step_start(self) -> int | None:
        """The seq where the caller's current step begins: its last ``step/start``.

        Everything from there on is the step making this call (its request, the
        tool call itself, results of calls beside it), so a search of the caller's
        own session stops before it. ``None``: the log has no step yet, so it
        cannot hold a tool call either (calls are enclosed in steps,
        docs/invariants.md).

        Read from the end of the log: the last seq is found with a few one-event
        reads, then windows of raw events are read backwards, so the cost follows
        the length of the current step, not of the session; a step longer than
        ``STEP_WINDOWS`` windows falls back to one pass over the whole log.
        """
        end = self._last_seq()
        for _ in range(STEP_WINDOWS):
            if end is None:
                return None
            window = self.reads.read_event(self.id, end, before=WINDOW)
            starts = [
                int(e["seq"]) for e in window.events if e.get("type") == STEP_START
            ]
            if starts:
                return max(starts)
            end = window.start_seq - 1 if window.start_seq > 0 else None
        steps = self.reads.filter_events(self.id, EventFilter(types=(STEP_START,)))
        return steps[-1].seq if steps else None

    def _has(self, seq: int) -> bool:
        try:
            self.reads.read_event(self.id, seq)
        except SessionQueryError as error:
            if error.code == SessionQueryError.EVENT_NOT_FOUND:
                return False
            raise
        return True

    def _last_seq(self) -> int | None:
        """The caller's last seq (seqs run from 0 without gaps), in about
        ``2 log2(n)`` one-event reads; ``None`` for an empty log."""
        if not self._has(0):
            return None
        low, high = 0, 1
        while self._has(high):
            low, high = high, high * 2
        while high - low > 1:  # low is in the log, high is not
            middle = (low + high) // 2
            low, high = (middle, high) if self._has(middle) else (low, middle)
        return low
