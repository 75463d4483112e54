"""The library's "cannot reach the store" errors as agentlog's own.

Its own module (not ``sessions``) so the views and the search index, which
``sessions`` imports, can translate the errors of opening their tables too.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from eventsourcing.persistence import (
    ConnectionPoolClosedError,
    InterfaceError,
    OperationalError,
    ProgrammingError,
)

from agentlog.domain.errors import (
    StoreClosedError,
    StoreNotFoundError,
    StoreReadOnlyError,
    StoreUnavailableError,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

UNAVAILABLE = (OperationalError, InterfaceError)
"""The library's errors that mean "the store could not be reached"."""

MISSING_SQLSTATES = frozenset({"42P01", "3F000"})
"""PostgreSQL's undefined_table and invalid_schema_name."""


@contextlib.contextmanager
def store_errors() -> Iterator[None]:
    """Turn the library's "cannot reach the store" errors into ours."""
    try:
        yield
    except ConnectionPoolClosedError as error:
        raise StoreClosedError from error
    except UNAVAILABLE as error:
        if type(error.__cause__).__name__ == "PoolClosed":  # PostgreSQL's pool
            raise StoreClosedError from error
        if is_read_only(error):
            msg = "the store is read-only: writes are refused"
            raise StoreReadOnlyError(msg) from error
        raise StoreUnavailableError(unavailable_message(error)) from error
    except ProgrammingError as error:
        # PostgreSQL's undefined_table / invalid_schema_name: a store opened with
        # create_tables=False before anyone created it.
        if getattr(error.__cause__, "sqlstate", None) not in MISSING_SQLSTATES:
            raise
        msg = (
            f"{unavailable_message(error)}; create the tables with "
            "`agentlog migrate URL` (or open it once with create_tables=True)"
        )
        raise StoreNotFoundError(msg) from error


def unavailable_message(error: BaseException) -> str:
    """One line naming the store's failure (libpq's messages span lines)."""
    return "the store is unavailable: " + " ".join(str(error).split())


SQLITE_FULL = 13
"""SQLite's result code for "database or disk is full"."""
DISK_FULL_SQLSTATES = frozenset({"53100"})
READ_ONLY_SQLSTATE = "25006"
"""read_only_sql_transaction: a write on a standby or in a read-only transaction."""
"""PostgreSQL's disk_full."""


SQLITE_READONLY = 8
"""SQLite's primary result code for "attempt to write a readonly database"."""


def is_disk_full(error: BaseException) -> bool:
    """Whether the store refused a write because its disk (or quota) is full.

    Told by the drivers' own codes anywhere in the cause chain, so this module
    needs neither driver.
    """
    return any(
        getattr(seen, "sqlite_errorcode", None) == SQLITE_FULL
        or getattr(seen, "sqlstate", None) in DISK_FULL_SQLSTATES
        for seen in _causes(error)
    )


def is_read_only(error: BaseException) -> bool:
    """Whether the store refused a write because it was opened read-only."""
    return any(
        isinstance(seen, StoreReadOnlyError)
        or (getattr(seen, "sqlite_errorcode", -1) & 0xFF) == SQLITE_READONLY
        or getattr(seen, "sqlstate", None) == READ_ONLY_SQLSTATE
        for seen in _causes(error)
    )


def is_unwritable(error: BaseException) -> bool:
    """A full disk or a read-only store: reads go on from what is stored."""
    return is_disk_full(error) or is_read_only(error)


def _causes(error: BaseException) -> Iterator[BaseException]:
    seen: BaseException | None = error
    while seen is not None:
        yield seen
        seen = seen.__cause__ or seen.__context__
