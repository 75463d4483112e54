"""Use cases over the session domain: the ``Sessions`` application and its reads."""

from __future__ import annotations

from application.catch_up import SessionViews, views_of
from application.handle import SessionHandle
from application.query import (
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
from application.sessions import Sessions
from application.titles import (
    LlmTitleHelper,
    SessionTitles,
    TitleProvider,
    TitleRequest,
)

__all__ = [
    "LlmTitleHelper",
    "PersistenceReader",
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
