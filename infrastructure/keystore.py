"""The key store: each session's wrapped data key, kept outside the event database.

:meth:`KeyStore.data_key` returns a session's key (creating it on request: an
insert-or-ignore, then a read, so concurrent first uses in any number of threads
or processes converge on one key); :meth:`KeyStore.forget` deletes keys, after
which every copy of those sessions' rows, backups included, stays sealed.

Three backends, chosen by URL: ``memory:``, ``sqlite:///path`` (WAL,
``secure_delete`` and a truncating checkpoint after each forget, so the deleted
wrapped keys are gone from the file and its WAL) and ``postgresql://…?schema=…``
(a table in that schema). Each store holds one check value of the master key, so
a wrong master key is refused when the store is opened, not at the first read.
:meth:`KeyStore.rotate` wraps every key with a new master key in one transaction;
a key is only ever created under the master key the check value names, so a
process still on the old key cannot add keys nobody else can open.
See docs/encryption.md.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.sql import SQL, Identifier

from agentlog.domain.errors import EncryptionError, StoreUnavailableError
from agentlog.infrastructure.crypto import DataKey, MasterKey
from agentlog.infrastructure.postgres import connection_kwargs, unavailable
from agentlog.infrastructure.store_url import (
    MEMORY_URLS,
    StoreConfig,
    mask_url,
    parse_store_url,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

    Rewrap = Callable[[str, bytes], bytes]
    """``(session id, wrapped key) -> the key wrapped by the new master key``."""

logger = logging.getLogger(__name__)

KEYS_TABLE = "agentlog_data_keys"
CHECK_TABLE = "agentlog_master_key_check"
CACHE_SIZE = 4096
"""Unwrapped keys kept in memory per process (least recently used go first)."""
DELETE_BATCH = 500
CHECKPOINT_ATTEMPTS = 100
CHECKPOINT_WAIT = 0.05
KEYSTORE_DDL_LOCK = 0x6167656E746B6579  # "agentkey": serialises table creation


class KeyStore(ABC):
    """Wrapped data keys by session id; unwrapped ones cached in this process.

    Thread-safe. The backend classes implement four small steps; the rules
    (wrap, unwrap, cache, converge on one key) live here once.
    """

    def __init__(self, master: MasterKey, display: str) -> None:
        self.display = display
        self._master = master
        self._cache: OrderedDict[str, DataKey] = OrderedDict()
        self._lock = threading.Lock()
        self._forgets = 0

    def check_master_key(self) -> None:
        """Refuse a master key other than the one this store was created with."""
        if not self._master.opens(self._check_value(self._master.check_value())):
            msg = (
                f"AGENTLOG_MASTER_KEY does not open the key store {self.display}: "
                "it was made with, or rotated to, another master key"
            )
            raise EncryptionError(msg)

    def data_key(self, session_id: str, *, create: bool = False) -> DataKey | None:
        """The session's data key; ``None`` if it has none (never had, or forgotten).

        ``create`` makes one when there is none; when several callers create at
        once, every one of them gets the key that was stored first.
        """
        with self._lock:
            key = self._cache.get(session_id)
            if key is not None:
                self._cache.move_to_end(session_id)
                return key
            forgets = self._forgets
        wrapped = self._select(session_id)
        if wrapped is None:
            if not create:
                return None
            fresh = self._master.wrap(session_id, DataKey.generate())
            wrapped = self._insert_or_ignore(session_id, fresh, self._current)
        key = DataKey(self._master.unwrap(session_id, wrapped))
        with self._lock:
            # A forget since the read may have deleted this very key: don't cache.
            if self._forgets == forgets:
                self._cache[session_id] = key
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
        return key

    def forget(self, session_ids: Iterable[str]) -> int:
        """Delete these sessions' keys (here and in the store); how many existed."""
        ids = list(dict.fromkeys(session_ids))
        with self._lock:
            self._forgets += 1
            for session_id in ids:
                self._cache.pop(session_id, None)
        return self._delete(ids) if ids else 0

    def rotate(self, new_master: MasterKey) -> int:
        """Wrap every data key with ``new_master`` instead, in one transaction.

        Returns how many keys were wrapped again. The data keys (and so every
        stored row) stay as they are; from then on only ``new_master`` opens
        this store (docs/encryption.md#rotating-the-master-key).
        """
        old = self._master

        def rewrap(session_id: str, wrapped: bytes) -> bytes:
            return new_master.wrap(session_id, old.unwrap(session_id, wrapped))

        count = self._rewrap_all(rewrap, new_master.check_value(), self._current)
        self._master = new_master
        return count

    def _current(self, check_value: bytes) -> None:
        """Refuse to wrap under a master key the store's check value does not name."""
        if not self._master.opens(check_value):
            msg = (
                f"the master key of the key store {self.display} was rotated: "
                "restart with the new AGENTLOG_MASTER_KEY"
            )
            raise EncryptionError(msg)

    def close(self) -> None:
        with self._lock:
            self._cache.clear()

    # The backend's steps.

    @abstractmethod
    def _select(self, session_id: str) -> bytes | None:
        """The session's wrapped key, if stored."""

    @abstractmethod
    def _insert_or_ignore(
        self, session_id: str, wrapped: bytes, current: Callable[[bytes], None]
    ) -> bytes:
        """Store ``wrapped`` unless the session has a key; return the stored one.

        ``current(check value)`` runs first, in the same transaction, and raises
        if the store's master key is not the one ``wrapped`` was made with."""

    @abstractmethod
    def _rewrap_all(
        self, rewrap: Rewrap, check_value: bytes, current: Callable[[bytes], None]
    ) -> int:
        """In one transaction: ``current(stored check value)``, every wrapped key
        replaced by ``rewrap``'s, and ``check_value`` stored; how many keys."""

    @abstractmethod
    def _delete(self, session_ids: Sequence[str]) -> int:
        """Delete the keys (durably, leaving no copy in the store's files)."""

    @abstractmethod
    def _check_value(self, candidate: bytes) -> bytes:
        """The stored master-key check value, storing ``candidate`` if none."""


