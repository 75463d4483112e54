"""A fresh reader while another connection holds SQLite's write lock.

docs/persistence.md#concurrency: opening views and the search index writes
nothing once their tables exist, so a reader in a new process never fails
because another process is flushing; tables still missing are created under
the write lock, waiting for it like any other write. The other writer here is
a second connection holding ``BEGIN IMMEDIATE`` (what a flush holds), so the
lock is held for the whole read, not raced. On PostgreSQL the same holds for
the table locks an open view write holds.
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING

import psycopg
import pytest

from agentlog import SessionQuery, Sessions, StoreUnavailableError
from tests.conftest import PG_URL, pg_params, postgres_schema

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

USER = {"kind": "user"}


def write_session(url: str, text: str) -> str:
    app = Sessions(store=url)
    try:
        s = app.create_session(cwd="/x")
        s.append(
            "turn/start", {"turn": 1, "trigger": {"kind": "message", "source": USER}}
        )
        content = [{"type": "text", "text": text}]
        s.append(
            "user/message", {"content": content, "source": USER}, surface_op="append"
        )
        s.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
        app.flush(s)
        return s.id
    finally:
        app.close()


@contextmanager
def write_lock(path: Path) -> Iterator[sqlite3.Connection]:
    """Another connection in a write transaction, as during a flush."""
    holder = sqlite3.connect(
        path, isolation_level=None, timeout=5, check_same_thread=False
    )
    try:
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("CREATE TABLE held (x)")  # uncommitted work of its own
        yield holder
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def reads_alone(url: str, session_id: str) -> None:
    """A fresh ``Sessions`` finds the one session by search and by listing."""
    app = Sessions(store=url)
    try:
        query = SessionQuery(app)
        hits = query.search_sessions("uniq7").items
        assert [hit.session_id for hit in hits] == [session_id]
        assert [r.header["id"] for r in query.list_sessions()] == [session_id]
    finally:
        app.close()


def test_fresh_reader_searches_while_another_connection_writes(tmp_path: Path) -> None:
    path = tmp_path / "agentlog.db"
    url = f"sqlite:///{path}"
    session_id = write_session(url, "hello uniq7")
    reads_alone(url, session_id)  # views and index created and caught up
    with write_lock(path):
        reads_alone(url, session_id)


def test_missing_view_tables_wait_for_the_lock(tmp_path: Path) -> None:
    """Views opened before, the search index never: its tables are created
    once the other writer commits, instead of failing at once."""
    path = tmp_path / "agentlog.db"
    url = f"sqlite:///{path}"
    session_id = write_session(url, "hello uniq7")
    warm = Sessions(store=url)
    try:
        assert SessionQuery(warm).list_sessions()
    finally:
        warm.close()
    with write_lock(path) as holder:
        # Released well inside the reader's busy timeout (5 s); before the fix
        # the reader failed at once, whenever the release came.
        release = threading.Timer(0.3, holder.execute, ("ROLLBACK",))
        release.start()
        try:
            app = Sessions(store=url)
            try:
                hits = SessionQuery(app).search_sessions("uniq7").items
                assert [hit.session_id for hit in hits] == [session_id]
            finally:
                app.close()
        finally:
            release.join()
            holder.execute("BEGIN")  # the context's own ROLLBACK ends this one


def test_a_lock_never_released_is_a_typed_error(tmp_path: Path) -> None:
    """Tables to create and a lock held past the busy timeout: agentlog's
    error, not the library's, and nothing half-created."""
    path = tmp_path / "agentlog.db"
    url = f"sqlite:///{path}"
    write_session(url, "hello uniq7")
    with write_lock(path):
        app = Sessions(store=url, env={"SQLITE_LOCK_TIMEOUT": "1"})
        try:
            with pytest.raises(StoreUnavailableError, match="database is locked"):
                SessionQuery(app)
        finally:
            app.close()
    check = sqlite3.connect(path)
    try:
        names = {r[0] for r in check.execute("SELECT name FROM sqlite_master")}
    finally:
        check.close()
    # The event store's own erase record is made with its events table, before
    # the lock; no view table may be half-created.
    views = names - {"agentlog_erase_pending"}
    assert not any(name.startswith("agentlog_") for name in views)


@pytest.fixture
def pg_schema() -> Iterator[str]:
    yield from postgres_schema()


def test_postgres_reader_opens_views_while_a_view_write_is_open(
    pg_schema: str,
) -> None:
    """PostgreSQL: ``CREATE INDEX IF NOT EXISTS`` locks its table even when the
    index exists, so an opener used to wait for every open view write (here:
    fail under a 1 s ``lock_timeout``). Existing views are now only looked at."""
    url = f"{PG_URL}?schema={pg_schema}&options=-c%20lock_timeout%3D1000"
    session_id = write_session(url, "hello uniq7")
    reads_alone(url, session_id)  # views and index created and caught up
    holder = psycopg.connect(**{**pg_params(), "autocommit": False})
    try:
        for table in (
            "agentlog_listing_v3",
            "agentlog_lineage_v2",
            "agentlog_search_v3_docs",
        ):
            holder.execute(f'LOCK TABLE "{pg_schema}"."{table}" IN ROW EXCLUSIVE MODE')
        reads_alone(url, session_id)
    finally:
        holder.rollback()
        holder.close()
