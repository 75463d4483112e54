"""Adapters: the recorders' mapper, store URLs, views, file formats, command line."""

from __future__ import annotations

from agentlog.infrastructure.mapper import SessionMapper
from agentlog.infrastructure.store import (
    DEFAULT_STORE_URL,
    StoreConfig,
    open_sessions,
    parse_store_url,
)

__all__ = [
    "DEFAULT_STORE_URL",
    "SessionMapper",
    "StoreConfig",
    "open_sessions",
    "parse_store_url",
]
