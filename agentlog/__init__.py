"""agentlog: an event-sourced store for AI-agent sessions.

This module is the public API: everything a user imports comes from here, and
every name in ``__all__`` is kept stable. The subpackages (``agentlog.domain``,
``agentlog.application``, ``agentlog.infrastructure``) are the implementation;
their names may change between releases. See ``docs/README.md``.

Every error agentlog raises on purpose derives from :class:`AgentlogError`;
``str(error)`` is the documented message (``docs/errors.md``).
"""

from __future__ import annotations

from agentlog.application.handle import SessionHandle
from agentlog.application.query import SessionQuery
from agentlog.application.sessions import Sessions
from agentlog.application.titles import SessionTitles, TitleProvider, TitleRequest
from agentlog.domain.errors import (
    AgentlogError,
    CorruptSessionLogError,
    InvariantError,
    LogImportError,
    NonJsonDataError,
    PayloadError,
    PersistenceError,
    SeedError,
    SessionAlreadyExistsError,
    SessionConflictError,
    SessionError,
    SessionForkError,
    SessionNotFoundError,
    SessionQueryError,
    StaleSessionError,
    SurfaceError,
    SurfaceIntentError,
    UnsupportedSessionFormatError,
)
from agentlog.domain.title import TitleConfig, TitleError
from agentlog.infrastructure.formats.jsonl import (
    ImportResult,
    export_session,
    import_log,
)
from agentlog.infrastructure.store import (
    StoreUnavailableError,
    StoreURLError,
    open_sessions,
)

__all__ = [
    "AgentlogError",
    "CorruptSessionLogError",
    "ImportResult",
    "InvariantError",
    "LogImportError",
    "NonJsonDataError",
    "PayloadError",
    "PersistenceError",
    "SeedError",
    "SessionAlreadyExistsError",
    "SessionConflictError",
    "SessionError",
    "SessionForkError",
    "SessionHandle",
    "SessionNotFoundError",
    "SessionQuery",
    "SessionQueryError",
    "SessionTitles",
    "Sessions",
    "StaleSessionError",
    "StoreURLError",
    "StoreUnavailableError",
    "SurfaceError",
    "SurfaceIntentError",
    "TitleConfig",
    "TitleError",
    "TitleProvider",
    "TitleRequest",
    "UnsupportedSessionFormatError",
    "export_session",
    "import_log",
    "open_sessions",
]
