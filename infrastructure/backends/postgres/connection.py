"""PostgreSQL connections outside the pool: libpq arguments, typed failures.

Apart from the factory so the key store can connect without importing the
factory, which imports the backend descriptor that opens the key store.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

import psycopg

from agentlog.domain.errors import StoreUnavailableError
from agentlog.infrastructure.store_url import CONNINFO_ENV_VAR, POOLER_ENV_VAR

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Iterator, Mapping

DEFAULT_APPLICATION_NAME = "agentlog"
DDL_LOCK_FIRST_WAIT = 0.01
DDL_LOCK_LAST_WAIT = 0.2
"""Seconds between tries of a table-creation lock, doubling up to the last."""


def transaction_pooler(env: Mapping[str, str]) -> bool:
    """Whether the store is reached through a pooler in transaction mode
    (``?pooler=transaction``): each transaction may run on another server
    session, so nothing may rely on one (docs/service.md#behind-a-pooler)."""
    return (env.get(POOLER_ENV_VAR) or "") == "transaction"


def connection_kwargs(env: Mapping[str, str]) -> dict[str, Any]:
    """psycopg keyword arguments from the library's variables and the URL's extras.

    Behind a transaction-mode pooler no statement is prepared: a prepared
    statement lives in one server session, and the next transaction may run
    in another (``prepared statement "_pg3_0" does not exist``)."""
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
    if transaction_pooler(env):
        kwargs["prepare_threshold"] = None
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


def opening_facts(
    connection: psycopg.Connection[Any], schema: str
) -> tuple[bool, frozenset[str]]:
    """In one statement: whether the server refuses this connection's writes
    (a hot standby, a read replica, or a role or database whose transactions
    are read-only), and the lowercase names of the schema's relations
    (tables, indexes, composite types) and functions."""
    row = connection.execute(
        "SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') "
        "= 'on', ARRAY(SELECT c.relname::text FROM pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE n.nspname = %s UNION ALL "
        "SELECT p.proname::text FROM pg_proc p JOIN pg_namespace n "
        "ON n.oid = p.pronamespace WHERE n.nspname = %s)",
        (schema, schema),
    ).fetchone()
    if row is None:
        return False, frozenset()
    return bool(row[0]), frozenset(str(name).lower() for name in row[1])


_CREATES = re.compile(
    r"\s*CREATE\s+(?:TYPE|(?:TABLE|(?:UNIQUE\s+)?INDEX)\s+IF\s+NOT\s+EXISTS"
    r"|OR\s+REPLACE\s+FUNCTION)\s+"
    r'((?:"[^"]+"|\w+)(?:\.(?:"[^"]+"|\w+))?)',
    re.IGNORECASE,
)


def creates_nothing(statements: Iterable[str], existing: Collection[str]) -> bool:
    """Whether a recorder's creation statements would create nothing: each
    creates a type, table, index or function by a name ``existing`` holds (a
    statement of any other kind must run)."""
    for statement in statements:
        match = _CREATES.match(statement)
        if match is None:
            return False
        if match.group(1).rsplit(".", 1)[-1].strip('"').lower() not in existing:
            return False
    return True


def schema_exists(connection: psycopg.Connection[Any], schema: str) -> bool:
    row = connection.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = %s)", (schema,)
    ).fetchone()
    return bool(row and row[0])


@contextlib.contextmanager
def ddl_lock(connection: psycopg.Connection[Any], key: int) -> Iterator[None]:
    """Hold advisory lock ``key`` in a transaction of ``connection`` (autocommit).

    A transaction's lock, not a session's: behind a transaction-mode pooler a
    session's lock stays on the server session after the client has gone. The
    lock is tried, not waited for, each try in a transaction of its own, so a
    waiting opener holds no server session of the pooler between tries: the
    holder's table creation needs one more (its pooled connections). The
    holding transaction may stay idle as long as that creation waits.
    """
    delay = DDL_LOCK_FIRST_WAIT
    while True:
        with connection.transaction():
            connection.execute("SET LOCAL idle_in_transaction_session_timeout = 0")
            row = connection.execute(
                "SELECT pg_try_advisory_xact_lock(%s)", (key,)
            ).fetchone()
            if row is not None and row[0]:
                yield
                return
        time.sleep(delay)
        delay = min(delay * 2, DDL_LOCK_LAST_WAIT)


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
