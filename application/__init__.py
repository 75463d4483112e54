"""Use cases over the session domain: the ``Sessions`` application and its reads."""

from __future__ import annotations

from agentlog.application.async_sessions import AsyncSessionQuery, AsyncSessions
from agentlog.application.catch_up import SessionViews, views_of
from agentlog.application.handle import SessionHandle
from agentlog.application.query import (
    PersistenceReader,
    SessionEventRecord,
    SessionEventTrace,
    SessionEventWindow,
    SessionLineageNode,
    SessionLineageTrace,
    SessionQuery,
    SessionRecord,
    SessionSummary,
    SessionSummaryPage,
    SessionSurfaceSnapshot,
    SessionTitleSnapshot,
    StoreReader,
)
from agentlog.application.scope import Scope, ScopedSessionQuery
from agentlog.application.sessions import Sessions
from agentlog.application.titles import (
    LlmTitleHelper,
    SessionTitles,
    TitleProvider,
    TitleRequest,
)

__all__ = [
    "AsyncSessionQuery",
    "AsyncSessions",
    "LlmTitleHelper",
    "PersistenceReader",
    "Scope",
    "ScopedSessionQuery",
    "SessionEventRecord",
    "SessionEventTrace",
    "SessionEventWindow",
    "SessionHandle",
    "SessionLineageNode",
    "SessionLineageTrace",
    "SessionQuery",
    "SessionRecord",
    "SessionSummary",
    "SessionSummaryPage",
    "SessionSurfaceSnapshot",
    "SessionTitleSnapshot",
    "SessionTitles",
    "SessionViews",
    "Sessions",
    "StoreReader",
    "TitleProvider",
    "TitleRequest",
    "views_of",
]
