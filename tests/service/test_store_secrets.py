"""Typed failures of a store's settings (issue 21): no password in any message,
PostgreSQL's reserved schemas refused before anything is created, the in-memory
key store the default beside the in-memory store."""

from __future__ import annotations

import base64
import os

import pytest

from agentlog.application import Sessions
from agentlog.domain.errors import AgentlogError, StoreURLError
from agentlog.infrastructure.store_url import mask_url, parse_store_url

SECRET = "s3cr3t-Pa55"


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://u:{SECRET}@h/db?password={SECRET}",
        f"postgresql://u@h/db?password={SECRET}",
        f"postgresql://u@h/db?schema=a&password={SECRET}&sslmode=bogus",
        f"postgresql://u@h/db?sslpassword={SECRET}&x=1",
        f"postgresql://u@h/db?PASSWORD={SECRET}",
    ],
)
def test_no_password_reaches_a_store_url_error(url: str) -> None:
    with pytest.raises(StoreURLError) as caught:
        parse_store_url(url)
    assert SECRET not in str(caught.value)
    assert SECRET not in mask_url(url)


def test_mask_url_keeps_everything_else() -> None:
    assert mask_url("postgresql://u@h/db?schema=a&password=x&sslmode=require") == (
        "postgresql://u@h/db?schema=a&password=***&sslmode=require"
    )


@pytest.mark.parametrize(
    "schema", ["pg_catalog", "information_schema", "pg_toast", "pg_temp_1"]
)
def test_reserved_schemas_are_refused(schema: str) -> None:
    with pytest.raises(StoreURLError, match="reserved by PostgreSQL"):
        Sessions(store=f"postgresql://postgres@127.0.0.1/test?schema={schema}")


@pytest.mark.parametrize("store", ["memory:", None])
def test_the_memory_key_store_is_the_default_beside_memory(store: str | None) -> None:
    env = {
        "AGENTLOG_ENCRYPTION": "per-session",
        "AGENTLOG_MASTER_KEY": base64.b64encode(os.urandom(32)).decode(),
    }
    try:
        app = Sessions(store=store, env=env)
    except AgentlogError as error:  # pragma: no cover - the failure shown
        pytest.fail(str(error))
    try:
        handle = app.create_session(cwd="/w")
        app.flush(handle)
        assert app.header(handle.id)["cwd"] == "/w"
    finally:
        app.close()
