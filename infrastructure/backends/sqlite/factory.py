"""The SQLite factory ``Sessions`` uses: the library's, with our recorder.

:class:`~agentlog.infrastructure.backends.sqlite.recorders.SQLiteSessionRecorder`
adds the exact reads, the stream writes, the write guard and erasure
(docs/erasure.md) to the library's SQLite recorder. An
``APPLICATION_RECORDER_TOPIC`` in the environment still wins, as in the library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from eventsourcing.sqlite import SQLiteFactory, SQLiteTrackingRecorder

from agentlog.domain.errors import StoreReadOnlyError
from agentlog.infrastructure.backends.sqlite.backend import BACKEND
from agentlog.infrastructure.backends.sqlite.opening import is_read_only, read_only_uri
from agentlog.infrastructure.backends.sqlite.recorders import (
    SQLiteSessionRecorder,
    SQLiteSnapshotRecorder,
)
from agentlog.infrastructure.backends.sqlite.tables import tables_ready
from agentlog.infrastructure.eventsourcing_seam import SecureDeleteDatastore
from agentlog.infrastructure.store_url import READ_ONLY_ENV_VAR
from agentlog.infrastructure.views.sealing_factory import SealingFactory

if TYPE_CHECKING:
    from eventsourcing.utils import Environment, EnvType

    from agentlog.infrastructure.backends.backend import Backend


class AgentlogSQLiteFactory(SealingFactory, SQLiteFactory):
    """``SQLiteFactory`` whose application recorder reads exactly and erases,
    and whose every connection runs with ``secure_delete`` on: a deleted or
    rewritten row's bytes are overwritten with zeros wherever SQLite frees them
    (cells, overflow and index pages, FTS5 segments the index merges away), not
    only when a session is erased, so no old copy of a view row or an index
    segment outlives the row (docs/erasure.md)."""

    backend: ClassVar[Backend] = BACKEND
    application_recorder_class = SQLiteSessionRecorder
    aggregate_recorder_class = SQLiteSnapshotRecorder

    def __init__(self, env: Environment | EnvType | None) -> None:
        super().__init__(env)
        library = self.datastore
        path = library.pool.db_name
        self.read_only = is_read_only(path, self.env.get(READ_ONLY_ENV_VAR, "") == "y")
        """Opened read-only: reads work, writes raise ``StoreReadOnlyError``."""
        self.datastore = SecureDeleteDatastore.like(
            library, db_name=read_only_uri(path) if self.read_only else None
        )
        library.close()

    def tracking_recorder(
        self, tracking_recorder_class: type[SQLiteTrackingRecorder] | None = None
    ) -> SQLiteTrackingRecorder:
        """The library's; on a read-only file, refused when its tables are missing."""
        recorder: SQLiteTrackingRecorder = super().tracking_recorder(
            tracking_recorder_class
        )
        if self.read_only and not tables_ready(recorder):
            raise StoreReadOnlyError.views_never_built()
        return recorder

    def env_create_table(self) -> bool:
        """Never on a read-only file (what is missing stays missing)."""
        return not self.read_only and super().env_create_table()
