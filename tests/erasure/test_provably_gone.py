"""After an erase the session's text is in no byte the store keeps.

SQLite: the database file, its WAL and its shared-memory file, searched
case-insensitively (the FTS5 index keeps lower-cased tokens). PostgreSQL: every
table of the schema, each row cast to text (``bytea`` columns show as hex, so the
hex of the markers is searched too). Each test first proves the scan finds the
markers, after every view and the search index have indexed them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agentlog import Sessions
from tests.conftest import pg_params, postgres_schema_env
from tests.erasure.support import (
    REASON,
    found_in_files,
    index_everything,
    markers,
    write_marked,
)

if TYPE_CHECKING:
    from collections.abc import Iterator


def sqlite_app(path: Path) -> Sessions:
    return Sessions(
        env={"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(path)}
    )


def test_sqlite_file_wal_and_shm_hold_no_marker_after_erase(tmp_path: Path) -> None:
    database = tmp_path / "agentlog.db"
    app = sqlite_app(database)
    marks = markers()
    others = [markers() for _ in range(3)]
    for number, other in enumerate(others):
        write_marked(app, f"other-{number}", other)
    app.close(write_marked(app, "secret", marks))
    # A fork copies the parent's rows; erasing it with the parent takes them.
    app.close(app.fork("secret", child_session_id="secret-fork"))
    index_everything(app, marks)
    assert found_in_files(database, marks) == list(marks)

    app.erase("secret", reason=REASON, descendants=True)

    assert found_in_files(database, marks) == []
    # The other sessions are intact, on disk and in every read.
    for other in others:
        assert found_in_files(database, other) == list(other)
        index_everything(app, other)
    app.close()
    assert found_in_files(database, marks) == []


def test_sqlite_erase_while_a_reader_holds_the_wal_reports_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A reader's open snapshot keeps the WAL from being reset: the erase still
    commits (the rows are gone) and the checkpoint says it could not truncate."""
    import sqlite3

    database = tmp_path / "agentlog.db"
    app = sqlite_app(database)
    marks = markers()
    write_marked(app, "kept", markers())
    app.close(write_marked(app, "secret", marks))
    index_everything(app, marks)
    reader = sqlite3.connect(database, isolation_level=None)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM stored_events").fetchone()
        recorder = app.recorder
        recorder.CHECKPOINT_ATTEMPTS = 2  # type: ignore[attr-defined]
        with caplog.at_level("WARNING", logger="agentlog.application.erasure"):
            app.erase("secret", reason=REASON)
        assert "the WAL could not be truncated" in caplog.text
        assert recorder.checkpoint() is False  # type: ignore[attr-defined]
        assert not app.is_stored("secret")
    finally:
        reader.close()
    assert app.eraser.scrub() is True
    assert found_in_files(database, marks) == []
    app.close()


def test_a_scrub_a_stop_cut_off_is_done_by_the_next_gc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop between an erase's commit and its scrub (Ctrl-C in ``agentlog gc``)
    leaves the erased tokens in the index's old segments; the next ``gc`` scrubs
    even when it has nothing to erase (it scrubbed only after erasing, so the
    tokens stayed until some later erase)."""
    database = tmp_path / "agentlog.db"
    app = sqlite_app(database)
    marks = markers()
    write_marked(app, "kept", markers())
    app.close(write_marked(app, "secret", marks))
    index_everything(app, marks)
    with monkeypatch.context() as patched:
        patched.setattr(app.eraser, "scrub", lambda: True)  # the stop
        app.erase("secret", reason=REASON)
    assert found_in_files(database, marks) != []
    report = app.erase_older_than(0, reason=REASON)  # nothing is that old
    assert (report.erased, report.scrubbed) == ([], True)
    assert found_in_files(database, marks) == []
    app.close()


# ------------------------------------------------------------- PostgreSQL


@pytest.fixture
def pg_env() -> Iterator[dict[str, str]]:
    yield from postgres_schema_env()


def pg_found(schema: str, marks: tuple[str, ...]) -> list[str]:
    """Which markers any row of any table of ``schema`` holds (text or hex)."""
    import psycopg
    from psycopg import sql

    found: set[str] = set()
    with psycopg.connect(**pg_params()) as connection:
        tables = [
            row[0]
            for row in connection.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = %s",
                (schema,),
            )
        ]
        assert len(tables) >= 8, tables  # events, snapshots, views, tracking
        for table in tables:
            query = sql.SQL("SELECT lower(t::text) FROM {0}.{1} t").format(
                sql.Identifier(schema), sql.Identifier(table)
            )
            for (text,) in connection.execute(query):
                for mark in marks:
                    needles = (
                        mark.lower(),
                        mark.encode().hex(),
                        mark.lower().encode().hex(),
                    )
                    if any(needle in text for needle in needles):
                        found.add(mark)
    return [mark for mark in marks if mark in found]


def test_postgres_no_table_of_the_schema_holds_a_marker_after_erase(
    pg_env: dict[str, str],
) -> None:
    app = Sessions(env=pg_env)
    try:
        marks = markers()
        write_marked(app, "kept", markers())
        app.close(write_marked(app, "secret", marks))
        index_everything(app, marks)
        schema = pg_env["POSTGRES_SCHEMA"]
        assert pg_found(schema, marks) == list(marks)

        app.erase("secret", reason=REASON)

        assert pg_found(schema, marks) == []
        assert [e.session_id for e in app.erasures()] == ["secret"]
    finally:
        app.close()