class MemoryKeyStore(KeyStore):
    """Keys in process memory, for the in-memory store and tests."""

    def __init__(self, master: MasterKey) -> None:
        super().__init__(master, "memory:")
        self._rows: dict[str, bytes] = {}
        self._check: bytes | None = None
        self._rows_lock = threading.Lock()

    def _select(self, session_id: str) -> bytes | None:
        with self._rows_lock:
            return self._rows.get(session_id)

    def _insert_or_ignore(
        self, session_id: str, wrapped: bytes, current: Callable[[bytes], None]
    ) -> bytes:
        with self._rows_lock:
            if self._check is not None:
                current(self._check)
            return self._rows.setdefault(session_id, wrapped)

    def _rewrap_all(
        self, rewrap: Rewrap, check_value: bytes, current: Callable[[bytes], None]
    ) -> int:
        with self._rows_lock:
            if self._check is not None:
                current(self._check)
            rows = {i: rewrap(i, wrapped) for i, wrapped in self._rows.items()}
            self._rows, self._check = rows, check_value
            return len(rows)

    def _delete(self, session_ids: Sequence[str]) -> int:
        with self._rows_lock:
            return sum(self._rows.pop(i, None) is not None for i in session_ids)

    def _check_value(self, candidate: bytes) -> bytes:
        with self._rows_lock:
            if self._check is None:
                self._check = candidate
            return self._check


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
        self, rewrap: Rewrap, check_value: bytes, current: Callable[[bytes], None]
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


