"""Opening a store by URL: ``open_sessions``, existence checks and ``migrate``.

``memory:`` (POPO), ``sqlite:///path.db`` and
``postgresql://user:password@host:port/db?schema=name&sslmode=require`` (parsed by
:mod:`agentlog.infrastructure.store_url`) become the library's environment
variables. See ``docs/service.md``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from agentlog.domain.errors import (
    StoreNotFoundError,
    StoreUnavailableError,
    StoreURLError,
)
from agentlog.infrastructure.store_url import (
    DEFAULT_STORE_URL,
    STORE_ENV_VAR,
    StoreConfig,
    mask_url,
    parse_store_url,
)

if TYPE_CHECKING:
    from agentlog.application.configuration import ConfiguredApplication
    from agentlog.application.query_store import StoreQuery
    from agentlog.application.sessions import Sessions


def store_url_from_environment(
    explicit: str | None = None, default: str = DEFAULT_STORE_URL
) -> str:
    """The URL given, else ``AGENTLOG_STORE``, else ``default`` (the CLI's file)."""
    return explicit or os.environ.get(STORE_ENV_VAR) or default


def check_store_exists(config: StoreConfig) -> None:
    """Refuse a store that is not there yet (for readers that must not create it)."""
    if config.sqlite_path is not None and not Path(config.sqlite_path).is_file():
        msg = f"no store at {config.display}: {config.sqlite_path} does not exist"
        raise StoreNotFoundError(msg)


def open_sessions(
    url: str | None = None,
    *,
    invariants: bool = True,
    create: bool = True,
    **env: str,
) -> Sessions:
    """A ``Sessions`` application on the store a URL names.

    Without a URL: ``AGENTLOG_STORE``, else the library's variables, else memory
    (the library never creates a file nobody named). ``create=False`` refuses a
    store that does not exist yet (:class:`StoreNotFoundError`).
    """
    from agentlog.application.sessions import Sessions

    url = url or os.environ.get(STORE_ENV_VAR)
    if url is None:
        return Sessions(env=env or None, invariants=invariants)
    config = parse_store_url(url)
    if not create:
        check_store_exists(config)
    return Sessions(env=env or None, store=url, invariants=invariants)


def open_views(url: str | None = None, *, create: bool = True) -> ConfiguredApplication:
    """The store a URL names, opened to read its views (the listing), not to write.

    Not a ``Sessions``: without the aggregate and its event classes, a process
    that only lists imports neither them nor pydantic (``agentlog ls``,
    docs/performance.md); views that are behind still catch up. Like every
    open, it first finishes an erase whose after-commit work was left pending
    (docs/erasure.md): when one is, or the store cannot say, this is the
    ``Sessions`` of :func:`open_sessions`, whose opening finishes it.
    """
    from agentlog.application.configuration import ConfiguredApplication

    url = url or os.environ.get(STORE_ENV_VAR)
    if url is not None and not create:
        check_store_exists(parse_store_url(url))
    app = ConfiguredApplication(store=url)
    if app.read_only or not _erase_pending(app):
        return app
    app.close()
    return open_sessions(url, create=create)


def open_query(
    url: str | None = None,
    *,
    create: bool = True,
    read_window_max: int = 50,
    **env: str,
) -> StoreQuery:
    """Every read of ``SessionQuery`` on the store a URL names, without the
    writing application (docs/query.md#query-only-opening).

    For a service or a replica that only reads: the listing is read straight
    from the store where its backend can (SQLite: one connection, one check
    of the views, the page), and the store is opened in full, as
    :func:`open_sessions` opens it, on the first read that needs it; either
    way the answers are ``SessionQuery(open_sessions(url))``'s. The URL is
    checked at once (``StoreURLError``; with ``create=False`` a store that
    does not exist is ``StoreNotFoundError``); a store that cannot be opened
    fails its first read. Close it, or use it as a context manager.
    """
    from agentlog.application.configuration import ConfiguredApplication
    from agentlog.application.query_store import StoreQuery
    from agentlog.infrastructure.backends import backend_named

    url = url or os.environ.get(STORE_ENV_VAR)
    if url is not None and not create:
        check_store_exists(parse_store_url(url))
    environment = ConfiguredApplication.store_environment(env or None, store=url)
    backend = backend_named(environment.get("PERSISTENCE_MODULE") or "")
    shortcut = None if backend is None else backend.listing_shortcut(environment)
    return StoreQuery(
        lambda: open_sessions(url, invariants=True, create=create, **env),
        shortcut=shortcut,
        read_window_max=read_window_max,
    )


def _erase_pending(app: ConfiguredApplication) -> bool:
    """Whether an erase left work pending (or the store cannot tell)."""
    pending = getattr(app.recorder, "erase_pending", None)
    if pending is None:
        return False
    try:
        return bool(pending(1))
    except Exception:  # Sessions' own resume logs what it was
        return True


def migrate(url: str) -> list[str]:
    """Create the store's tables and views (for ``create_tables=False`` services).

    Returns the names of what now exists, for the command line to print.
    """
    from agentlog.application.catch_up import views_of

    app = open_sessions(url, CREATE_TABLE="y")
    try:
        views = views_of(app)
        return [
            "events",
            "snapshots",
            *(projection.name for projection in views.projections),
        ]
    finally:
        app.close()


def rebuild_views(url: str) -> int:
    """Drop every view (listing, titles, lineage, the search index) and fold the
    whole log into them again; returns the notifications read.

    Views are projections of the log, so this loses nothing; readers see partial
    views until it ends (docs/persistence.md#rebuilding-the-views).
    """
    from agentlog.application.catch_up import views_of
    from agentlog.application.search import search_enabled
    from agentlog.application.search_index import search_index_of

    app = open_sessions(url, CREATE_TABLE="y")
    try:
        read = views_of(app).rebuild()
        index = search_index_of(app) if search_enabled() else None
        if index is not None:
            index.rebuild()
        return read
    finally:
        app.close()


__all__ = [
    "DEFAULT_STORE_URL",
    "STORE_ENV_VAR",
    "StoreConfig",
    "StoreNotFoundError",
    "StoreURLError",
    "StoreUnavailableError",
    "check_store_exists",
    "mask_url",
    "migrate",
    "open_query",
    "open_sessions",
    "open_views",
    "parse_store_url",
    "rebuild_views",
    "store_url_from_environment",
]
