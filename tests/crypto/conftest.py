"""Encrypted stores for the crypto tests: SQLite (key store beside the file) and
PostgreSQL (key store in a schema of its own), each with a fresh master key."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentlog.application import Sessions
from agentlog.infrastructure.crypto import MasterKey
from agentlog.infrastructure.key_store_setup import open_key_store
from agentlog.infrastructure.keystore import KeyStore
from agentlog.infrastructure.store_url import parse_store_url
from tests.conftest import PG_URL, backend_env, postgres_schema


def new_master_key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


@pytest.fixture(params=["sqlite", "postgres"])
def crypto_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def plain_env(crypto_backend: str, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The store of this test without encryption settings."""
    yield from backend_env(crypto_backend, tmp_path)


@pytest.fixture
def keystore_url(crypto_backend: str, plain_env: dict[str, str]) -> Iterator[str]:
    """SQLite: the default (``<db>.keys``); PostgreSQL: a schema of its own."""
    if crypto_backend == "sqlite":
        yield ""
        return
    for schema in postgres_schema("k_"):
        yield f"{PG_URL}?schema={schema}"


@pytest.fixture
def crypto_env(plain_env: dict[str, str], keystore_url: str) -> dict[str, str]:
    env = {
        **plain_env,
        "AGENTLOG_ENCRYPTION": "per-session",
        "AGENTLOG_MASTER_KEY": new_master_key(),
    }
    if keystore_url:
        env["AGENTLOG_KEYSTORE"] = keystore_url
    return env


@pytest.fixture
def open_app(crypto_env: dict[str, str]) -> Iterator[Callable[..., Sessions]]:
    """Open ``Sessions`` on this test's encrypted store (closed afterwards)."""
    apps: list[Sessions] = []

    def make(**env: str) -> Sessions:
        app = Sessions(env={**crypto_env, **env})
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.close()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def any_keystore_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh key store of each kind, by URL."""
    if request.param == "memory":
        yield "memory:"
    elif request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'keys.db'}"
    else:
        for schema in postgres_schema("k_"):
            yield f"{PG_URL}?schema={schema}"


@pytest.fixture
def master_text() -> str:
    return new_master_key()


@pytest.fixture
def key_store(any_keystore_url: str, master_text: str) -> Iterator[KeyStore]:
    opened = open_key_store(any_keystore_url, MasterKey.from_base64(master_text))
    yield opened
    opened.close()


def keystore_of(env: dict[str, str]) -> str:
    """The key store URL an encrypted environment uses."""
    if env.get("AGENTLOG_KEYSTORE"):
        return env["AGENTLOG_KEYSTORE"]
    return "sqlite:///" + env["SQLITE_DBNAME"] + ".keys"


def pg_kwargs(env: dict[str, str]) -> dict[str, object]:
    return {
        "dbname": env["POSTGRES_DBNAME"],
        "host": env["POSTGRES_HOST"],
        "port": env["POSTGRES_PORT"],
        "user": env["POSTGRES_USER"],
        "password": env["POSTGRES_PASSWORD"],
        "autocommit": True,
    }


__all__ = ["keystore_of", "new_master_key", "parse_store_url", "pg_kwargs"]