class PostgresKeyStore(KeyStore):
    """Keys in a table of a PostgreSQL schema (docs/encryption.md: not the events')."""

    def __init__(self, master: MasterKey, config: StoreConfig) -> None:
        super().__init__(master, config.display)
        self._kwargs = connection_kwargs(config.env)
        self._schema = config.schema or "public"
        self._db_lock = threading.Lock()
        self._db: psycopg.Connection[Any] | None = None
        with self._using() as db:
            db.execute("SELECT pg_advisory_lock(%s)", (KEYSTORE_DDL_LOCK,))
            try:
                db.execute(
                    SQL("CREATE SCHEMA IF NOT EXISTS {0}").format(
                        Identifier(self._schema)
                    )
                )
                db.execute(
                    SQL(
                        "CREATE TABLE IF NOT EXISTS {0} (session_id text PRIMARY KEY, "
                        "wrapped_key bytea NOT NULL, created_at timestamptz NOT NULL "
                        "DEFAULT now())"
                    ).format(self._table(KEYS_TABLE))
                )
                db.execute(
                    SQL(
                        "CREATE TABLE IF NOT EXISTS {0} (id int PRIMARY KEY CHECK "
                        "(id = 1), check_value bytea NOT NULL)"
                    ).format(self._table(CHECK_TABLE))
                )
            finally:
                db.execute("SELECT pg_advisory_unlock(%s)", (KEYSTORE_DDL_LOCK,))

    def _table(self, name: str) -> SQL | Any:
        return SQL("{0}.{1}").format(Identifier(self._schema), Identifier(name))

    @contextlib.contextmanager
    def _using(self) -> Iterator[psycopg.Connection[Any]]:
        """The connection (made again if it was lost); failures are typed."""
        with self._db_lock:
            try:
                if self._db is None or self._db.closed:
                    self._db = psycopg.connect(**self._kwargs, autocommit=True)
                yield self._db
            except psycopg.Error as error:
                if self._db is not None and self._db.broken:
                    self._db.close()
                    self._db = None
                raise unavailable(self._kwargs, error, what="key store") from error

    def _wrapped_key(self, db: psycopg.Connection[Any], session_id: str) -> Any:
        """The session's key row (``None`` if it has no key)."""
        return db.execute(
            SQL("SELECT wrapped_key FROM {0} WHERE session_id = %s").format(
                self._table(KEYS_TABLE)
            ),
            (session_id,),
        ).fetchone()

    def _stored_check(self, db: psycopg.Connection[Any], lock: str = "") -> bytes:
        """The store's check value, read with the row ``lock`` clause if given."""
        row = db.execute(
            SQL("SELECT check_value FROM {0} " + lock).format(self._table(CHECK_TABLE))
        ).fetchone()
        assert row is not None
        return bytes(row[0])

    def _select(self, session_id: str) -> bytes | None:
        with self._using() as db:
            row = self._wrapped_key(db, session_id)
        return None if row is None else bytes(row[0])

    def _insert_or_ignore(
        self, session_id: str, wrapped: bytes, current: Callable[[bytes], None]
    ) -> bytes:
        with self._using() as db, db.transaction():
            # FOR SHARE: a rotation (which updates the row) waits for this insert,
            # and an insert after it sees the new check value.
            current(self._stored_check(db, "FOR SHARE"))
            db.execute(
                SQL(
                    "INSERT INTO {0} (session_id, wrapped_key) VALUES (%s, %s) "
                    "ON CONFLICT (session_id) DO NOTHING"
                ).format(self._table(KEYS_TABLE)),
                (session_id, wrapped),
            )
            row = self._wrapped_key(db, session_id)
        assert row is not None
        return bytes(row[0])

    def _rewrap_all(
        self, rewrap: Rewrap, check_value: bytes, current: Callable[[bytes], None]
    ) -> int:
        with self._using() as db, db.transaction():
            current(self._stored_check(db, "FOR UPDATE"))
            rows = db.execute(
                SQL("SELECT session_id, wrapped_key FROM {0} FOR UPDATE").format(
                    self._table(KEYS_TABLE)
                )
            ).fetchall()
            with db.cursor() as cursor:
                cursor.executemany(
                    SQL("UPDATE {0} SET wrapped_key = %s WHERE session_id = %s").format(
                        self._table(KEYS_TABLE)
                    ),
                    [(rewrap(i, bytes(wrapped)), i) for i, wrapped in rows],
                )
            db.execute(
                SQL("UPDATE {0} SET check_value = %s").format(self._table(CHECK_TABLE)),
                (check_value,),
            )
        return len(rows)

    def _delete(self, session_ids: Sequence[str]) -> int:
        with self._using() as db:
            cursor = db.execute(
                SQL("DELETE FROM {0} WHERE session_id = ANY(%s)").format(
                    self._table(KEYS_TABLE)
                ),
                (list(session_ids),),
            )
            return cursor.rowcount

    def _check_value(self, candidate: bytes) -> bytes:
        with self._using() as db:
            db.execute(
                SQL(
                    "INSERT INTO {0} VALUES (1, %s) ON CONFLICT (id) DO NOTHING"
                ).format(self._table(CHECK_TABLE)),
                (candidate,),
            )
            return self._stored_check(db)

    def close(self) -> None:
        super().close()
        with self._db_lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def open_key_store(
    url: str, master: MasterKey, events: Mapping[str, str] | None = None
) -> KeyStore:
    """The key store a URL names, its master key checked.

    ``events`` is the event store's environment: a key store inside the event
    database itself (the same SQLite file, the same PostgreSQL schema) is refused,
    since a copy of that database would carry the keys with the rows.
    """
    if url.strip() in MEMORY_URLS:
        store: KeyStore = MemoryKeyStore(master)
    else:
        config = parse_store_url(url)
        _refuse_inside_events(config, events or {})
        if config.sqlite_path is not None:
            store = SQLiteKeyStore(master, config.sqlite_path)
        else:
            store = PostgresKeyStore(master, config)
    try:
        store.check_master_key()
    except BaseException:
        store.close()
        raise
    return store


