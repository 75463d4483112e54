"""Every read path the adversarial suite tries, and how an outcome is compared.

``TARGETED`` are the reads that name one session: each is called with an id
from outside the scope and with an id that never existed, and the two outcomes
must be the same but for the id. ``render`` serialises any result with its
model's own JSON dump, for the byte scan.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from agentlog import AgentlogError, EventFilter, SessionFilter, SessionQueryError
from agentlog.application.surface_stream import SurfaceStream
from agentlog.domain.json import dumps
from agentlog.domain.title import TitleSnapshot

Read = Callable[[Any, str], Any]

TARGETED: dict[str, Read] = {
    "read_title": lambda q, s: q.read_title(s),
    "list_events": lambda q, s: q.list_events(s),
    "read_surface": lambda q, s: q.read_surface(s),
    "stream_surface": lambda q, s: q.stream_surface(s),
    "read_event(0)": lambda q, s: q.read_event(s, 0),
    "read_event(3, window)": lambda q, s: q.read_event(s, 3, 2, 2),
    "read_event(-1)": lambda q, s: q.read_event(s, -1),
    "read_event(999)": lambda q, s: q.read_event(s, 999),
    "read_event('x')": lambda q, s: q.read_event(s, "x"),
    "read_event(bad window)": lambda q, s: q.read_event(s, 0, 10**9),
    "trace_event(1)": lambda q, s: q.trace_event(s, 1),
    "trace_event(999)": lambda q, s: q.trace_event(s, 999),
    "trace_event(None)": lambda q, s: q.trace_event(s, None),
    "trace_session": lambda q, s: q.trace_session(s),
    "filter_events": lambda q, s: q.filter_events(s),
    "filter_events(types)": lambda q, s: q.filter_events(
        s, EventFilter(types=("user/message",))
    ),
    "filter_events(bad filter)": lambda q, s: q.filter_events(s, "bad"),
    "search_events": lambda q, s: q.search_events(s, "needle"),
    "search_events(limit 1)": lambda q, s: q.search_events(s, "needle", limit=1),
    "search_events(blank query)": lambda q, s: q.search_events(s, " "),
    "search_events(bad cursor)": lambda q, s: q.search_events(s, "needle", cursor="x"),
    "search_events(bad limit)": lambda q, s: q.search_events(s, "needle", limit=0),
    "search_events(filter)": lambda q, s: q.search_events(
        s, "needle", event_filter=EventFilter(surfaces=("current",))
    ),
    "filter_sessions(ids)": lambda q, s: q.filter_sessions(SessionFilter(ids=(s,))),
    "filter_sessions(parent)": lambda q, s: q.filter_sessions(
        SessionFilter(parent=(s,))
    ),
    "search_sessions(ids)": lambda q, s: q.search_sessions(
        "needle", session_filter=SessionFilter(ids=(s,))
    ),
    "search_sessions(parent)": lambda q, s: q.search_sessions(
        "needle", session_filter=SessionFilter(parent=(s,))
    ),
}
"""The targeted reads; the last four answer an empty result for an unseen id."""


def render(value: Any) -> Any:
    """A result as JSON, every model with its own dump (``to_json``)."""
    if isinstance(value, SurfaceStream):
        return {
            "session": value.session,
            "capturedThroughSeq": value.captured_through_seq,
            "events": list(value.events),
        }
    if isinstance(value, TitleSnapshot) or hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, list):
        return [render(item) for item in value]
    return value


def text(value: Any) -> str:
    """Every byte a caller gets: the JSON dump, and pydantic's own where it applies."""
    out = dumps(render(value)).decode("utf-8", "surrogatepass")
    if isinstance(value, BaseModel):
        out += value.model_dump_json()
    return out


def outcome(call: Callable[[], Any]) -> tuple[Any, ...]:
    """``("ok", json)`` or ``("error", class, code, message)``."""
    try:
        result = call()
    except AgentlogError as error:
        code = error.code if isinstance(error, SessionQueryError) else None
        return ("error", type(error).__name__, code, str(error))
    return ("ok", text(result))


def same_but_for_the_id(
    first: tuple[Any, ...], first_id: str, second: tuple[Any, ...], second_id: str
) -> bool:
    """Whether two outcomes are equal once ``first_id`` reads ``second_id``."""
    replaced = tuple(
        part.replace(first_id, second_id) if isinstance(part, str) else part
        for part in first
    )
    return replaced == second
