"""Opening SQLite connections while other processes open the same fresh file.

The library switches a new file to WAL (``PRAGMA journal_mode=WAL``) on its first
connection, and SQLite does not wait on that statement's lock: with several
processes or threads opening one fresh file at once, the others failed with
"database is locked" (about 0.4% of 8 simultaneous opens). Retried with short
waits while the file is locked, every opener succeeds.
"""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING, TypeVar

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
