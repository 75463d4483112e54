"""Master key rotation: every data key wrapped again under the new master key in
one transaction; the rows stay as they are; the old key opens nothing afterwards,
and a process still on it cannot add keys nobody else could open."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agentlog import EncryptionError, Sessions
from agentlog.infrastructure.crypto import MasterKey, row_context
from agentlog.infrastructure.key_store_setup import open_key_store, rotate_master_key
from tests.crypto.conftest import keystore_of, new_master_key
from tests.crypto.test_round_trip import write
from tests.crypto.test_settings import run_cli

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentlog.infrastructure.keystore import KeyStore

CONTEXT = row_context("s", 2, "t")


def test_rotate_rewraps_every_key(
    any_keystore_url: str, key_store: KeyStore, master_text: str
) -> None:
    store, keystore_url = key_store, any_keystore_url
    sealed = {}
    for i in range(30):
        key = store.data_key(f"s{i}", create=True)
        assert key is not None
        sealed[f"s{i}"] = key.seal(CONTEXT, b"row")
    new = MasterKey.from_base64(new_master_key())
    assert store.rotate(new) == 30
    # This handle goes on with the new key; its cached keys are the same keys.
    assert store.data_key("s31", create=True) is not None
    if keystore_url == "memory:":
        return
    with pytest.raises(EncryptionError, match="does not open the key store"):
        open_key_store(keystore_url, MasterKey.from_base64(master_text))
    reopened = open_key_store(keystore_url, new)
    try:
        for session_id, row in sealed.items():
            key = reopened.data_key(session_id)
            assert key is not None and key.open(CONTEXT, row) == b"row"
    finally:
        reopened.close()


def test_a_process_on_the_old_key_cannot_add_keys(
    any_keystore_url: str, master_text: str
) -> None:
    keystore_url = any_keystore_url
    if keystore_url == "memory:":
        pytest.skip("a memory key store is one process's own")
    old = MasterKey.from_base64(master_text)
    stale, rotating = (
        open_key_store(keystore_url, old),
        open_key_store(keystore_url, old),
    )
    try:
        cached = stale.data_key("before", create=True)
        assert cached is not None
        rotating.rotate(MasterKey.from_base64(new_master_key()))
        assert stale.data_key("before") is cached  # what it holds still works
        with pytest.raises(EncryptionError, match="was rotated: restart"):
            stale.data_key("after", create=True)
        assert rotating.data_key("after") is None  # nothing was stored
    finally:
        stale.close()
        rotating.close()


def test_rotation_leaves_no_old_wrapping_in_the_sqlite_files(tmp_path: Path) -> None:
    path = tmp_path / "keys.db"
    old = MasterKey.from_base64(new_master_key())
    store = open_key_store(f"sqlite:///{path}", old)
    try:
        store.data_key("s1", create=True)
        with sqlite3.connect(path) as db:
            (before,) = db.execute(
                "SELECT wrapped_key FROM agentlog_data_keys"
            ).fetchone()
        db.close()
        store.rotate(MasterKey.from_base64(new_master_key()))
        files = [path, Path(f"{path}-wal")]
        held = b"".join(f.read_bytes() for f in files if f.exists())
        assert bytes(before) not in held
    finally:
        store.close()


@pytest.mark.slow
def test_the_cli_rotates_a_stores_keys(
    crypto_env: dict[str, str], open_app: Callable[..., Sessions], tmp_path: Path
) -> None:
    app = open_app()
    write(app, "s1")
    app.close()
    old, new = crypto_env["AGENTLOG_MASTER_KEY"], new_master_key()
    env = {k: v for k, v in crypto_env.items() if k.startswith("AGENTLOG_")}
    database = Path(crypto_env.get("SQLITE_DBNAME", tmp_path / "unused.db")).name
    if "SQLITE_DBNAME" not in crypto_env:
        count, _ = rotate_master_key(
            f"postgresql://{crypto_env['POSTGRES_USER']}@{crypto_env['POSTGRES_HOST']}:"
            f"{crypto_env['POSTGRES_PORT']}/{crypto_env['POSTGRES_DBNAME']}?schema="
            f"{crypto_env['POSTGRES_SCHEMA']}",
            {**env, "AGENTLOG_NEW_MASTER_KEY": new},
        )
        assert count == 1
    else:
        done = run_cli(
            tmp_path,
            "rotate-master-key",
            database=database,
            **env,
            AGENTLOG_NEW_MASTER_KEY=new,
        )
        assert done.returncode == 0, done.stderr
        assert "1 session key(s)" in done.stdout
        assert old not in done.stdout + done.stderr and new not in done.stdout
        again = run_cli(
            tmp_path,
            "rotate-master-key",
            database=database,
            **env,
            AGENTLOG_NEW_MASTER_KEY=new_master_key(),
        )
        assert again.returncode == 1
        assert "does not open the key store" in again.stderr
        assert len(again.stderr.strip().splitlines()) == 1
    with pytest.raises(EncryptionError, match="does not open the key store"):
        Sessions(env=crypto_env)
    reader = open_app(AGENTLOG_MASTER_KEY=new)
    assert len(reader.read_events("s1")) == 22


def test_rotation_needs_both_keys_and_an_existing_key_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    key = new_master_key()
    with pytest.raises(EncryptionError, match="AGENTLOG_NEW_MASTER_KEY is not valid"):
        rotate_master_key(
            url, {"AGENTLOG_MASTER_KEY": key, "AGENTLOG_NEW_MASTER_KEY": "?"}
        )
    with pytest.raises(EncryptionError, match="needs AGENTLOG_MASTER_KEY"):
        rotate_master_key(url, {"AGENTLOG_NEW_MASTER_KEY": key})
    with pytest.raises(EncryptionError, match="nothing to rotate"):
        rotate_master_key(
            url,
            {"AGENTLOG_MASTER_KEY": key, "AGENTLOG_NEW_MASTER_KEY": new_master_key()},
        )
    assert not (tmp_path / "a.db.keys").exists()
    assert keystore_of({"SQLITE_DBNAME": "x"}) == "sqlite:///x.keys"
