"""PostgreSQL connections outside the pool: libpq arguments, typed failures.

Apart from the factory so the key store can connect without importing the
factory, which imports the backend descriptor that opens the key store.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

import psycopg

from agentlog.domain.errors import StoreUnavailableError
from agentlog.infrastructure.store_url import CONNINFO_ENV_VAR

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

DEFAULT_APPLICATION_NAME = "agentlog"


def connection_kwargs(env: Mapping[str, str]) -> dict[str, Any]:
    """libpq keyword arguments from the library's variables and the URL's extras."""
    kwargs: dict[str, Any] = {
        "dbname": env["POSTGRES_DBNAME"],
        "host": env["POSTGRES_HOST"],
        "port": env.get("POSTGRES_PORT") or "5432",
        "user": env["POSTGRES_USER"],
        "password": env.get("POSTGRES_PASSWORD") or "",
    }
    if "PGAPPNAME" not in os.environ:  # libpq's own variable wins over our default
        kwargs["application_name"] = DEFAULT_APPLICATION_NAME
    timeout = env.get("POSTGRES_CONNECT_TIMEOUT")
    if timeout:
        kwargs["connect_timeout"] = timeout
    kwargs.update(parse_qsl(env.get(CONNINFO_ENV_VAR) or ""))
    return kwargs


def describe(kwargs: Mapping[str, Any]) -> str:
    """Where a connection goes, without its password."""
    secret = ":***" if kwargs.get("password") else ""
    return (
        f"postgresql://{kwargs['user']}{secret}@{kwargs['host']}:{kwargs['port']}/"
        f"{kwargs['dbname']}"
    )


def unavailable(
    kwargs: Mapping[str, Any], error: BaseException, *, what: str = "store"
) -> StoreUnavailableError:
    """A typed, password-free error for a connection that failed.

    ``what`` names the database's role ("store", "key store"), so a user knows
    which URL to fix.
    """
    reason = " ".join(str(error).split())
    password = str(kwargs.get("password") or "")
    if password:
        reason = reason.replace(password, "***")
    return StoreUnavailableError(
        f"cannot reach the PostgreSQL {what} {describe(kwargs)}: {reason}"
    )


@contextlib.contextmanager
def connect(env: Mapping[str, str]) -> Iterator[psycopg.Connection[Any]]:
    """One autocommit connection outside the pool; failures are typed."""
    kwargs = connection_kwargs(env)
    try:
        connection = psycopg.connect(**kwargs, autocommit=True)
    except psycopg.Error as error:
        raise unavailable(kwargs, error) from error
    with connection:
        yield connection
