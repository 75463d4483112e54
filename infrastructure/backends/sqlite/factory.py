"""The SQLite factory ``Sessions`` uses: the library's, with our recorder.

:class:`~agentlog.infrastructure.backends.sqlite.recorders.SQLiteSessionRecorder`
adds the exact reads, the stream writes, the write guard and erasure
(docs/erasure.md) to the library's SQLite recorder. An
``APPLICATION_RECORDER_TOPIC`` in the environment still wins, as in the library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from eventsourcing.sqlite import SQLiteFactory

from agentlog.infrastructure.backends.sqlite.backend import BACKEND
from agentlog.infrastructure.backends.sqlite.recorders import SQLiteSessionRecorder
from agentlog.infrastructure.eventsourcing_seam import SecureDeleteDatastore

if TYPE_CHECKING:
    from eventsourcing.utils import Environment, EnvType

    from agentlog.infrastructure.backends.backend import Backend


class AgentlogSQLiteFactory(SQLiteFactory):
    """``SQLiteFactory`` whose application recorder reads exactly and erases,
    and whose every connection runs with ``secure_delete`` on: a deleted or
    rewritten row's bytes are overwritten with zeros wherever SQLite frees them
    (cells, overflow and index pages, FTS5 segments the index merges away), not
    only when a session is erased, so no old copy of a view row or an index
    segment outlives the row (docs/erasure.md)."""

    backend: ClassVar[Backend] = BACKEND
    application_recorder_class = SQLiteSessionRecorder

    def __init__(self, env: Environment | EnvType | None) -> None:
        super().__init__(env)
        library = self.datastore
        self.datastore = SecureDeleteDatastore.like(library)
        library.close()
