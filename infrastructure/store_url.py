"""Store URLs: parsing, validation and masking (no application imports).

``memory:`` (POPO), ``sqlite:///path.db`` (``?mode=ro``: read-only) and
``postgresql://user:password@host:port/db?schema=name&sslmode=require`` become the
library's environment variables; the application never sees the URL, only the
environment. Every parameter of a PostgreSQL URL is either a libpq connection
parameter (passed to every connection), one of agentlog's pool settings,
``pooler=transaction``, or refused with one line: nothing is dropped. See
``docs/service.md``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from agentlog.domain.errors import StoreURLError

if TYPE_CHECKING:
    from collections.abc import Mapping

DEFAULT_STORE_URL = "sqlite:///agentlog.db"
"""The command line's default; the library itself never picks a file."""
STORE_ENV_VAR = "AGENTLOG_STORE"
READ_ONLY_ENV_VAR = "AGENTLOG_READ_ONLY"
"""Set by ``?mode=ro`` (SQLite or PostgreSQL): open the store read-only
(docs/configuration.md#read-only-stores)."""
CONNINFO_ENV_VAR = "AGENTLOG_POSTGRES_CONNINFO"
"""libpq parameters from the URL, url-encoded, for the PostgreSQL factory."""
POOLER_ENV_VAR = "AGENTLOG_POSTGRES_POOLER"
"""``transaction``: the URL names a pooler in transaction mode (``?pooler=``)."""
POOLER_MODES = frozenset({"transaction"})

MEMORY_URLS = frozenset({"memory:", "memory://", "popo:"})
SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")

# agentlog's own URL parameters: name -> (library variable, value kind).
POOL_PARAMETERS: Mapping[str, tuple[str, str]] = {
    "pool_size": ("POSTGRES_POOL_SIZE", "int"),
    "max_overflow": ("POSTGRES_MAX_OVERFLOW", "int"),
    "max_waiting": ("POSTGRES_MAX_WAITING", "int"),
    "conn_max_age": ("POSTGRES_CONN_MAX_AGE", "float"),
    "pre_ping": ("POSTGRES_PRE_PING", "bool"),
    "lock_timeout": ("POSTGRES_LOCK_TIMEOUT", "int"),
    "idle_in_transaction_session_timeout": (
        "POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT",
        "int",
    ),
}
SSL_MODES = frozenset(
    {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}
)
DEFAULT_CONNECT_TIMEOUT = "5"


@dataclass(frozen=True)
class StoreConfig:
    """A parsed store URL: its environment for ``Sessions`` and a safe display form."""

    url: str
    env: dict[str, str]
    display: str
    schema: str | None = None
    conninfo: dict[str, str] = field(default_factory=dict)
    sqlite_path: str | None = None


def mask_url(url: str) -> str:
    """The URL with any password replaced by ``***`` (for messages and logs): the
    user info's, and every parameter whose name holds ``password``
    (``?password=``, ``sslpassword=``)."""
    masked = re.sub(r"(//[^/@:]*:)[^@/]*@", r"\1***@", url)
    return re.sub(
        r"([?&][^=&#]*password[^=&#]*=)[^&#]*", r"\1***", masked, flags=re.IGNORECASE
    )


def _refuse(url: str, reason: str) -> StoreURLError:
    return StoreURLError(f"invalid store URL {mask_url(url)!r}: {reason}")


def parse_store_url(url: str) -> StoreConfig:
    """Turn a store URL into the ``eventsourcing`` environment that selects it."""
    if not isinstance(url, str):
        msg = f"a store URL must be a string, not {type(url).__name__}"
        raise StoreURLError(msg)
    url = url.strip()
    if url in MEMORY_URLS:
        return StoreConfig(url, {"PERSISTENCE_MODULE": "eventsourcing.popo"}, url)
    try:
        parts = urlsplit(url)
    except ValueError as error:
        raise _refuse(url, str(error)) from None
    if parts.scheme == "sqlite":
        return _sqlite_config(url, parts.netloc, parts.path, parts.query)
    if parts.scheme in {"postgresql", "postgres"}:
        return _postgres_config(url)
    raise _refuse(
        url,
        "expected memory:, sqlite:///path.db or "
        "postgresql://user:password@host:port/db?schema=name",
    )


def _sqlite_config(url: str, netloc: str, raw_path: str, query: str) -> StoreConfig:
    if netloc:
        raise _refuse(url, "use sqlite:///relative.db or sqlite:////absolute/path.db")
    read_only = False
    if query:
        if query != "mode=ro":
            msg = f"the one SQLite URL parameter is mode=ro (got {query!r})"
            raise _refuse(url, msg)
        read_only = True
    path = unquote(raw_path)
    path = path[1:] if path.startswith("/") else path
    if not path:
        raise _refuse(url, "the SQLite file path is missing")
    if "\x00" in path:
        raise _refuse(url, "the SQLite file path contains a NUL character")
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": path}
    if read_only:
        env[READ_ONLY_ENV_VAR] = "y"
    return StoreConfig(url, env, url, sqlite_path=path)


