"""The store backends, one package each, and their registration.

A package holds its backend's factory, recorders, views, search view and key
store, and one descriptor (:class:`~agentlog.infrastructure.backends.backend.Backend`)
that names them. :data:`BACKENDS` is the one list of them: adding a backend is
a package plus a line here (docs/architecture.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentlog.infrastructure.backends.memory.backend import BACKEND as MEMORY
from agentlog.infrastructure.backends.postgres.backend import BACKEND as POSTGRES
from agentlog.infrastructure.backends.sqlite.backend import BACKEND as SQLITE

if TYPE_CHECKING:
    from agentlog.infrastructure.backends.backend import Backend

BACKENDS: tuple[Backend, ...] = (MEMORY, SQLITE, POSTGRES)
DEFAULT = MEMORY
"""The backend of an environment that names no ``PERSISTENCE_MODULE``."""


def backend_named(module: str | None) -> Backend | None:
    """The backend a ``PERSISTENCE_MODULE`` value names (the library's module or
    our factory's topic); ``None`` for any other value."""
    for backend in BACKENDS:
        if module and backend.names(module):
            return backend
    return None
