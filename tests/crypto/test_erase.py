"""Crypto-shredding through ``Sessions.erase`` (issue 15's test): a copy of the
database taken before the erase, opened after it with the key store as it is then,
cannot decrypt the erased session; other sessions read fine. The audit (the
tombstone) outlives the key, and retention forgets keys as it erases."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agentlog import SessionNotFoundError, SessionQuery, SessionQueryError
from agentlog.application import Sessions
from agentlog.infrastructure.crypto import MasterKey
from agentlog.infrastructure.key_store_setup import open_key_store
from tests.crypto.conftest import keystore_of
from tests.crypto.test_round_trip import SECRETS, write
from tests.crypto.test_shredding import backup_sqlite

if TYPE_CHECKING:
    from collections.abc import Callable


def key_exists(env: dict[str, str], session_id: str) -> bool:
    store = open_key_store(
        keystore_of(env), MasterKey.from_base64(env["AGENTLOG_MASTER_KEY"])
    )
    try:
        return store.data_key(session_id) is not None
    finally:
        store.close()


def test_erase_forgets_the_key_so_an_older_copy_stays_sealed(
    crypto_env: dict[str, str], open_app: Callable[..., Sessions], tmp_path: Path
) -> None:
    app = open_app(AGENTLOG_SNAPSHOT_INTERVAL="5")
    write(app, "erased")
    write(app, "kept", "kept prompt", "kept answer", "kept output")
    assert app.snapshots is not None
    if crypto_env["PERSISTENCE_MODULE"] == "eventsourcing.sqlite":
        copy = tmp_path / "before-erase.db"
        backup_sqlite(crypto_env["SQLITE_DBNAME"], copy)
    # Every backend: the rows as any copy holds them.
    rows = [
        *app.recorder.select_events("erased"),
        *app.snapshots.recorder.select_events("erased"),
    ]
    [erasure] = app.erase("erased", reason="customer request")
    assert not key_exists(crypto_env, "erased")
    assert key_exists(crypto_env, "kept")
    # The audit reads after the key is gone: the tombstone is never sealed.
    assert [(e.session_id, e.reason) for e in app.erasures()] == [
        ("erased", "customer request")
    ]
    assert erasure.session_id == "erased"
    fresh = open_app()
    for row in rows:
        with pytest.raises(SessionNotFoundError):
            fresh.mapper.to_domain_event(row)
    assert fresh.read_events("kept")[1]["data"]["content"][0]["text"] == "kept prompt"
    if crypto_env["PERSISTENCE_MODULE"] != "eventsourcing.sqlite":
        return
    restored = open_app(
        SQLITE_DBNAME=str(copy), AGENTLOG_KEYSTORE=keystore_of(crypto_env)
    )
    assert not restored.is_erased("erased")  # the copy predates the tombstone
    with pytest.raises(SessionNotFoundError, match='session "erased" not found'):
        restored.read_events("erased")
    with pytest.raises(SessionNotFoundError):
        restored.messages("erased")
    with pytest.raises(SessionQueryError) as caught:
        SessionQuery(restored).read_surface("erased")
    assert caught.value.code == SessionQueryError.SESSION_NOT_FOUND
    assert (
        restored.read_events("kept")[1]["data"]["content"][0]["text"] == "kept prompt"
    )
    for secret in SECRETS:
        assert secret.encode() not in b"".join(
            row.state for row in restored.recorder.select_events("erased")
        )


def test_retention_forgets_the_keys_of_what_it_erases(
    crypto_env: dict[str, str],
) -> None:
    old = Sessions(env=crypto_env, clock=lambda: 1_000)
    try:
        write(old, "old")
    finally:
        old.close()
    app = Sessions(env=crypto_env)
    try:
        write(app, "new", "new prompt", "new answer", "new output")
        report = app.erase_older_than(5_000, reason="retention")
        assert report.erased == ["old"]
        assert not key_exists(crypto_env, "old")
        assert key_exists(crypto_env, "new")
        assert app.read_events("new")[1]["data"]["content"][0]["text"] == "new prompt"
    finally:
        app.close()


@pytest.mark.slow
def test_cli_erase_shreds_and_leaves_no_key_bytes(
    crypto_env: dict[str, str], tmp_path: Path
) -> None:
    """``agentlog erase`` on an encrypted SQLite store: the wrapped key is gone
    from the key store file and its WAL, and the other session's key stays."""
    import sqlite3

    from tests.crypto.test_settings import run_cli

    if crypto_env["PERSISTENCE_MODULE"] != "eventsourcing.sqlite":
        pytest.skip("the key store's files are SQLite's")
    app = Sessions(env=crypto_env)
    try:
        write(app, "erased")
        write(app, "kept", "kept prompt", "kept answer", "kept output")
    finally:
        app.close()
    keys = keystore_of(crypto_env).removeprefix("sqlite:///")
    with sqlite3.connect(keys) as db:
        wrapped = dict(
            db.execute("SELECT session_id, wrapped_key FROM agentlog_data_keys")
        )
    db.close()
    files = [keys, f"{keys}-wal"]
    on = {k: v for k, v in crypto_env.items() if k.startswith("AGENTLOG_")}
    store = tmp_path / "agentlog.db"
    assert crypto_env["SQLITE_DBNAME"] == str(store)
    done = run_cli(
        tmp_path, "erase", "erased", "--reason", "request", database=store.name, **on
    )
    assert done.returncode == 0, done.stderr
    assert crypto_env["AGENTLOG_MASTER_KEY"] not in done.stdout + done.stderr
    held = b"".join(Path(f).read_bytes() for f in files if os.path.exists(f))
    assert wrapped["erased"] not in held
    assert wrapped["kept"] in held
    shown = run_cli(tmp_path, "messages", "erased", database=store.name, **on)
    assert shown.returncode == 1 and 'session "erased" not found' in shown.stderr
