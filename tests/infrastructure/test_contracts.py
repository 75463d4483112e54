"""Every port's contract cases, against every registered backend."""

from __future__ import annotations

import base64
from functools import partial
from typing import TYPE_CHECKING, Any

import pytest
from eventsourcing.persistence import StoredEvent
from psycopg import sql

from agentlog.application import Sessions
from agentlog.infrastructure.backends import BACKENDS
from agentlog.infrastructure.backends.postgres.recorders import WRITE_FUNCTION
from agentlog.infrastructure.key_store_setup import open_key_store
from agentlog.infrastructure.store_url import parse_store_url
from tests.conftest import PG_URL, backend_env, postgres_schema
from tests.infrastructure.contracts.keystore_cases import KeyStoreCases
from tests.infrastructure.contracts.listing_cases import ListingCases
from tests.infrastructure.contracts.recorder_cases import SessionRecorderCases
from tests.infrastructure.contracts.view_cases import ROWS, ViewCases

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from agentlog.infrastructure.crypto import MasterKey
    from agentlog.infrastructure.keystore import KeyStore

STORES = {"memory": "popo", "sqlite": "sqlite", "postgres": "postgres"}
"""A test store per registered backend (``tests.conftest.backend_env``)."""
NAMES = [backend.name for backend in BACKENDS]
MASTER = base64.b64encode(bytes(range(32))).decode()


def test_every_registered_backend_has_a_test_store() -> None:
    assert sorted(STORES) == sorted(NAMES)


@pytest.fixture(params=NAMES)
def store_app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Sessions]:
    for env in backend_env(STORES[request.param], tmp_path):
        app = Sessions(env=env)
        try:
            yield app
        finally:
            app.close()


@pytest.fixture(params=["plain", "sealed"])
def view_app(
    request: pytest.FixtureRequest, store_app: Sessions, tmp_path: Path
) -> Iterator[Sessions]:
    """The backend's store, with its views plain or sealed (encryption on)."""
    if request.param == "plain":
        yield store_app
        return
    env = dict(store_app.env)
    env |= {"AGENTLOG_ENCRYPTION": "per-session", "AGENTLOG_MASTER_KEY": MASTER}
    stores = key_store_url(
        "memory" if "popo" in env["PERSISTENCE_MODULE"] else "sqlite", tmp_path
    )
    for url in stores:
        app = Sessions(env={**env, "AGENTLOG_KEYSTORE": url})
        try:
            yield app
        finally:
            app.close()


def view_of(app: Sessions, kind: str) -> Any:
    backend = type(app.factory).backend  # type: ignore[attr-defined]
    return app.factory.tracking_recorder(getattr(backend.view_classes(), kind))


class TestSessionRecorder(SessionRecorderCases):
    @pytest.fixture
    def recorder(self, store_app: Sessions) -> Any:
        return store_app.recorder

    @pytest.fixture
    def snapshots(self, store_app: Sessions) -> Any:
        assert store_app.snapshots is not None
        return store_app.snapshots.recorder


class TestPostgresPipelinedWrites(SessionRecorderCases):
    """PostgreSQL's plain writes without the write function (dropped, as on
    tables an earlier version made with table creation turned off): the
    recorder finds it missing and pipelines them, the guard deciding in
    Python, with the same results."""

    @pytest.fixture
    def store_app(self, tmp_path: Path) -> Iterator[Sessions]:
        for env in backend_env("postgres", tmp_path):
            app = Sessions(env=env)
            try:
                yield app
            finally:
                app.close()

    @pytest.fixture
    def recorder(self, store_app: Sessions) -> Any:
        recorder = store_app.recorder
        with recorder.datastore.get_connection() as connection:  # type: ignore[attr-defined]
            connection.execute(
                sql.SQL("DROP FUNCTION {0}.{1}").format(
                    sql.Identifier(recorder.datastore.schema),  # type: ignore[attr-defined]
                    sql.Identifier(WRITE_FUNCTION),
                )
            )
        return recorder

    @pytest.fixture
    def snapshots(self, store_app: Sessions) -> Any:
        assert store_app.snapshots is not None
        return store_app.snapshots.recorder

    def test_a_missing_write_function_turns_to_the_pipelined_write(
        self, recorder: Any
    ) -> None:
        assert recorder.writes_in_one_statement
        recorder.insert_events([StoredEvent("a", 1, "t", b"a1")])
        assert not recorder.writes_in_one_statement
        assert [e.originator_version for e in recorder.select_events("a")] == [1]


class TestViews(ViewCases):
    @pytest.fixture(params=sorted(ROWS))
    def kind(self, request: pytest.FixtureRequest) -> str:
        return str(request.param)

    @pytest.fixture
    def view(self, view_app: Sessions, kind: str) -> Any:
        return view_of(view_app, kind)

    @pytest.fixture
    def row(self, kind: str) -> Callable[[str, int], Any]:
        return ROWS[kind]


class TestListing(ListingCases):
    @pytest.fixture
    def listing(self, view_app: Sessions) -> Any:
        return view_of(view_app, "listing")

    @pytest.fixture
    def lineage(self, view_app: Sessions) -> Any:
        return view_of(view_app, "lineage")


def key_store_url(name: str, tmp_path: Path) -> Iterator[str]:
    if name == "memory":
        yield "memory:"
    elif name == "sqlite":
        yield f"sqlite:///{tmp_path / 'keys.db'}"
    else:
        for schema in postgres_schema("k_"):
            yield f"{PG_URL}?schema={schema}"


class TestKeyStore(KeyStoreCases):
    @pytest.fixture(params=NAMES)
    def open_store(
        self, request: pytest.FixtureRequest, tmp_path: Path
    ) -> Iterator[Callable[[MasterKey], KeyStore]]:
        self.shared = request.param != "memory"
        for url in key_store_url(request.param, tmp_path):
            assert parse_store_url(url).env["PERSISTENCE_MODULE"]

            yield partial(open_key_store, url)
