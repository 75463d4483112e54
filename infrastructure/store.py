"""Store URLs: one string that picks the recorder and its settings.

``memory:`` (POPO), ``sqlite:///path.db`` (the embedded default) and
``postgresql://user:password@host:port/db?schema=name`` become the library's
environment variables; the application never sees the URL, only the environment.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, unquote, urlsplit

from agentlog.domain.errors import AgentlogError

if TYPE_CHECKING:
    from agentlog.application.sessions import Sessions

DEFAULT_STORE_URL = "sqlite:///agentlog.db"
STORE_ENV_VAR = "AGENTLOG_STORE"


class StoreURLError(AgentlogError, ValueError):
    """A store URL this build cannot use."""


class StoreUnavailableError(AgentlogError):
    """The store's database could not be reached or opened."""


@dataclass(frozen=True)
class StoreConfig:
    """A parsed store URL: its environment for ``Sessions`` and a safe display form."""

    url: str
    env: dict[str, str]
    display: str
    schema: str | None = None


def parse_store_url(url: str) -> StoreConfig:
    """Turn a store URL into the ``eventsourcing`` environment that selects it."""
    url = url.strip()
    if url in {"memory:", "memory://", "popo:"}:
        return StoreConfig(url, {"PERSISTENCE_MODULE": "eventsourcing.popo"}, url)
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        path = unquote(parts.path)
        if parts.netloc:
            msg = (
                f"invalid store URL {url!r}: use sqlite:///relative.db or "
                "sqlite:////absolute/path.db"
            )
            raise StoreURLError(msg)
        path = path[1:] if path.startswith("/") else path
        if not path:
            msg = f"invalid store URL {url!r}: the SQLite file path is missing"
            raise StoreURLError(msg)
        env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": path}
        return StoreConfig(url, env, url)
    if parts.scheme in {"postgresql", "postgres"}:
        query = parse_qs(parts.query)
        dbname = unquote(parts.path.lstrip("/"))
        if not dbname:
            msg = f"invalid store URL {url!r}: the database name is missing"
            raise StoreURLError(msg)
        schema = query.get("schema", [""])[0] or None
        try:
            port = parts.port
        except ValueError as error:
            msg = f"invalid store URL {url!r}: {error}"
            raise StoreURLError(msg) from error
        env = {
            "PERSISTENCE_MODULE": "eventsourcing.postgres",
            "POSTGRES_DBNAME": dbname,
            "POSTGRES_HOST": parts.hostname or "127.0.0.1",
            "POSTGRES_PORT": str(port or 5432),
            "POSTGRES_USER": unquote(parts.username or "postgres"),
            "POSTGRES_PASSWORD": unquote(parts.password or ""),
            "POSTGRES_CONNECT_TIMEOUT": query.get("connect_timeout", ["5"])[0],
        }
        if schema:
            env["POSTGRES_SCHEMA"] = schema
        display = url.replace(f":{parts.password}@", ":***@") if parts.password else url
        return StoreConfig(url, env, display, schema)
    msg = (
        f"invalid store URL {url!r}: expected memory:, sqlite:///path.db or "
        "postgresql://user:password@host:port/db?schema=name"
    )
    raise StoreURLError(msg)


def store_url_from_environment(explicit: str | None = None) -> str:
    """The URL given, else ``AGENTLOG_STORE``, else the embedded SQLite default."""
    return explicit or os.environ.get(STORE_ENV_VAR) or DEFAULT_STORE_URL


def ensure_postgres_schema(config: StoreConfig) -> None:
    """Create the URL's schema if missing (the library expects it to exist)."""
    if config.schema is None:
        return
    import psycopg
    from psycopg import sql

    env = config.env
    try:
        with psycopg.connect(
            dbname=env["POSTGRES_DBNAME"],
            host=env["POSTGRES_HOST"],
            port=int(env["POSTGRES_PORT"]),
            user=env["POSTGRES_USER"],
            password=env["POSTGRES_PASSWORD"],
            connect_timeout=int(env["POSTGRES_CONNECT_TIMEOUT"]),
            autocommit=True,
        ) as connection:
            connection.execute(
                sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                    sql.Identifier(config.schema)
                )
            )
    except psycopg.Error as error:
        msg = f"cannot reach the PostgreSQL store {config.display}: {error}".strip()
        raise StoreUnavailableError(msg) from error


def open_sessions(
    url: str | None = None, *, invariants: bool = True, **env: str
) -> Sessions:
    """A ``Sessions`` application on the store a URL names."""
    from agentlog.application.sessions import Sessions

    config = parse_store_url(store_url_from_environment(url))
    ensure_postgres_schema(config)
    try:
        return Sessions(env={**config.env, **env}, invariants=invariants)
    except Exception as error:
        if isinstance(error, AgentlogError):
            raise
        msg = f"cannot open the store {config.display}: {error}".strip()
        raise StoreUnavailableError(msg) from error
