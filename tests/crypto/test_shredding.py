"""Crypto-shredding (issue 15): a copy of the database taken before a session's
key is forgotten, opened afterwards with the key store as it is then, cannot
decrypt that session; every other session reads fine.

These tests forget keys directly (``Sessions.forget_keys``: shredding without
erasing, the rows stay); ``test_erase.py`` does the same through ``Sessions.erase``."""

from __future__ import annotations

import logging
import sqlite3
from typing import TYPE_CHECKING

import pytest

from agentlog import (
    SessionForkError,
    SessionKeyForgottenError,
    SessionNotFoundError,
    SessionQuery,
    SessionQueryError,
)
from agentlog.application import Sessions
from agentlog.application.catch_up import views_of
from tests.crypto.conftest import keystore_of
from tests.crypto.test_round_trip import SECRETS, write

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path


def backup_sqlite(database: str, copy: Path) -> None:
    """A consistent copy of a live SQLite database (the backup API, WAL included)."""
    source, target = sqlite3.connect(database), sqlite3.connect(copy)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()


def test_a_backup_taken_before_the_forget_cannot_decrypt_the_session(
    crypto_env: dict[str, str], open_app: Callable[..., Sessions], tmp_path: Path
) -> None:
    if crypto_env["PERSISTENCE_MODULE"] != "eventsourcing.sqlite":
        pytest.skip("a file copy is the SQLite form of this test (see the next one)")
    app = open_app(AGENTLOG_SNAPSHOT_INTERVAL="5")
    write(app, "erased")
    write(app, "kept", "kept prompt", "kept answer", "kept output")
    copy = tmp_path / "backup.db"
    backup_sqlite(crypto_env["SQLITE_DBNAME"], copy)
    backup_env = {**crypto_env, "SQLITE_DBNAME": str(copy)}
    backup_env["AGENTLOG_KEYSTORE"] = keystore_of(crypto_env)
    before = Sessions(env=backup_env)  # the copy reads while the key exists
    assert before.read_events("erased")[1]["data"]["content"][0]["text"] == SECRETS[0]
    before.close()

    assert app.forget_keys(["erased"]) == 1
    app.close()

    restored = open_app(
        SQLITE_DBNAME=str(copy), AGENTLOG_KEYSTORE=keystore_of(crypto_env)
    )
    for read in (
        lambda: restored.read_events("erased"),
        lambda: restored.messages("erased"),
        lambda: restored.get_session("erased"),
        lambda: restored.header("erased"),
    ):
        with pytest.raises(SessionNotFoundError, match='session "erased" not found'):
            read()
    with pytest.raises(SessionForkError) as refused:
        restored.fork("erased", 10)
    assert refused.value.code == SessionForkError.SESSION_NOT_FOUND
    with pytest.raises(SessionQueryError) as caught:
        SessionQuery(restored).list_events("erased")
    assert caught.value.code == SessionQueryError.SESSION_NOT_FOUND
    assert (
        restored.read_events("kept")[1]["data"]["content"][0]["text"] == "kept prompt"
    )
    # The rows are in the copy, sealed: the text is not.
    raw = copy.read_bytes()
    for secret in SECRETS:
        assert secret.encode() not in b"".join(
            row.state for row in restored.recorder.select_events("erased")
        )
    assert b"erased" in raw


def test_rows_copied_before_the_forget_do_not_open_after_it(
    open_app: Callable[..., Sessions],
) -> None:
    """Both backends: the rows as a backup holds them, read by a fresh process."""
    app = open_app(AGENTLOG_SNAPSHOT_INTERVAL="5")
    write(app, "erased")
    write(app, "kept", "kept prompt", "kept answer", "kept output")
    assert app.snapshots is not None
    backup = {
        session_id: [
            *app.recorder.select_events(session_id),
            *app.snapshots.recorder.select_events(session_id),
        ]
        for session_id in ("erased", "kept")
    }
    app.forget_keys(["erased"])
    app.close()
    fresh = open_app()
    for row in backup["erased"]:
        with pytest.raises(SessionKeyForgottenError):
            fresh.mapper.to_domain_event(row)
    assert len([fresh.mapper.to_domain_event(row) for row in backup["kept"]]) == len(
        backup["kept"]
    )


def test_views_skip_a_session_whose_key_is_gone(
    open_app: Callable[..., Sessions], caplog: pytest.LogCaptureFixture
) -> None:
    app = open_app()
    write(app, "erased")
    write(app, "kept", "kept prompt", "kept answer", "kept output")
    app.forget_keys(["erased"])
    views = views_of(app)
    with caplog.at_level(logging.WARNING, logger="agentlog.application.projections"):
        views.rebuild()
    assert "SessionKeyForgottenError" in caplog.text
    listed = [record.header["id"] for record in SessionQuery(app).list_sessions()]
    assert listed == ["kept"]
    # Taking the session over reads it as missing, like every other read.
    with pytest.raises(SessionNotFoundError):
        app.get_session("erased")


def test_forget_without_encryption_is_a_no_op(tmp_path: Path) -> None:
    env = {
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": str(tmp_path / "p.db"),
    }
    app = Sessions(env=env)
    try:
        write(app, "s1")
        assert app.forget_keys(["s1"]) == 0
        assert len(app.read_events("s1")) == 22
    finally:
        app.close()


def test_reads_through_stale_views_of_a_forgotten_session_say_not_found(
    open_app: Callable[..., Sessions],
) -> None:
    """Views that still list a session whose key is gone (a database backup
    restored with the key store as it is after the erase, docs/encryption.md#backups):
    its reads say what a missing session's say, and a search over every session
    leaves it out. Search failed whole with 'failed to load session "erased":
    session "erased" not found', and show, event and read_surface said that too."""
    app = open_app()
    write(app, "erased")
    write(app, "kept", "kept prompt", "kept answer", "kept output")
    query = SessionQuery(app)
    assert len(query.search_sessions("again").items) == 2  # every view caught up
    app.forget_keys(["erased"])
    fresh = SessionQuery(open_app())
    assert [item.session_id for item in fresh.search_sessions("again").items] == [
        "kept"
    ]
    for read in (
        lambda q, s: q.search_events(s, "again"),
        lambda q, s: q.read_surface(s),
        lambda q, s: q.read_event(s, 1),
        lambda q, s: q.list_events(s),
    ):
        errors = []
        for session_id in ("erased", "never-was"):
            with pytest.raises(SessionQueryError) as caught:
                read(fresh, session_id)
            errors.append((caught.value.code, str(caught.value)))
        assert errors[0] == (errors[1][0], errors[1][1].replace("never-was", "erased"))