def _refuse_inside_events(config: StoreConfig, events: Mapping[str, str]) -> None:
    module = events.get("PERSISTENCE_MODULE") or ""
    inside = False
    if config.sqlite_path is not None and module == "eventsourcing.sqlite":
        database = events.get("SQLITE_DBNAME") or ""
        inside = Path(database).absolute() == Path(config.sqlite_path).absolute()
    elif config.sqlite_path is None and "postgres" in module:
        env = config.env
        inside = all(
            (events.get(name) or "") == (env.get(name) or "")
            for name in ("POSTGRES_HOST", "POSTGRES_PORT", "POSTGRES_DBNAME")
        ) and (events.get("POSTGRES_SCHEMA") or "public") == (config.schema or "public")
    if inside:
        msg = (
            f"the key store {mask_url(config.url)} is the event store itself; "
            "AGENTLOG_KEYSTORE must name another file, database or schema"
        )
        raise EncryptionError(msg)


def rotate_master_key(store_url: str, env: Mapping[str, str]) -> tuple[int, str]:
    """Wrap every data key of a store's key store with ``AGENTLOG_NEW_MASTER_KEY``.

    ``env`` holds ``AGENTLOG_MASTER_KEY`` (the current key), the new one and, if
    the store needs it, ``AGENTLOG_KEYSTORE``. Returns how many keys were wrapped
    again and the key store's display name. A key store that does not exist yet
    is refused rather than created.
    """
    from agentlog.infrastructure.crypto import (
        ENCRYPTION_ENV_VAR,
        NEW_MASTER_KEY_ENV_VAR,
        PER_SESSION,
        encryption_settings,
    )

    events = parse_store_url(store_url).env
    settings = encryption_settings({**env, **events, ENCRYPTION_ENV_VAR: PER_SESSION})
    assert settings is not None
    new_master = MasterKey.from_base64(
        env.get(NEW_MASTER_KEY_ENV_VAR), NEW_MASTER_KEY_ENV_VAR
    )
    if settings.keystore.strip() not in MEMORY_URLS:
        path = parse_store_url(settings.keystore).sqlite_path
        if path is not None and not Path(path).is_file():
            msg = f"no key store at {mask_url(settings.keystore)}: nothing to rotate"
            raise EncryptionError(msg)
    store = open_key_store(settings.keystore, settings.master_key, events)
    try:
        return store.rotate(new_master), store.display
    finally:
        store.close()
