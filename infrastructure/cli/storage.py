"""Opening and closing a command's store: reads never create one, stops never flush.

A read against a mistyped ``--store`` must say so rather than show an empty store,
so only the commands that create sessions (``import``, ``demo``) may create the
SQLite file, a PostgreSQL schema or its tables. A command that stops on an error or
a signal closes its store without the flush :meth:`Sessions.close` does, so nothing
is written after the stop.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, TypeAlias

from agentlog.application.live_view import LiveSessionsView
from agentlog.domain.errors import StoreNotFoundError
from agentlog.infrastructure.store import (
    open_sessions,
    open_views,
    parse_store_url,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentlog.application.configuration import ConfiguredApplication
    from agentlog.application.sessions import Sessions
    from agentlog.infrastructure.store_url import StoreConfig

    StoredCheck: TypeAlias = Callable[[Sessions], list[str]]
    """After a stop, what a write committed, as the session ids to print."""

CREATES = "(agentlog import or agentlog demo creates it)"


def open_store(url: str, *, create: bool) -> Sessions:
    """The ``Sessions`` of ``url``; without ``create`` the store must exist."""
    try:
        if not create:
            _check_postgres_store(parse_store_url(url))
        return open_sessions(url, create=create)
    except StoreNotFoundError as error:
        raise StoreNotFoundError(f"{error} {CREATES}") from error


def open_store_views(url: str) -> ConfiguredApplication:
    """The store of ``url`` for reading its views only; it must exist."""
    try:
        _check_postgres_store(parse_store_url(url))
        return open_views(url, create=False)
    except StoreNotFoundError as error:
        raise StoreNotFoundError(f"{error} {CREATES}") from error


def _check_postgres_store(config: StoreConfig) -> None:
    """A PostgreSQL store exists when its schema holds the events table."""
    if config.env.get("PERSISTENCE_MODULE") != "eventsourcing.postgres":
        return
    from agentlog.application.configuration import ConfiguredApplication
    from agentlog.infrastructure.backends.postgres.connection import connect

    name = ConfiguredApplication.name.lower()
    table = f'"{config.schema or "public"}"."{name}_events"'
    with connect(config.env) as connection:
        row = connection.execute("SELECT to_regclass(%s)", (table,)).fetchone()
    if row is None or row[0] is None:
        msg = f"no store at {config.display}: it has no agentlog tables"
        raise StoreNotFoundError(msg)


def abandon(app: ConfiguredApplication) -> None:
    """Close ``app`` without saving anything still pending in its live sessions."""
    if isinstance(app, LiveSessionsView):
        for handle in app.live_sessions():
            handle.stale = True
    # The store may be what failed; closing it must not hide the first error.
    with contextlib.suppress(Exception):
        app.close()


def stored_now(url: str, check: StoredCheck) -> list[str]:
    """What ``check`` finds in the store on a fresh connection (after a stop)."""
    app = open_store(url, create=False)
    try:
        return check(app)
    finally:
        abandon(app)
