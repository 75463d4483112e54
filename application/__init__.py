"""Use cases over the session domain: the ``Sessions`` application and its reads.

Importing the package is cheap: each name is imported from its module the first
time it is used (:pep:`562`), so ``agentlog ls`` loads the listing's reads, not
the asynchronous façade, the search planner or the view catch-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentlog.lazy_exports import lazy_exports

if TYPE_CHECKING:
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

_HOMES: dict[str, str] = {
    "AsyncSessionQuery": "agentlog.application.async_sessions",
    "AsyncSessions": "agentlog.application.async_sessions",
    "LlmTitleHelper": "agentlog.application.titles",
    "PersistenceReader": "agentlog.application.query",
    "Scope": "agentlog.application.scope",
    "ScopedSessionQuery": "agentlog.application.scope",
    "SessionEventRecord": "agentlog.application.query",
    "SessionEventTrace": "agentlog.application.query",
    "SessionEventWindow": "agentlog.application.query",
    "SessionHandle": "agentlog.application.handle",
    "SessionLineageNode": "agentlog.application.query",
    "SessionLineageTrace": "agentlog.application.query",
    "SessionQuery": "agentlog.application.query",
    "SessionRecord": "agentlog.application.query",
    "SessionSummary": "agentlog.application.query",
    "SessionSummaryPage": "agentlog.application.query",
    "SessionSurfaceSnapshot": "agentlog.application.query",
    "SessionTitleSnapshot": "agentlog.application.query",
    "SessionTitles": "agentlog.application.titles",
    "SessionViews": "agentlog.application.catch_up",
    "Sessions": "agentlog.application.sessions",
    "StoreReader": "agentlog.application.query",
    "TitleProvider": "agentlog.application.titles",
    "TitleRequest": "agentlog.application.titles",
    "views_of": "agentlog.application.catch_up",
}
"""Where each public name lives."""

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


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, globals())
