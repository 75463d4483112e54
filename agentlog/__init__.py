"""agentlog: an event-sourced store for AI-agent sessions.

This module is the public API: everything a user imports comes from here, and
every name in ``__all__`` is kept stable. The subpackages (``agentlog.domain``,
``agentlog.application``, ``agentlog.infrastructure``) are the implementation;
their names may change between releases. See ``docs/README.md``.

Every error agentlog raises on purpose derives from :class:`AgentlogError`;
``str(error)`` is the documented message (``docs/errors.md``).
"""

from __future__ import annotations

from agentlog.application.async_sessions import AsyncSessionQuery, AsyncSessions
from agentlog.application.handle import SessionHandle
from agentlog.application.model_tools import (
    ModelTools,
    ToolResult,
    anthropic_tools,
    openai_tools,
)
from agentlog.application.query import SessionQuery
from agentlog.application.scope import Scope, ScopedSessionQuery
from agentlog.application.search_models import EventFilter, SessionFilter
from agentlog.application.sessions import Sessions
from agentlog.application.titles import SessionTitles, TitleProvider, TitleRequest
from agentlog.application.transfer import ImportResult
from agentlog.domain.errors import (
    AgentlogError,
    CorruptSessionLogError,
    EncryptionError,
    InvariantError,
    LineageCycleError,
    LogImportError,
    ModelToolError,
    NonJsonDataError,
    PayloadError,
    PersistenceError,
    SeedError,
    SessionAlreadyExistsError,
    SessionBusyError,
    SessionClosedError,
    SessionConflictError,
    SessionErasedError,
    SessionError,
    SessionForkError,
    SessionKeyForgottenError,
    SessionNotFoundError,
    SessionQueryError,
    StaleSessionError,
    StoreNotFoundError,
    StoreUnavailableError,
    StoreURLError,
    SurfaceError,
    SurfaceIntentError,
    TitleError,
    TitleEventError,
    UnsupportedSessionFormatError,
)
from agentlog.domain.title import TitleConfig
from agentlog.infrastructure.formats.jsonl import export_session, import_log
from agentlog.infrastructure.store import mask_url, open_sessions

__all__ = [
    "AgentlogError",
    "AsyncSessionQuery",
    "AsyncSessions",
    "CorruptSessionLogError",
    "EncryptionError",
    "EventFilter",
    "ImportResult",
    "InvariantError",
    "LineageCycleError",
    "LogImportError",
    "ModelToolError",
    "ModelTools",
    "NonJsonDataError",
    "PayloadError",
    "PersistenceError",
    "Scope",
    "ScopedSessionQuery",
    "SeedError",
    "SessionAlreadyExistsError",
    "SessionBusyError",
    "SessionClosedError",
    "SessionConflictError",
    "SessionErasedError",
    "SessionError",
    "SessionFilter",
    "SessionForkError",
    "SessionHandle",
    "SessionKeyForgottenError",
    "SessionNotFoundError",
    "SessionQuery",
    "SessionQueryError",
    "SessionTitles",
    "Sessions",
    "StaleSessionError",
    "StoreNotFoundError",
    "StoreURLError",
    "StoreUnavailableError",
    "SurfaceError",
    "SurfaceIntentError",
    "TitleConfig",
    "TitleError",
    "TitleEventError",
    "TitleProvider",
    "TitleRequest",
    "ToolResult",
    "UnsupportedSessionFormatError",
    "anthropic_tools",
    "export_session",
    "import_log",
    "mask_url",
    "open_sessions",
    "openai_tools",
]
