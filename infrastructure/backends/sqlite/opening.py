"""Opening SQLite files: while other processes open the same fresh file, and
read-only.

The library switches a new file to WAL (``PRAGMA journal_mode=WAL``) on its first
connection, and SQLite does not wait on that statement's lock: with several
processes or threads opening one fresh file at once, the others failed with
"database is locked" (about 0.4% of 8 simultaneous opens). Retried with short
waits while the file is locked, every opener succeeds.
"""

from __future__ import annotations

import os
import sqlite3
import time
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import quote

from agentlog.domain.errors import StoreUnavailableError

if TYPE_CHECKING:
    from collections.abc import Callable

C = TypeVar("C")

LOCKED_ATTEMPTS = 50
LOCKED_WAIT = 0.01


def retrying_locked(create: Callable[[], C]) -> C:
    """``create()``, retried while SQLite says the database is locked."""
    for attempt in range(LOCKED_ATTEMPTS):
        try:
            return create()
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or attempt == LOCKED_ATTEMPTS - 1:
                raise
            time.sleep(LOCKED_WAIT * (1 + attempt % 5))
    raise AssertionError("unreachable")  # pragma: no cover


def is_read_only(path: str, requested: bool) -> bool:
    """Whether to open ``path`` read-only: asked for (``?mode=ro``), or a file
    this process cannot write (a read-only mount, a backup's permissions), whose
    folder must also be writable for SQLite's WAL index."""
    if requested:
        return True
    if path == ":memory:" or path.startswith("file:") or not os.path.isfile(path):
        return False
    folder = os.path.dirname(os.path.abspath(path))
    return not (os.access(path, os.W_OK) and os.access(folder, os.W_OK))


def read_only_uri(path: str) -> str:
    """The URI that opens ``path`` read-only without a WAL index (``immutable``).

    An immutable open ignores a write-ahead log, so a file whose ``-wal`` still
    holds committed transactions is refused rather than read without them.
    """
    wal = path + "-wal"
    if os.path.isfile(wal) and os.path.getsize(wal) > 0:
        msg = (
            f"cannot open {path} read-only: its write-ahead log {wal} holds"
            " transactions not yet in the file; open it writable once, or copy it"
            " with sqlite3's .backup"
        )
        raise StoreUnavailableError(msg)
    return "file:" + quote(os.path.abspath(path)) + "?mode=ro&immutable=1"


def missing_folder(db_name: str) -> str | None:
    """The folder a database file would be in, absolute, when it does not exist.

    SQLite says only "unable to open database file"; a relative path in a store
    URL is relative to the current directory, which the user may not have in mind.
    """
    if db_name == ":memory:" or db_name.startswith("file:"):
        return None
    folder = os.path.dirname(os.path.abspath(db_name))
    return None if os.path.isdir(folder) else folder
