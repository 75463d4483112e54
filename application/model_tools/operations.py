"""What each tool does: validated arguments in, the caller's scoped reads, text out.

Each function takes the :class:`~.caller.Caller`, its tool's parsed arguments and
the search cap, and returns the result text (:mod:`.text`). Query errors propagate
to :class:`~.tools.ModelTools`, which turns them into model-safe messages.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

from agentlog.application.model_tools.collect import collect
from agentlog.application.model_tools.text import (
    NO_WORKSPACE,
    event_read_text,
    event_search_text,
    event_trace_text,
    session_search_text,
    session_trace_text,
)
from agentlog.application.model_tools.times import parse_time
from agentlog.application.search_models import EventFilter, SessionFilter
from agentlog.domain.errors import ModelToolError, SessionQueryError

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentlog.application.model_tools.arguments import (
        EventReadArguments,
        EventSearchArguments,
        EventTargetArguments,
        SessionSearchArguments,
        SessionTargetArguments,
    )
    from agentlog.application.model_tools.caller import Caller, CallerReads
    from agentlog.application.query_models import SessionRecord

log = logging.getLogger(__name__)


def _ms(value: str | None) -> int | float | None:
    return None if value is None else parse_time(value)


def _tuple(values: list[Any] | None) -> tuple[Any, ...] | None:
    return None if values is None else tuple(values)


def title_of(reads: CallerReads, session_id: str) -> str | None:
    """The session's title; a title that cannot be read is logged and left out."""
    try:
        title = reads.read_title(session_id)
    except SessionQueryError as error:
        log.warning("title of session %r unreadable: %r", session_id, error)
        return None
    return None if title is None else title.title


def target_of(
    caller: Caller, args: SessionTargetArguments | EventSearchArguments
) -> str:
    """The session a tool reads: the one named, else the caller's own."""
    return caller.id if args.session_id is None else args.session_id


def _records(reads: CallerReads, ids: set[str]) -> dict[str, SessionRecord]:
    if not ids:
        return {}
    found = reads.filter_sessions(SessionFilter(ids=tuple(sorted(ids))))
    return {str(record.header.get("id")): record for record in found}


def session_search(caller: Caller, args: SessionSearchArguments, cap: int) -> str:
    """Prior sessions of the workspace with a match; never the caller's own."""
    if caller.cwd is None:
        raise ModelToolError(NO_WORKSPACE)
    parents: tuple[str | None, ...] | None = _tuple(args.parent_session_ids)
    if args.include_root_sessions:
        parents = (*(parents or ()), None)
    sessions = SessionFilter(
        ids=_tuple(args.session_ids),
        created_from=_ms(args.created_at_from),
        created_to=_ms(args.created_at_to),
        parent=parents,
        availability=_tuple(args.availability),
    )
    events = EventFilter(
        seq_from=args.event_seq_from,
        seq_to=args.event_seq_to,
        time_from=_ms(args.event_time_from),
        time_to=_ms(args.event_time_to),
        types=_tuple(args.event_types),
        surfaces=_tuple(args.event_surfaces),
    )
    reads = caller.reads
    found = collect(
        lambda cursor, size: reads.search_sessions(
            args.query,
            session_filter=sessions,
            event_filter=events,
            limit=size,
            cursor=cursor,
        ),
        cap,
        keep=lambda item: item.session_id != caller.id,
        dropped=1,
    )
    records = _records(reads, {item.session_id for item in found.items})
    parent_ids = {
        parent
        for record in records.values()
        if isinstance(parent := record.header.get("parentSession"), str)
    }
    visible = set(_records(reads, parent_ids))
    return session_search_text(found, records, visible)


def session_event_search(caller: Caller, args: EventSearchArguments, cap: int) -> str:
    """Matching events of one session; in the caller's own, only those before
    its current step (:meth:`~.caller.Caller.current_step_start`)."""
    target = target_of(caller, args)
    seq_to = args.seq_to
    if target == caller.id:
        start = caller.current_step_start()
        if start is not None:
            seq_to = start - 1 if seq_to is None else min(seq_to, start - 1)
    events = EventFilter(
        seq_from=args.seq_from,
        seq_to=seq_to,
        time_from=_ms(args.time_from),
        time_to=_ms(args.time_to),
        types=_tuple(args.event_types),
        surfaces=_tuple(args.surfaces),
    )
    reads = caller.reads
    found = collect(
        lambda cursor, size: reads.search_events(
            target, args.query, event_filter=events, limit=size, cursor=cursor
        ),
        cap,
    )
    return event_search_text(target, title_of(reads, target), found)


def session_trace(caller: Caller, args: SessionTargetArguments, cap: int) -> str:
    """The lineage the caller may see around one session."""
    reads = caller.reads
    trace = reads.trace_session(target_of(caller, args))
    return session_trace_text(trace, lambda key: title_of(reads, key), cap)


def session_event_trace(caller: Caller, args: EventTargetArguments, cap: int) -> str:
    """Replacement and provenance links of one event."""
    target = target_of(caller, args)
    trace = caller.reads.trace_event(target, args.seq)
    return event_trace_text(target, title_of(caller.reads, target), trace)


def session_event_read(caller: Caller, args: EventReadArguments, cap: int) -> str:
    """One event exactly, with up to ``before``/``after`` neighbours summarised."""
    target = target_of(caller, args)
    window = caller.reads.read_event(
        target, args.seq, args.before or 0, args.after or 0
    )
    return event_read_text(target, title_of(caller.reads, target), window)


OPERATIONS: Final[dict[str, Callable[[Caller, Any, int], str]]] = {
    "session_search": session_search,
    "session_event_search": session_event_search,
    "session_trace": session_trace,
    "session_event_trace": session_event_trace,
    "session_event_read": session_event_read,
}
