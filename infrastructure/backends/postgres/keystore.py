"""The PostgreSQL key store (``postgresql://…?schema=…``): a table in a schema
other than the events' (docs/encryption.md)."""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.sql import SQL, Identifier

from agentlog.infrastructure.backends.postgres.connection import (
    connection_kwargs,
    ddl_lock,
    unavailable,
)
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
    from agentlog.infrastructure.store_url import StoreConfig

KEYSTORE_DDL_LOCK = 0x6167656E746B6579  # "agentkey": serialises table creation


class PostgresKeyStore(KeyStore):
    """Keys in a table of a PostgreSQL schema (docs/encryption.md: not the events')."""

    def __init__(self, master: MasterKey, config: StoreConfig) -> None:
        super().__init__(master, config.display)
        self._kwargs = connection_kwargs(config.env)
        self._schema = config.schema or "public"
        self._db_lock = threading.Lock()
        self._db: psycopg.Connection[Any] | None = None
        with self._using() as db, ddl_lock(db, KEYSTORE_DDL_LOCK):
            db.execute(
                SQL("CREATE SCHEMA IF NOT EXISTS {0}").format(Identifier(self._schema))
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
            db.execute(
                SQL(
                    "CREATE TABLE IF NOT EXISTS {0} (id int PRIMARY KEY CHECK "
                    "(id = 1), wrapped_key bytea NOT NULL)"
                ).format(self._table(VIEW_KEY_TABLE))
            )

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

    def _select_many(self, session_ids: Sequence[str]) -> dict[str, bytes]:
        with self._using() as db:
            rows = db.execute(
                SQL(
                    "SELECT session_id, wrapped_key FROM {0} WHERE session_id = ANY(%s)"
                ).format(self._table(KEYS_TABLE)),
                (list(session_ids),),
            ).fetchall()
        return {str(row[0]): bytes(row[1]) for row in rows}

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

    def _view_key_or_insert(
        self, wrapped: bytes, current: Callable[[bytes], None]
    ) -> bytes:
        with self._using() as db, db.transaction():
            current(self._stored_check(db, "FOR SHARE"))
            db.execute(
                SQL(
                    "INSERT INTO {0} VALUES (1, %s) ON CONFLICT (id) DO NOTHING"
                ).format(self._table(VIEW_KEY_TABLE)),
                (wrapped,),
            )
            row = db.execute(
                SQL("SELECT wrapped_key FROM {0}").format(self._table(VIEW_KEY_TABLE))
            ).fetchone()
        assert row is not None
        return bytes(row[0])

    def _rewrap_all(
        self,
        rewrap: Rewrap,
        rewrap_view: RewrapView,
        check_value: bytes,
        current: Callable[[bytes], None],
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
            view = db.execute(
                SQL("SELECT wrapped_key FROM {0} FOR UPDATE").format(
                    self._table(VIEW_KEY_TABLE)
                )
            ).fetchone()
            if view is not None:
                db.execute(
                    SQL("UPDATE {0} SET wrapped_key = %s").format(
                        self._table(VIEW_KEY_TABLE)
                    ),
                    (rewrap_view(bytes(view[0])),),
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
