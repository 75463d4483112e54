"""The read operations of the query service, declared once.

Each read of :class:`~agentlog.application.query.SessionQuery` is listed here with
what a scope does to its result and where else it is offered: the scoped view
(:class:`~agentlog.application.scope.ScopedSessionQuery`), the coroutines
(:class:`~agentlog.application.async_sessions.AsyncSessionQuery`) and the model
tools (:class:`~agentlog.application.model_tools.caller.CallerReads`). The
conformance tests (``tests/scope/test_read_operations.py``) check every wrapper
against this table, and run every read through a scope whose sessions have a
parent outside it: a wrapper that lacks a read, or forgets to shape its result,
fails there. Adding a read is one row here plus its method on each wrapper.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Shaping(enum.Enum):
    """What the scoped view does to a read's result (docs/scope.md)."""

    NONE = "none"
    """The result names no session but the one read (already scope-checked)."""
    SESSION = "session"
    """One session's header: an unseen ``parentSession`` is withheld."""
    RECORDS = "records"
    """A list of sessions: each unseen ``parentSession`` is withheld."""
    SUMMARIES = "summaries"
    """A listing page: unseen parents withheld from headers and summaries."""
    LINEAGE = "lineage"
    """A lineage trace: stops at the first unseen session, complete: false."""
    FILTERED = "filtered"
    """The session filter argument is intersected with the scope."""


@dataclass(frozen=True, slots=True)
class ReadOperation:
    """One read: its name, its scope shaping, and where it is offered."""

    name: str
    shaping: Shaping
    model_tool: bool = False
    """Offered to model tools (``CallerReads``)."""
    awaitable: bool = True
    """Offered as a coroutine by ``AsyncSessionQuery`` (an iterator is not)."""


READ_OPERATIONS: tuple[ReadOperation, ...] = (
    ReadOperation("list_sessions", Shaping.RECORDS),
    ReadOperation("list_summaries", Shaping.SUMMARIES),
    ReadOperation("read_title", Shaping.NONE, model_tool=True),
    ReadOperation("list_events", Shaping.NONE),
    ReadOperation("read_surface", Shaping.SESSION),
    ReadOperation("read_messages", Shaping.NONE),
    ReadOperation("stream_surface", Shaping.SESSION, awaitable=False),
    ReadOperation("read_event", Shaping.SESSION, model_tool=True),
    ReadOperation("trace_event", Shaping.NONE, model_tool=True),
    ReadOperation("trace_session", Shaping.LINEAGE, model_tool=True),
    ReadOperation("filter_sessions", Shaping.FILTERED, model_tool=True),
    ReadOperation("filter_events", Shaping.NONE, model_tool=True),
    ReadOperation("search_sessions", Shaping.FILTERED, model_tool=True),
    ReadOperation("search_events", Shaping.NONE, model_tool=True),
)
"""Every read of the query service, in the order the docs list them."""


def read_operation_names(*, model_tool: bool = False) -> frozenset[str]:
    """The names of the reads (only those offered to model tools, if asked)."""
    return frozenset(
        op.name for op in READ_OPERATIONS if op.model_tool or not model_tool
    )
