"""Encryption settings: every mistake is a typed error when the store is opened,
one line on the command line, and no key is ever printed."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentlog import EncryptionError, Sessions
from agentlog.infrastructure.key_store_setup import encryption_settings
from tests.conftest import PG_URL
from tests.crypto.conftest import new_master_key
from tests.crypto.test_round_trip import write


def sqlite_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": str(tmp_path / "a.db"),
        "AGENTLOG_ENCRYPTION": "per-session",
        **extra,
    }


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ({}, "needs AGENTLOG_MASTER_KEY"),
        ({"AGENTLOG_MASTER_KEY": "%%%"}, "not valid base64"),
        ({"AGENTLOG_MASTER_KEY": base64.b64encode(b"x" * 8).decode()}, "8 bytes"),
        ({"AGENTLOG_ENCRYPTION": "everything"}, "must be 'per-session' or 'off'"),
        ({"CIPHER_KEY": "abc"}, "set only one of them"),
    ],
)
def test_a_bad_setting_is_refused_before_anything_opens(
    tmp_path: Path, extra: dict[str, str], reason: str
) -> None:
    env = sqlite_env(tmp_path, AGENTLOG_MASTER_KEY=new_master_key())
    env.pop("AGENTLOG_MASTER_KEY")
    env.update(extra)
    with pytest.raises(EncryptionError, match=reason) as caught:
        Sessions(env=env)
    assert not (tmp_path / "a.db").exists()
    key = env.get("AGENTLOG_MASTER_KEY")
    if key:
        assert key not in str(caught.value)


def test_encryption_off_is_the_default() -> None:
    assert encryption_settings({}) is None
    assert encryption_settings({"AGENTLOG_ENCRYPTION": "off"}) is None


def test_postgres_needs_a_key_store_outside_its_schema() -> None:
    env = {
        "PERSISTENCE_MODULE": "eventsourcing.postgres",
        "AGENTLOG_ENCRYPTION": "per-session",
        "AGENTLOG_MASTER_KEY": new_master_key(),
    }
    with pytest.raises(EncryptionError, match="needs AGENTLOG_KEYSTORE"):
        encryption_settings(env)


def test_the_event_store_itself_is_refused_as_key_store(tmp_path: Path) -> None:
    env = sqlite_env(
        tmp_path,
        AGENTLOG_MASTER_KEY=new_master_key(),
        AGENTLOG_KEYSTORE=f"sqlite:///{tmp_path / 'a.db'}",
    )
    with pytest.raises(EncryptionError, match="is the event store itself"):
        Sessions(env=env)


def test_the_same_postgres_schema_is_refused_as_key_store() -> None:
    from agentlog.infrastructure.crypto import MasterKey
    from agentlog.infrastructure.key_store_setup import open_key_store
    from agentlog.infrastructure.store_url import parse_store_url

    events = parse_store_url(f"{PG_URL}?schema=events").env
    events["PERSISTENCE_MODULE"] = (
        "agentlog.infrastructure.backends.postgres.factory:AgentlogPostgresFactory"
    )
    master = MasterKey.from_base64(new_master_key())
    with pytest.raises(EncryptionError, match="is the event store itself"):
        open_key_store(f"{PG_URL}?schema=events", master, events)


def test_a_wrong_master_key_is_refused_at_open(tmp_path: Path) -> None:
    right, wrong = new_master_key(), new_master_key()
    app = Sessions(env=sqlite_env(tmp_path, AGENTLOG_MASTER_KEY=right))
    write(app, "s1")
    app.close()
    with pytest.raises(EncryptionError, match="does not open the key store") as caught:
        Sessions(env=sqlite_env(tmp_path, AGENTLOG_MASTER_KEY=wrong))
    assert right not in str(caught.value) and wrong not in str(caught.value)


def run_cli(
    tmp_path: Path, *args: str, database: str = "a.db", **env: str
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLOG_")}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "agentlog.infrastructure.cli",
            "--store",
            f"sqlite:///{tmp_path / database}",
            *args,
        ],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_the_cli_says_one_line_and_never_the_key(tmp_path: Path) -> None:
    right, wrong = new_master_key(), new_master_key()
    app = Sessions(env=sqlite_env(tmp_path, AGENTLOG_MASTER_KEY=right))
    write(app, "s1")
    app.close()
    on = {"AGENTLOG_ENCRYPTION": "per-session"}
    ok = run_cli(tmp_path, "messages", "s1", **on, AGENTLOG_MASTER_KEY=right)
    assert ok.returncode == 0, ok.stderr
    assert "MARKER-prompt" in ok.stdout
    for env, reason in (
        ({**on, "AGENTLOG_MASTER_KEY": wrong}, "does not open the key store"),
        (on, "needs AGENTLOG_MASTER_KEY"),
        ({**on, "AGENTLOG_MASTER_KEY": "not!base64"}, "not valid base64"),
        ({}, "is encrypted"),
    ):
        failed = run_cli(tmp_path, "messages", "s1", **env)
        assert failed.returncode == 1, failed
        lines = failed.stderr.strip().splitlines()
        assert len(lines) == 1 and reason in lines[0], failed.stderr
        assert "Traceback" not in failed.stderr
        for secret in (right, wrong):
            assert secret not in failed.stderr and secret not in failed.stdout


def test_a_bad_key_store_url_is_typed(tmp_path: Path) -> None:
    from agentlog import StoreURLError

    env = sqlite_env(
        tmp_path, AGENTLOG_MASTER_KEY=new_master_key(), AGENTLOG_KEYSTORE="ftp://x"
    )
    with pytest.raises(StoreURLError, match="invalid store URL"):
        Sessions(env=env)


def test_an_unreachable_key_store_is_typed_and_masks_its_password(
    tmp_path: Path,
) -> None:
    from agentlog import StoreUnavailableError

    env = sqlite_env(
        tmp_path,
        AGENTLOG_MASTER_KEY=new_master_key(),
        AGENTLOG_KEYSTORE="postgresql://u:hunter2@127.0.0.1:1/keys?connect_timeout=2",
    )
    with pytest.raises(StoreUnavailableError) as caught:
        Sessions(env=env)
    assert "hunter2" not in str(caught.value)
    # It names the key store, not the event store: the user knows which URL to fix.
    assert str(caught.value).startswith(
        "cannot reach the PostgreSQL key store postgresql://u:***@127.0.0.1:1/keys: "
    )


def test_settings_never_show_a_secret() -> None:
    key = new_master_key()
    settings = encryption_settings(
        {
            "AGENTLOG_ENCRYPTION": "per-session",
            "AGENTLOG_MASTER_KEY": key,
            "AGENTLOG_KEYSTORE": "postgresql://u:hunter2@h/db?schema=k",
        }
    )
    assert settings is not None
    assert "hunter2" not in repr(settings) and key not in repr(settings)
