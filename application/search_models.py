"""Content search's inputs (filters) and outputs (hits and pages), docs/search.md.

Filters are frozen pydantic models: a list is ORed within its field, fields are
ANDed, and ``None`` means "no constraint". ``cwd``, ``owner`` and ``parent`` lists
may hold ``None`` itself, meaning "no cwd", "no owner" and "a root session".
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints

from agentlog.application.query_models import QueryModel, SurfaceClass

Availability = Literal["live", "persisted"]


class _Filter(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class SessionFilter(_Filter):
    """Which sessions: ids, cwd, created-at range (inclusive), parent, availability,
    owner."""

    ids: tuple[str, ...] | None = None
    cwd: tuple[str | None, ...] | None = None
    created_from: int | float | None = None
    created_to: int | float | None = None
    parent: tuple[str | None, ...] | None = None
    availability: tuple[Availability, ...] | None = None
    owner: tuple[str | None, ...] | None = None


class EventFilter(_Filter):
    """Which events: seq and time ranges (inclusive), types, surface class, text.

    ``text`` matches an event's indexed text case-insensitively, any whitespace
    run matching any whitespace run.
    """

    seq_from: int | None = None
    seq_to: int | None = None
    time_from: int | float | None = None
    time_to: int | float | None = None
    types: tuple[str, ...] | None = None
    surfaces: tuple[SurfaceClass, ...] | None = None
    text: Annotated[str, StringConstraints(max_length=10_000)] | None = None
    """At most 10,000 characters, as a query (docs/search.md#queries-are-literal)."""


class SearchHit(QueryModel):
    """One matching event: where it is, a bounded snippet and its marked spans.

    ``highlights`` are ``[start, end)`` offsets into ``snippet``; ``live`` says the
    event is not stored yet (it was found in a live session's unflushed tail).
    """

    session_id: str
    seq: int
    type: str
    time: Any
    surface: SurfaceClass
    snippet: str
    highlights: list[list[int]]
    matched_tokens: int
    live: bool


class SessionSearchHit(QueryModel):
    """A session and its strongest matching event."""

    omit_when_none = frozenset({"title"})

    session_id: str
    title: str | None = None
    hit: SearchHit


class SearchEventPage(QueryModel):
    items: list[SearchHit]
    next_cursor: str | None = None


class SearchSessionPage(QueryModel):
    items: list[SessionSearchHit]
    next_cursor: str | None = None
