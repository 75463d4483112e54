"""The session domain: vocabulary, rules and the ``Session`` aggregate (no I/O).

Importing the package is cheap: each name is imported from its module the first
time it is used (:pep:`562`), so a command that needs only ``errors`` does not
pay for the payload models.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentlog.domain.errors import (
        AgentlogError,
        CorruptSessionLogError,
        InvariantError,
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
        TitleError,
        TitleEventError,
        UnsupportedSessionFormatError,
    )
    from agentlog.domain.events import EVENT_CLASSES, LogOnly, SessionEvent
    from agentlog.domain.fork import resolve_fork_boundary
    from agentlog.domain.invariants import TurnInvariants
    from agentlog.domain.json import (
        Envelope,
        Json,
        copy_json,
        dumps,
        is_json_value,
        loads,
        snapshot_json,
    )
    from agentlog.domain.messages import derive_message, derive_messages
    from agentlog.domain.pairing import is_tool_pairing_balanced
    from agentlog.domain.payloads import (
        Message,
        SessionHeader,
        SessionMeta,
        SessionSummary,
    )
    from agentlog.domain.repair import RepairTracker, interrupted_turn_closers
    from agentlog.domain.session import (
        SESSION_FORMAT_VERSION,
        Session,
        SessionCreated,
        SessionSnapshot,
        make_header,
        now_ms,
        project_session,
    )
    from agentlog.domain.surface import (
        Surface,
        SurfaceFold,
        SurfaceNode,
        check_intent,
        classify,
        fold_surface,
    )
    from agentlog.domain.title import (
        TitleConfig,
        TitleSnapshot,
        fallback_title,
        fold_session_title,
        normalize_title,
    )
    from agentlog.domain.vocabulary import (
        CORE_TYPES,
        PAYLOAD_MODELS,
        PLUGIN_TYPES,
        SURFACE_TYPES,
        VOCABULARY,
        EventType,
        check_payload,
        is_surface_eligible_type,
        is_surface_event,
        register_payload,
    )

_HOMES: dict[str, str] = {
    "AgentlogError": "agentlog.domain.errors",
    "CorruptSessionLogError": "agentlog.domain.errors",
    "InvariantError": "agentlog.domain.errors",
    "NonJsonDataError": "agentlog.domain.errors",
    "PayloadError": "agentlog.domain.errors",
    "PersistenceError": "agentlog.domain.errors",
    "SeedError": "agentlog.domain.errors",
    "SessionAlreadyExistsError": "agentlog.domain.errors",
    "SessionConflictError": "agentlog.domain.errors",
    "SessionError": "agentlog.domain.errors",
    "SessionForkError": "agentlog.domain.errors",
    "SessionNotFoundError": "agentlog.domain.errors",
    "SessionQueryError": "agentlog.domain.errors",
    "StaleSessionError": "agentlog.domain.errors",
    "SurfaceError": "agentlog.domain.errors",
    "SurfaceIntentError": "agentlog.domain.errors",
    "TitleError": "agentlog.domain.errors",
    "TitleEventError": "agentlog.domain.errors",
    "UnsupportedSessionFormatError": "agentlog.domain.errors",
    "EVENT_CLASSES": "agentlog.domain.events",
    "LogOnly": "agentlog.domain.events",
    "SessionEvent": "agentlog.domain.events",
    "resolve_fork_boundary": "agentlog.domain.fork",
    "TurnInvariants": "agentlog.domain.invariants",
    "Envelope": "agentlog.domain.json",
    "Json": "agentlog.domain.json",
    "copy_json": "agentlog.domain.json",
    "dumps": "agentlog.domain.json",
    "is_json_value": "agentlog.domain.json",
    "loads": "agentlog.domain.json",
    "snapshot_json": "agentlog.domain.json",
    "derive_message": "agentlog.domain.messages",
    "derive_messages": "agentlog.domain.messages",
    "is_tool_pairing_balanced": "agentlog.domain.pairing",
    "Message": "agentlog.domain.payloads",
    "SessionHeader": "agentlog.domain.payloads",
    "SessionMeta": "agentlog.domain.payloads",
    "SessionSummary": "agentlog.domain.payloads",
    "RepairTracker": "agentlog.domain.repair",
    "interrupted_turn_closers": "agentlog.domain.repair",
    "SESSION_FORMAT_VERSION": "agentlog.domain.session",
    "Session": "agentlog.domain.session",
    "SessionCreated": "agentlog.domain.session",
    "SessionSnapshot": "agentlog.domain.session",
    "make_header": "agentlog.domain.session",
    "now_ms": "agentlog.domain.session",
    "project_session": "agentlog.domain.session",
    "Surface": "agentlog.domain.surface",
    "SurfaceFold": "agentlog.domain.surface",
    "SurfaceNode": "agentlog.domain.surface",
    "check_intent": "agentlog.domain.surface",
    "classify": "agentlog.domain.surface",
    "fold_surface": "agentlog.domain.surface",
    "TitleConfig": "agentlog.domain.title",
    "TitleSnapshot": "agentlog.domain.title",
    "fallback_title": "agentlog.domain.title",
    "fold_session_title": "agentlog.domain.title",
    "normalize_title": "agentlog.domain.title",
    "CORE_TYPES": "agentlog.domain.vocabulary",
    "PAYLOAD_MODELS": "agentlog.domain.vocabulary",
    "PLUGIN_TYPES": "agentlog.domain.vocabulary",
    "SURFACE_TYPES": "agentlog.domain.vocabulary",
    "VOCABULARY": "agentlog.domain.vocabulary",
    "EventType": "agentlog.domain.vocabulary",
    "check_payload": "agentlog.domain.vocabulary",
    "is_surface_eligible_type": "agentlog.domain.vocabulary",
    "is_surface_event": "agentlog.domain.vocabulary",
    "register_payload": "agentlog.domain.vocabulary",
}
"""Where each public name lives."""

__all__ = [
    "CORE_TYPES",
    "EVENT_CLASSES",
    "PAYLOAD_MODELS",
    "PLUGIN_TYPES",
    "SESSION_FORMAT_VERSION",
    "SURFACE_TYPES",
    "VOCABULARY",
    "AgentlogError",
    "CorruptSessionLogError",
    "Envelope",
    "EventType",
    "InvariantError",
    "Json",
    "LogOnly",
    "Message",
    "NonJsonDataError",
    "PayloadError",
    "PersistenceError",
    "RepairTracker",
    "SeedError",
    "Session",
    "SessionAlreadyExistsError",
    "SessionConflictError",
    "SessionCreated",
    "SessionError",
    "SessionEvent",
    "SessionForkError",
    "SessionHeader",
    "SessionMeta",
    "SessionNotFoundError",
    "SessionQueryError",
    "SessionSnapshot",
    "SessionSummary",
    "StaleSessionError",
    "Surface",
    "SurfaceError",
    "SurfaceFold",
    "SurfaceIntentError",
    "SurfaceNode",
    "TitleConfig",
    "TitleError",
    "TitleEventError",
    "TitleSnapshot",
    "TurnInvariants",
    "UnsupportedSessionFormatError",
    "check_intent",
    "check_payload",
    "classify",
    "copy_json",
    "derive_message",
    "derive_messages",
    "dumps",
    "fallback_title",
    "fold_session_title",
    "fold_surface",
    "interrupted_turn_closers",
    "is_json_value",
    "is_surface_eligible_type",
    "is_surface_event",
    "is_tool_pairing_balanced",
    "loads",
    "make_header",
    "normalize_title",
    "now_ms",
    "project_session",
    "register_payload",
    "resolve_fork_boundary",
    "snapshot_json",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
