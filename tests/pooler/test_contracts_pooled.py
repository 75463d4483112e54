"""The ports' contract cases and the library's recorder cases, through PgBouncer
in transaction mode: the same behaviour as on a direct connection."""

from __future__ import annotations

import unittest
import uuid
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

import psycopg
import pytest
from eventsourcing.tests.persistence import ApplicationRecorderTestCase

from agentlog.application import Sessions
from agentlog.infrastructure.backends.postgres.recorders import PostgresSessionRecorder
from agentlog.infrastructure.key_store_setup import open_key_store
from tests.conftest import pg_params, postgres_schema
from tests.infrastructure.contracts.keystore_cases import KeyStoreCases
from tests.infrastructure.contracts.recorder_cases import SessionRecorderCases
from tests.infrastructure.contracts.view_cases import ROWS, ViewCases
from tests.infrastructure.test_library_cases import NOT_TIMED
from tests.pooler.conftest import pooled

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from agentlog.infrastructure.crypto import MasterKey
    from agentlog.infrastructure.keystore import KeyStore

pytestmark = pytest.mark.slow  # a PgBouncer process and PostgreSQL


@pytest.fixture
def store_app(pooled_url: str) -> Iterator[Sessions]:
    app = Sessions(store=pooled_url)
    try:
        yield app
    finally:
        app.close()


class TestPooledSessionRecorder(SessionRecorderCases):
    @pytest.fixture
    def recorder(self, store_app: Sessions) -> Any:
        return store_app.recorder

    @pytest.fixture
    def snapshots(self, store_app: Sessions) -> Any:
        assert store_app.snapshots is not None
        return store_app.snapshots.recorder


class TestPooledViews(ViewCases):
    @pytest.fixture(params=sorted(ROWS))
    def kind(self, request: pytest.FixtureRequest) -> str:
        return str(request.param)

    @pytest.fixture
    def view(self, store_app: Sessions, kind: str) -> Any:
        backend = type(store_app.factory).backend  # type: ignore[attr-defined]
        view_class = getattr(backend.view_classes(), kind)
        return store_app.factory.tracking_recorder(view_class)

    @pytest.fixture
    def row(self, kind: str) -> Callable[[str, int], Any]:
        return ROWS[kind]


class TestPooledKeyStore(KeyStoreCases):
    @pytest.fixture
    def open_store(
        self, pgbouncer_port: int
    ) -> Iterator[Callable[[MasterKey], KeyStore]]:
        self.shared = True
        for schema in postgres_schema("pgbk_"):
            yield partial(open_key_store, pooled(pgbouncer_port, schema))


@pytest.fixture(scope="class")
def class_bouncer(request: pytest.FixtureRequest, pgbouncer_port: int) -> None:
    request.cls.bouncer_port = pgbouncer_port


@pytest.mark.usefixtures("class_bouncer")
class TestPooledLibraryRecorderCases(
    ApplicationRecorderTestCase[PostgresSessionRecorder]
):
    """The library's application-recorder cases, its subscription case included
    (behind the pooler the subscription polls)."""

    bouncer_port: ClassVar[int]

    def setUp(self) -> None:
        self.schema = "pgbl_" + uuid.uuid4().hex[:16]
        with psycopg.connect(**pg_params()) as connection:
            connection.execute(f'CREATE SCHEMA "{self.schema}"')
        self.app = Sessions(store=pooled(self.bouncer_port, self.schema))
        super().setUp()

    def tearDown(self) -> None:
        super().tearDown()
        self.app.close()
        with psycopg.connect(**pg_params()) as connection:
            connection.execute(f'DROP SCHEMA "{self.schema}" CASCADE')

    def new_originator_id(self) -> str:
        return str(uuid.uuid4())

    def create_recorder(self) -> PostgresSessionRecorder:
        recorder = self.app.recorder
        assert isinstance(recorder, PostgresSessionRecorder)
        return recorder

    def test_insert_subscribe(self) -> None:
        self.optional_test_insert_subscribe()

    @unittest.skip(NOT_TIMED)
    def test_performance(self) -> None: ...

    @unittest.skip(NOT_TIMED)
    def test_concurrent_throughput(self) -> None: ...