def _postgres_config(url: str) -> StoreConfig:
    parts = urlsplit(url)
    dbname = unquote(parts.path.lstrip("/"))
    if not dbname:
        raise _refuse(url, "the database name is missing")
    try:
        port = parts.port
    except ValueError as error:
        raise _refuse(url, str(error)) from None
    try:
        pairs = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        pairs = [] if not parts.query else [("", parts.query)]
    env = {
        "PERSISTENCE_MODULE": "eventsourcing.postgres",
        "POSTGRES_DBNAME": dbname,
        "POSTGRES_HOST": unquote(parts.hostname or "127.0.0.1"),
        "POSTGRES_PORT": str(port or 5432),
        "POSTGRES_USER": unquote(parts.username or "postgres"),
        "POSTGRES_PASSWORD": unquote(parts.password or ""),
        "POSTGRES_CONNECT_TIMEOUT": DEFAULT_CONNECT_TIMEOUT,
    }
    schema: str | None = None
    conninfo: dict[str, str] = {}
    seen: set[str] = set()
    keywords = libpq_keywords()
    for name, value in pairs:
        if name in seen:
            raise _refuse(url, f"parameter {name!r} is given twice")
        seen.add(name)
        if name == "schema":
            schema = _schema(url, value)
            env["POSTGRES_SCHEMA"] = schema
        elif name == "pooler":
            env[POOLER_ENV_VAR] = _pooler(url, value)
        elif name == "mode":
            if value != "ro":
                raise _refuse(url, f"mode={value!r}: the one mode is ro (read-only)")
            env[READ_ONLY_ENV_VAR] = "y"
        elif name in POOL_PARAMETERS:
            variable, kind = POOL_PARAMETERS[name]
            env[variable] = _checked(url, name, value, kind)
        elif name in keywords and name not in LIBPQ_FROM_URL_PARTS:
            conninfo[name] = _libpq_value(url, name, value)
            if name == "connect_timeout":
                env["POSTGRES_CONNECT_TIMEOUT"] = conninfo[name]
        else:
            raise _refuse(
                url,
                f"unknown parameter {name!r}; expected schema, pooler, mode, a pool "
                f"setting ({', '.join(POOL_PARAMETERS)}) or a libpq connection "
                "parameter (sslmode, sslrootcert, application_name, options, "
                "connect_timeout…)",
            )
    if POOLER_ENV_VAR in env and "idle_in_transaction_session_timeout" in seen:
        raise _refuse(
            url,
            "idle_in_transaction_session_timeout is a per-connection setting, which "
            "a transaction-mode pooler shares between clients; set it on the server "
            "(ALTER ROLE … SET) or in the pooler (PgBouncer: idle_transaction_timeout)",
        )
    if conninfo:
        env[CONNINFO_ENV_VAR] = urlencode(conninfo)
    return StoreConfig(url, env, mask_url(url), schema, conninfo)


LIBPQ_FROM_URL_PARTS = frozenset(
    {"host", "hostaddr", "port", "dbname", "user", "password"}
)
"""Set by the URL's own parts; as parameters they would be ambiguous."""


def libpq_keywords() -> frozenset[str]:
    """Every connection parameter this libpq knows (``PQconndefaults``)."""
    from psycopg import pq

    return frozenset(option.keyword.decode() for option in pq.Conninfo.get_defaults())


def _pooler(url: str, value: str) -> str:
    if value not in POOLER_MODES:
        raise _refuse(
            url,
            f"pooler={value!r} must be 'transaction' (a pooler in session mode "
            "needs no setting)",
        )
    return value


def _schema(url: str, value: str) -> str:
    if value.startswith("pg_") or value == "information_schema":
        raise _refuse(
            url,
            f"schema {value!r} is reserved by PostgreSQL (pg_* and "
            "information_schema hold the system catalogs); name another",
        )
    if not SCHEMA_NAME.fullmatch(value):
        raise _refuse(
            url,
            f"schema {value!r} is not a lowercase identifier (letters a-z, digits, "
            "underscore; at most 63): the library reads its types back unquoted, "
            "so mixed case cannot work",
        )
    return value


BOOLEANS = frozenset(
    {"y", "yes", "t", "true", "on", "1", "n", "no", "f", "false", "off", "0"}
)


def _valid(value: str, kind: str) -> bool:
    try:
        if kind == "int":
            return int(value) >= 0
        if kind == "float":
            return float(value) >= 0
    except ValueError:
        return False
    return value.lower() in BOOLEANS


def _checked(url: str, name: str, value: str, kind: str) -> str:
    if not _valid(value, kind):
        expected = {"int": "a non-negative integer", "float": "a non-negative number"}
        raise _refuse(
            url, f"{name}={value!r} must be {expected.get(kind, 'yes or no')}"
        )
    return value


def _libpq_value(url: str, name: str, value: str) -> str:
    if "\x00" in value:
        raise _refuse(url, f"{name} contains a NUL character")
    if name == "connect_timeout":
        return _checked(url, name, value, "int")
    if name == "sslmode" and value not in SSL_MODES:
        raise _refuse(
            url, f"sslmode={value!r} must be one of {', '.join(sorted(SSL_MODES))}"
        )
    return value
