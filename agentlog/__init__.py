"""agentlog: an event-sourced store for AI-agent sessions.

This module is the public API: everything a user imports comes from here, and
every name in ``__all__`` is kept stable. The subpackages (``agentlog.domain``,
``agentlog.application``, ``agentlog.infrastructure``) are the implementation;
their names may change between releases. See ``docs/README.md``.

Every error agentlog raises on purpose derives from :class:`AgentlogError`;
``str(error)`` is the documented message (``docs/errors.md``).

Importing ``agentlog`` itself is cheap: each name is imported the first time it is
used (:pep:`562`), so the ``agentlog`` console script (:mod:`agentlog.__main__`)
can catch SIGINT and SIGTERM before the heavy imports start.
"""

from __future__ import annotations

from agentlog.lazy_exports import lazy_exports


def _check_layout() -> None:
    """Refuse a checkout whose layer symlinks are plain files.

    ``agentlog/domain`` and its two siblings are symlinks to the top-level
    folders. A checkout without symlink support has small text files there;
    importing on would find no ``agentlog.domain`` here and could silently
    import another installed copy instead
    (docs/backends.md#layout-the-three-folders-and-the-agentlog-package).
    """
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    for layer in ("domain", "application", "infrastructure"):
        if not os.path.isdir(os.path.join(here, layer)):
            msg = (
                f"agentlog at {here} is incomplete: agentlog/{layer} is not a "
                "folder (a checkout without symlinks?); clone with "
                "git -c core.symlinks=true, or install a built wheel"
            )
            raise ImportError(msg)


_check_layout()
del _check_layout

TYPE_CHECKING = False  # not typing's: importing typing alone takes milliseconds
if TYPE_CHECKING:
    from agentlog.application.agent_turns import Step, Turn
    from agentlog.application.async_agent_turns import AsyncStep, AsyncTurn
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
        EventNotFoundError,
        InvariantError,
        LineageCycleError,
        LineTooLongError,
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
        StoreClosedError,
        StoreNotFoundError,
        StoreReadOnlyError,
        StoreUnavailableError,
        StoreURLError,
        SurfaceError,
        SurfaceIntentError,
        TitleError,
        TitleEventError,
        UnknownEventTypeError,
        UnsupportedSessionFormatError,
    )
    from agentlog.domain.step_output import ToolCall
    from agentlog.domain.title import TitleConfig
    from agentlog.infrastructure.formats.jsonl import export_session, import_log
    from agentlog.infrastructure.store import mask_url, open_query, open_sessions

_EXPORTS: dict[str, str] = {
    "AgentlogError": "agentlog.domain.errors",
    "AsyncSessionQuery": "agentlog.application.async_sessions",
    "AsyncSessions": "agentlog.application.async_sessions",
    "AsyncStep": "agentlog.application.async_agent_turns",
    "AsyncTurn": "agentlog.application.async_agent_turns",
    "CorruptSessionLogError": "agentlog.domain.errors",
    "EncryptionError": "agentlog.domain.errors",
    "EventNotFoundError": "agentlog.domain.errors",
    "EventFilter": "agentlog.application.search_models",
    "ImportResult": "agentlog.application.transfer",
    "InvariantError": "agentlog.domain.errors",
    "LineageCycleError": "agentlog.domain.errors",
    "LineTooLongError": "agentlog.domain.errors",
    "LogImportError": "agentlog.domain.errors",
    "ModelToolError": "agentlog.domain.errors",
    "ModelTools": "agentlog.application.model_tools",
    "NonJsonDataError": "agentlog.domain.errors",
    "PayloadError": "agentlog.domain.errors",
    "PersistenceError": "agentlog.domain.errors",
    "Scope": "agentlog.application.scope",
    "ScopedSessionQuery": "agentlog.application.scope",
    "SeedError": "agentlog.domain.errors",
    "SessionAlreadyExistsError": "agentlog.domain.errors",
    "SessionBusyError": "agentlog.domain.errors",
    "SessionClosedError": "agentlog.domain.errors",
    "SessionConflictError": "agentlog.domain.errors",
    "SessionErasedError": "agentlog.domain.errors",
    "SessionError": "agentlog.domain.errors",
    "SessionFilter": "agentlog.application.search_models",
    "SessionForkError": "agentlog.domain.errors",
    "SessionHandle": "agentlog.application.handle",
    "SessionKeyForgottenError": "agentlog.domain.errors",
    "SessionNotFoundError": "agentlog.domain.errors",
    "SessionQuery": "agentlog.application.query",
    "SessionQueryError": "agentlog.domain.errors",
    "SessionTitles": "agentlog.application.titles",
    "Sessions": "agentlog.application.sessions",
    "StaleSessionError": "agentlog.domain.errors",
    "Step": "agentlog.application.agent_turns",
    "StoreClosedError": "agentlog.domain.errors",
    "StoreNotFoundError": "agentlog.domain.errors",
    "StoreReadOnlyError": "agentlog.domain.errors",
    "StoreURLError": "agentlog.domain.errors",
    "StoreUnavailableError": "agentlog.domain.errors",
    "SurfaceError": "agentlog.domain.errors",
    "SurfaceIntentError": "agentlog.domain.errors",
    "TitleConfig": "agentlog.domain.title",
    "TitleError": "agentlog.domain.errors",
    "TitleEventError": "agentlog.domain.errors",
    "TitleProvider": "agentlog.application.titles",
    "TitleRequest": "agentlog.application.titles",
    "ToolCall": "agentlog.domain.step_output",
    "ToolResult": "agentlog.application.model_tools",
    "Turn": "agentlog.application.agent_turns",
    "UnknownEventTypeError": "agentlog.domain.errors",
    "UnsupportedSessionFormatError": "agentlog.domain.errors",
    "anthropic_tools": "agentlog.application.model_tools",
    "export_session": "agentlog.infrastructure.formats.jsonl",
    "import_log": "agentlog.infrastructure.formats.jsonl",
    "mask_url": "agentlog.infrastructure.store",
    "open_query": "agentlog.infrastructure.store",
    "open_sessions": "agentlog.infrastructure.store",
    "openai_tools": "agentlog.application.model_tools",
}
"""Each public name and the module it comes from (the imports above, for checkers)."""

__all__ = [
    "AgentlogError",
    "AsyncSessionQuery",
    "AsyncSessions",
    "AsyncStep",
    "AsyncTurn",
    "CorruptSessionLogError",
    "EncryptionError",
    "EventFilter",
    "EventNotFoundError",
    "ImportResult",
    "InvariantError",
    "LineTooLongError",
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
    "Step",
    "StoreClosedError",
    "StoreNotFoundError",
    "StoreReadOnlyError",
    "StoreURLError",
    "StoreUnavailableError",
    "SurfaceError",
    "SurfaceIntentError",
    "TitleConfig",
    "TitleError",
    "TitleEventError",
    "TitleProvider",
    "TitleRequest",
    "ToolCall",
    "ToolResult",
    "Turn",
    "UnknownEventTypeError",
    "UnsupportedSessionFormatError",
    "anthropic_tools",
    "export_session",
    "import_log",
    "mask_url",
    "open_query",
    "open_sessions",
    "openai_tools",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
