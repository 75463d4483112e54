"""The SQLite key store (``sqlite:///path``): a file of its own, in WAL mode
with ``secure_delete`` and a truncating checkpoint after each forget, so the
deleted wrapped keys are gone from the file and its WAL."""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from typing import TYPE_CHECKING

from agentlog.domain.errors import StoreUnavailableError
from agentlog.infrastructure.keystore import (
    CHECK_TABLE,
    KEYS_TABLE,
    VIEW_KEY_TABLE,
    KeyStore,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from agentlog.infrastructure.crypto import MasterKey
    from agentlog.infrastructure.keystore import Rewrap, RewrapView

logger = logging.getLogger(__name__)

DELETE_BATCH = 500
CHECKPOINT_ATTEMPTS = 100
CHECKPOINT_WAIT = 0.05


class SQLiteKeyStore(KeyStore):
    """Keys in a SQLite file of their own (created readable by its owner only)."""

    def __init__(self, master: MasterKey, path: str) -> None:
        super().__init__(master, f"sqlite:///{path}")
        self.path = path
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        try:
            self._db = sqlite3.connect(
                path, isolation_level=None, check_same_thread=False, timeout=30
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA secure_delete=ON")
            self._db.execute("PRAGMA synchronous=FULL")
            with self._transaction() as db:
                db.execute(
                    f"CREATE TABLE IF NOT EXISTS {KEYS_TABLE} (session_id TEXT "
                    "PRIMARY KEY, wrapped_key BLOB NOT NULL, created_at REAL NOT NULL)"
                )
                db.execute(
                    f"CREATE TABLE IF NOT EXISTS {CHECK_TABLE} (id INTEGER PRIMARY "
                    "KEY CHECK (id = 1), check_value BLOB NOT NULL)"
                )
                db.execute(
                    f"CREATE TABLE IF NOT EXISTS {VIEW_KEY_TABLE} (id INTEGER "
                    "PRIMARY KEY CHECK (id = 1), wrapped_key BLOB NOT NULL)"
                )
        except sqlite3.Error as error:
            msg = f"cannot open the key store {self.display}: {error}"
            raise StoreUnavailableError(msg) from error
        self._db_lock = threading.Lock()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    @contextlib.contextmanager
    def _using(self) -> Iterator[sqlite3.Connection]:
        with self._db_lock:
            try:
                yield self._db
            except sqlite3.Error as error:
                msg = f"the key store {self.display} failed: {error}"
                raise StoreUnavailableError(msg) from error

    def _select(self, session_id: str) -> bytes | None:
        with self._using() as db:
            row = db.execute(
                f"SELECT wrapped_key FROM {KEYS_TABLE} WHERE session_id = ?",
                (session_id,),
            ).fetchone()
        return None if row is None else bytes(row[0])

    def _select_many(self, session_ids: Sequence[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        with self._using() as db:
            for start in range(0, len(session_ids), DELETE_BATCH):
                batch = session_ids[start : start + DELETE_BATCH]
                marks = ", ".join("?" for _ in batch)
                rows = db.execute(
                    f"SELECT session_id, wrapped_key FROM {KEYS_TABLE} "
                    f"WHERE session_id IN ({marks})",
                    batch,
                ).fetchall()
                found.update((str(row[0]), bytes(row[1])) for row in rows)
        return found

    def _insert_or_ignore(
        self, session_id: str, wrapped: bytes, current: Callable[[bytes], None]
    ) -> bytes:
        with self._using(), self._transaction() as db:
            current(
                bytes(
                    db.execute(f"SELECT check_value FROM {CHECK_TABLE}").fetchone()[0]
                )
            )
            db.execute(
                f"INSERT OR IGNORE INTO {KEYS_TABLE} VALUES (?, ?, ?)",
                (session_id, wrapped, time.time()),
            )
            row = db.execute(
                f"SELECT wrapped_key FROM {KEYS_TABLE} WHERE session_id = ?",
                (session_id,),
            ).fetchone()
        return bytes(row[0])

    def _view_key_or_insert(
        self, wrapped: bytes, current: Callable[[bytes], None]
    ) -> bytes:
        with self._using(), self._transaction() as db:
            current(
                bytes(
                    db.execute(f"SELECT check_value FROM {CHECK_TABLE}").fetchone()[0]
                )
            )
            db.execute(
                f"INSERT OR IGNORE INTO {VIEW_KEY_TABLE} VALUES (1, ?)", (wrapped,)
            )
            row = db.execute(f"SELECT wrapped_key FROM {VIEW_KEY_TABLE}").fetchone()
        return bytes(row[0])

    def _delete(self, session_ids: Sequence[str]) -> int:
        deleted = 0
        with self._using() as db:
            with self._transaction():
                for start in range(0, len(session_ids), DELETE_BATCH):
                    batch = session_ids[start : start + DELETE_BATCH]
                    marks = ",".join("?" * len(batch))
                    deleted += db.execute(
                        f"DELETE FROM {KEYS_TABLE} WHERE session_id IN ({marks})",
                        list(batch),
                    ).rowcount
            self._checkpoint(db)
        return deleted

    def _rewrap_all(
        self,
        rewrap: Rewrap,
        rewrap_view: RewrapView,
        check_value: bytes,
        current: Callable[[bytes], None],
    ) -> int:
        with self._using() as db:
            with self._transaction():
                current(
                    bytes(
                        db.execute(f"SELECT check_value FROM {CHECK_TABLE}").fetchone()[
                            0
                        ]
                    )
                )
                rows = db.execute(
                    f"SELECT session_id, wrapped_key FROM {KEYS_TABLE}"
                ).fetchall()
                db.executemany(
                    f"UPDATE {KEYS_TABLE} SET wrapped_key = ? WHERE session_id = ?",
                    [(rewrap(i, bytes(wrapped)), i) for i, wrapped in rows],
                )
                view = db.execute(
                    f"SELECT wrapped_key FROM {VIEW_KEY_TABLE}"
                ).fetchone()
                if view is not None:
                    db.execute(
                        f"UPDATE {VIEW_KEY_TABLE} SET wrapped_key = ?",
                        (rewrap_view(bytes(view[0])),),
                    )
                db.execute(f"UPDATE {CHECK_TABLE} SET check_value = ?", (check_value,))
            self._checkpoint(db)  # the old wrappings leave the WAL too
        return len(rows)

    def _checkpoint(self, db: sqlite3.Connection) -> None:
        """Move the zeroed pages into the file and empty the WAL (its old frames
        still hold the deleted keys). A reader in another process can hold the
        checkpoint off; it is retried, then the next forget finishes it."""
        for _ in range(CHECKPOINT_ATTEMPTS):
            busy = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            if not busy:
                return
            time.sleep(CHECKPOINT_WAIT)
        logger.warning(
            "key store %s: the WAL could not be truncated (a reader held it); the "
            "deleted keys' old frames stay in %s-wal until the next forget",
            self.display,
            self.path,
        )

    def _check_value(self, candidate: bytes) -> bytes:
        with self._using(), self._transaction() as db:
            db.execute(
                f"INSERT OR IGNORE INTO {CHECK_TABLE} VALUES (1, ?)", (candidate,)
            )
            row = db.execute(f"SELECT check_value FROM {CHECK_TABLE}").fetchone()
        return bytes(row[0])

    def close(self) -> None:
        super().close()
        with self._db_lock:
            self._db.close()
