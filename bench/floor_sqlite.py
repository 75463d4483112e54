"""The floor: agentlog's stored rows written and read with plain sqlite3 + json.

Same table shape as eventsourcing's SQLite application recorder
(``stored_events``: id, version, topic, state; version 1 = the header line,
event seq s at version s+2, topic = wire type, state = the compact JSON
envelope), WAL mode and default synchronous like the library, plus the one
summary table a hand-written store would keep for a titled listing. No
validation, no framework: the cost any implementation of these rows must pay.
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any, ClassVar

from .base import (
    BATCH_GROUPS,
    CWD,
    BenchSystem,
    Flush,
    SessionRef,
    derive_messages,
    now_ms,
    tail_messages,
)
from .workload import SURFACE_TYPES

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .workload import Conversation, Group, Intent

SCHEMA = """
CREATE TABLE IF NOT EXISTS stored_events (
    originator_id TEXT, originator_version INTEGER, topic TEXT, state BLOB,
    PRIMARY KEY (originator_id, originator_version));
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, created_at INTEGER, updated_at INTEGER, title TEXT,
    events INTEGER);
CREATE INDEX IF NOT EXISTS sessions_recent ON sessions (updated_at DESC, id);
"""
INSERT = "INSERT INTO stored_events VALUES (?,?,?,?)"
UPSERT_SUMMARY = """
INSERT INTO sessions (id, created_at, updated_at, title, events)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at,
    events = excluded.events, title = COALESCE(excluded.title, sessions.title)
"""
SELECT_FROM = (
    "SELECT topic, state FROM stored_events "
    "WHERE originator_id = ? AND originator_version > ? ORDER BY originator_version"
)


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON, the bytes agentlog stores."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


class FloorSystem(BenchSystem):
    """Plain sqlite3 + json over agentlog's row format."""

    name: ClassVar[str] = "floor"
    label: ClassVar[str] = "floor (sqlite3+json)"
    features: ClassVar[frozenset[str]] = frozenset(
        {"w1", "w2a", "w2b", "w3", "w4", "w5", "w6"}
    )
    _conn: sqlite3.Connection | None = None

    @classmethod
    def versions(cls) -> dict[str, str]:
        """SQLite itself is the only dependency."""
        return {"sqlite": sqlite3.sqlite_version}

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(self.db_path, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(SCHEMA)
            self._conn = conn
        return self._conn

    def _commit(
        self,
        session_id: str,
        intents: Sequence[Intent],
        header: dict[str, Any] | None = None,
    ) -> None:
        """One transaction: the rows, then the summary row."""
        conn = self._db()
        now = now_ms()
        rows = [
            (session_id, i.seq + 2, i.type, dumps(i.envelope(now))) for i in intents
        ]
        title = next(
            (i.data["title"] for i in intents if i.type == "session/title"), None
        )
        conn.execute("BEGIN")
        try:
            if header is not None:
                conn.execute(INSERT, (session_id, 1, "session", dumps(header)))
            conn.executemany(INSERT, rows)
            created = header["createdAt"] if header is not None else now
            events = intents[-1].seq + 1 if intents else 0
            conn.execute(UPSERT_SUMMARY, (session_id, created, now, title, events))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @staticmethod
    def _header(session_id: str, **extra: Any) -> dict[str, Any]:
        return {
            "type": "session",
            "version": 0,
            "id": session_id,
            "createdAt": now_ms(),
            "cwd": CWD,
            **extra,
        }

    def write(self, conversation: Conversation, flush: Flush) -> dict[str, Any]:
        """Insert the rows, one transaction per event, step or batch of steps."""
        sid = conversation.session_id
        header: dict[str, Any] | None = self._header(sid)
        groups = conversation.groups
        if flush == "event":
            batches: list[list[Intent]] = [[i] for g in groups for i in g]
        elif flush == "step":
            batches = [list(g) for g in groups]
        else:
            batches = [
                [i for g in groups[k : k + BATCH_GROUPS] for i in g]
                for k in range(0, len(groups), BATCH_GROUPS)
            ]
        for batch in batches:
            self._commit(sid, batch, header)
            header = None
        return {}

    def _rows(self, session_id: str, after_version: int) -> list[dict[str, Any]]:
        """Decode only surface rows: the topic column says which ones matter."""
        cursor = self._db().execute(SELECT_FROM, (session_id, after_version))
        return [json.loads(state) for topic, state in cursor if topic in SURFACE_TYPES]

    def read_all(self, ref: SessionRef) -> Sequence[Any]:
        """All rows after the header, folded."""
        return derive_messages(self._rows(ref.session_id, 1))

    def read_tail(self, ref: SessionRef) -> Sequence[Any]:
        """A primary-key range read of the tail window."""
        return tail_messages(self._rows(ref.session_id, ref.tail_after + 2))

    def list_page(self, limit: int = 50) -> Sequence[Any]:
        """Newest first from the summary table's index."""
        cursor = self._db().execute(
            "SELECT id, title, created_at, updated_at, events FROM sessions "
            "ORDER BY updated_at DESC, id LIMIT ?",
            (limit,),
        )
        keys = ("id", "title", "createdAt", "updatedAt", "events")
        return [dict(zip(keys, row, strict=True)) for row in cursor]

    def fork_read(self, ref: SessionRef, child_id: str) -> Sequence[Any]:
        """Copy rows 0..boundary in SQL (no decode), then read the child."""
        conn = self._db()
        sid, boundary = ref.session_id, ref.fork_boundary
        conn.execute("BEGIN IMMEDIATE")
        try:
            (topic,) = conn.execute(
                "SELECT topic FROM stored_events "
                "WHERE originator_id = ? AND originator_version = ?",
                (sid, boundary + 2),
            ).fetchone()
            if topic != "turn/end":
                msg = f"fork boundary {boundary} must be turn/end, got {topic}"
                raise ValueError(msg)
            header = self._header(child_id, parentSession=sid, seedLength=boundary + 1)
            conn.execute(INSERT, (child_id, 1, "session", dumps(header)))
            conn.execute(
                "INSERT INTO stored_events SELECT ?, originator_version, topic, state "
                "FROM stored_events WHERE originator_id = ? "
                "AND originator_version BETWEEN 2 AND ?",
                (child_id, sid, boundary + 2),
            )
            (title,) = conn.execute(
                "SELECT title FROM sessions WHERE id = ?", (sid,)
            ).fetchone()
            now = now_ms()
            conn.execute(UPSERT_SUMMARY, (child_id, now, now, title, boundary + 1))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return derive_messages(self._rows(child_id, 1))

    def append_group(self, ref: SessionRef, group: Group) -> None:
        """Find the tail version, then insert the step in one transaction."""
        (last,) = (
            self._db()
            .execute(
                "SELECT MAX(originator_version) FROM stored_events "
                "WHERE originator_id = ?",
                (ref.session_id,),
            )
            .fetchone()
        )
        if last != group[0].seq + 1:
            msg = f"stored tail at version {last}, step starts at seq {group[0].seq}"
            raise ValueError(msg)
        self._commit(ref.session_id, group)

    def close(self) -> None:
        """Close the connection."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None


System = FloorSystem
