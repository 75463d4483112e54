"""A read-only store: every read works, every write is refused, typed.

A SQLite backup on read-only media, a file this process may not write, a
PostgreSQL role whose transactions are read-only, or a URL with ``?mode=ro``
opens without creating or changing anything (docs/configuration.md). A real
PostgreSQL standby is tested in tests/replica/.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest

from agentlog.application import Sessions
from agentlog.application.query import SessionQuery
from agentlog.domain.errors import (
    StoreReadOnlyError,
    StoreUnavailableError,
)
from tests.conftest import PG_URL, postgres_schema

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

TRIGGER = {"kind": "message", "source": {"kind": "user"}}


def write_store(
    where: Path | str, words: str = "kiwi mango", *, views: bool = True
) -> str:
    """A store (a SQLite file's path, or any store URL) with one finished turn
    whose user message holds ``words`` (and its views, which a first query
    builds, unless ``views`` is false)."""
    app = Sessions(store=where if isinstance(where, str) else f"sqlite:///{where}")
    handle = app.create_session(cwd="/work")
    handle.append("turn/start", {"turn": 1, "trigger": TRIGGER})
    handle.append(
        "user/message",
        {"content": [{"type": "text", "text": words}], "source": {"kind": "user"}},
        "append",
    )
    handle.append("turn/end", {"turn": 1, "outcome": {"kind": "completed"}})
    app.flush(handle)
    if views:
        SessionQuery(app).list_sessions()
    app.close()
    return handle.id


def refusals(app: Sessions, session_id: str) -> list[Callable[[], object]]:
    return [
        lambda: app.create_session(cwd="/work"),
        lambda: app.get_session(session_id),
        lambda: app.command(session_id).__enter__(),
        lambda: app.fork(session_id),
        lambda: app.repair(session_id),
        lambda: app.erase(session_id, reason="test"),
        lambda: app.erase_older_than(2**53, reason="test"),
    ]


def check_reads_work_and_writes_are_refused(url: str, session_id: str) -> None:
    app = Sessions(store=url)
    try:
        assert app.read_only
        assert [e["type"] for e in app.read_events(session_id)] == [
            "turn/start",
            "user/message",
            "turn/end",
        ]
        assert app.messages(session_id)[0]["role"] == "user"
        query = SessionQuery(app)
        assert [r.header["id"] for r in query.list_sessions()] == [session_id]
        found = query.search_sessions("mango")
        assert [hit.session_id for hit in found.items] == [session_id]
        for attempt in refusals(app, session_id):
            with pytest.raises(StoreReadOnlyError):
                attempt()
    finally:
        app.close()  # nothing pending: closing never writes


def test_mode_ro_reads_everything_and_refuses_every_write(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    session_id = write_store(path)
    builder = Sessions(store=f"sqlite:///{path}")
    SessionQuery(builder).search_sessions("kiwi")  # the index too
    builder.close()
    before = path.read_bytes()
    check_reads_work_and_writes_are_refused(f"sqlite:///{path}?mode=ro", session_id)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.db"]


def test_a_copy_whose_index_was_never_built_is_searched_by_scanning(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.db"
    session_id = write_store(path, "papaya mango")
    check_reads_work_and_writes_are_refused(f"sqlite:///{path}?mode=ro", session_id)


def check_views_never_built_say_so(url: str, session_id: str) -> None:
    """A store no query ever ran on: events read, listing refused in one line."""
    app = Sessions(store=url)
    try:
        assert len(app.read_events(session_id)) == 3
        with pytest.raises(StoreReadOnlyError) as caught:
            SessionQuery(app).list_sessions()
        assert "read-only and its views were never built" in str(caught.value)
    finally:
        app.close()


def test_a_copy_whose_views_were_never_built_says_so(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    session_id = write_store(path, views=False)
    check_views_never_built_say_so(f"sqlite:///{path}?mode=ro", session_id)


def test_a_write_ahead_log_not_in_the_file_is_refused_not_skipped(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.db"
    write_store(path)
    writer = Sessions(store=f"sqlite:///{path}")  # holds the WAL open
    try:
        handle = writer.create_session(cwd="/later")
        writer.flush(handle)
        copy = tmp_path / "copy"
        copy.mkdir()
        for name in ("store.db", "store.db-wal"):
            shutil.copy(tmp_path / name, copy / name)
    finally:
        writer.close()
    with pytest.raises(StoreUnavailableError) as caught:
        Sessions(store=f"sqlite:///{copy / 'store.db'}?mode=ro")
    assert "write-ahead log" in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.fixture
def read_only_mount(tmp_path: Path) -> Iterator[Path]:
    """``tmp_path/ro``: a read-only bind mount of ``tmp_path/rw`` (needs root)."""
    source, target = tmp_path / "rw", tmp_path / "ro"
    source.mkdir()
    target.mkdir()
    mounted = subprocess.run(
        ["mount", "--bind", str(source), str(target)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip("cannot bind-mount here (needs root)")
    try:
        remounted = subprocess.run(
            ["mount", "-o", "remount,ro,bind", str(target)], capture_output=True
        )
        if remounted.returncode != 0:
            pytest.skip("cannot remount read-only here")
        yield target
    finally:
        subprocess.run(["umount", str(target)], check=True)


@pytest.mark.slow  # runs mount(8)
def test_a_file_on_a_read_only_mount_opens_read_only(read_only_mount: Path) -> None:
    session_id = write_store(read_only_mount.parent / "rw" / "store.db")
    url = f"sqlite:///{read_only_mount / 'store.db'}"
    check_reads_work_and_writes_are_refused(url, session_id)


@pytest.mark.slow  # runs mount(8) and the command line
def test_the_command_line_reads_a_read_only_copy_in_one_line(
    read_only_mount: Path,
) -> None:
    session_id = write_store(read_only_mount.parent / "rw" / "store.db")
    check_the_command_line_reads_and_refuses(
        f"sqlite:///{read_only_mount / 'store.db'}", session_id
    )
    assert str(uuid.UUID(session_id)) == session_id


def check_the_command_line_reads_and_refuses(store: str, session_id: str) -> None:
    """``ls`` lists the session; ``erase`` is refused in one line, exit 1."""
    listed = subprocess.run(
        ["agentlog", "--store", store, "ls", "--json"], capture_output=True, text=True
    )
    assert listed.returncode == 0, listed.stderr
    assert session_id in listed.stdout
    erased = subprocess.run(
        ["agentlog", "--store", store, "erase", session_id, "--reason", "t"],
        capture_output=True,
        text=True,
    )
    assert erased.returncode == 1
    assert erased.stderr.count("\n") == 1
    assert "read-only" in erased.stderr


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh schema on the test server, as a store URL."""
    for schema in postgres_schema("ro_"):
        yield f"{PG_URL}?schema={schema}"


def postgres_tables(url: str) -> list[str]:
    """The schema's relations and each table's row count."""
    import psycopg
    from psycopg.sql import SQL, Identifier

    schema = url.rsplit("schema=", 1)[1]
    with psycopg.connect(PG_URL) as connection:
        rows = connection.execute(
            "SELECT c.relname, c.relkind, c.reltuples FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s ORDER BY 1",
            (schema,),
        ).fetchall()
        counts = [
            connection.execute(
                SQL("SELECT count(*) FROM {0}.{1}").format(
                    Identifier(schema), Identifier(name)
                )
            ).fetchone()
            for name, kind, _ in rows
            if kind == "r"
        ]
    return [str(row) for row in rows] + [str(count) for count in counts]


def test_postgres_mode_ro_reads_everything_and_refuses_every_write(
    postgres_url: str,
) -> None:
    session_id = write_store(postgres_url)
    builder = Sessions(store=postgres_url)
    SessionQuery(builder).search_sessions("kiwi")  # the index too
    builder.close()
    before = postgres_tables(postgres_url)
    check_reads_work_and_writes_are_refused(f"{postgres_url}&mode=ro", session_id)
    assert postgres_tables(postgres_url) == before


def test_a_postgres_role_whose_transactions_are_read_only_opens_read_only(
    postgres_url: str,
) -> None:
    """What the server says is enough: no ``mode=ro`` in the URL."""
    session_id = write_store(postgres_url, "papaya mango")
    options = quote("-c default_transaction_read_only=on")
    check_reads_work_and_writes_are_refused(
        f"{postgres_url}&options={options}", session_id
    )


def test_a_read_only_postgres_schema_whose_views_were_never_built_says_so(
    postgres_url: str,
) -> None:
    session_id = write_store(postgres_url, views=False)
    check_views_never_built_say_so(f"{postgres_url}&mode=ro", session_id)


def test_a_read_only_postgres_schema_that_does_not_exist_creates_nothing() -> None:
    for schema in postgres_schema("ro_"):
        missing = f"{PG_URL}?schema={schema}_missing&mode=ro"
        with pytest.raises(StoreUnavailableError):
            Sessions(store=missing)
        assert postgres_tables(missing) == []
