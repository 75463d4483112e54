"""Adapters: the recorders' mapper, store URLs, views, file formats, command line.

Importing the package is cheap: each name is imported from its module the first
time it is used (:pep:`562`), so the command line imports only the adapters a
command uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentlog.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from agentlog.infrastructure.mapper import SessionMapper
    from agentlog.infrastructure.store import (
        DEFAULT_STORE_URL,
        StoreConfig,
        open_sessions,
        parse_store_url,
    )

_HOMES: dict[str, str] = {
    "SessionMapper": "agentlog.infrastructure.mapper",
    "DEFAULT_STORE_URL": "agentlog.infrastructure.store",
    "StoreConfig": "agentlog.infrastructure.store",
    "open_sessions": "agentlog.infrastructure.store",
    "parse_store_url": "agentlog.infrastructure.store",
}
"""Where each public name lives."""

__all__ = [
    "DEFAULT_STORE_URL",
    "SessionMapper",
    "StoreConfig",
    "open_sessions",
    "parse_store_url",
]


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, globals())
