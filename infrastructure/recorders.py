"""Recorders with one more read: the rows at given versions, nothing between.

Deriving messages needs only the events on the surface; a long session holds five
or more log-only rows (stream chunks, boundaries) per message. Reading exactly the
surface rows, instead of ranges that include the chunks between them, is the
difference between decoding the surface and fetching the whole log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteApplicationRecorder

if TYPE_CHECKING:
    from collections.abc import Sequence

BATCH = 500
"""Versions per statement: far below SQLite's bound on host parameters."""


class SQLiteSessionRecorder(SQLiteApplicationRecorder):
    """The library's SQLite recorder, plus :meth:`select_events_at`."""

    def select_events_at(
        self, originator_id: str, versions: Sequence[int]
    ) -> list[StoredEvent]:
        """The stored events of one stream at exactly these versions, in order."""
        rows: list[StoredEvent] = []
        with self.datastore.transaction(commit=False) as cursor:
            for start in range(0, len(versions), BATCH):
                batch = list(versions[start : start + BATCH])
                marks = ",".join("?" * len(batch))
                cursor.execute(
                    "SELECT originator_version, topic, state FROM "
                    f"{self.events_table_name} WHERE originator_id=? AND "
                    f"originator_version IN ({marks}) ORDER BY originator_version",
                    [originator_id, *batch],
                )
                rows.extend(
                    StoredEvent(
                        originator_id=originator_id,
                        originator_version=row[0],
                        topic=row[1],
                        state=row[2],
                    )
                    for row in cursor.fetchall()
                )
        return rows
