"""The in-memory application recorder: the library's POPO recorder, plus the
write guard and erasure, so the in-memory store behaves as SQLite and
PostgreSQL do."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from eventsourcing.persistence import Notification, StoredEvent

from agentlog.infrastructure.eventsourcing_seam import (
    POPORecorderSeam,
    popo_drop_below,
    popo_drop_between,
    popo_lock,
    popo_stream_index,
)
from agentlog.infrastructure.recorders import check_continues, first_versions

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentlog.infrastructure.recorders import Purge, Row


class POPOSessionRecorder(POPORecorderSeam):
    """The library's in-memory recorder, plus the write guard and erasure.

    An erased row's slot in the notification list holds ``None``: notification
    ids are list positions, so the list never shrinks.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pending: dict[str, None] = {}
        """The erased sessions whose after-work is pending, in erase order."""

    def check_writes(self, stored_events: Sequence[StoredEvent]) -> None:
        for session_id, first in first_versions(stored_events).items():
            index = popo_stream_index(self, session_id)
            check_continues(
                session_id,
                first,
                partial(self._row, index),
                partial(self._top, index),
            )

    def _top(self, index: dict[int, int]) -> Row | None:
        return self._row(index, next(reversed(index), 0))

    def _row(self, index: dict[int, int], version: int) -> Row | None:
        position = index.get(version)
        if position is None:
            return None
        row = self.row_at(position)
        return None if row is None else (version, row.topic)

    def erase_streams(
        self,
        tombstones: Sequence[StoredEvent],
        purge: Purge,
        snapshots: Any | None,
    ) -> None:
        with self.database_lock:
            self.insert_locked(tombstones)
            purge(None)
            for tombstone in tombstones:
                key = str(tombstone.originator_id)
                popo_drop_below(self, key, tombstone.originator_version)
                if snapshots is not None:
                    with popo_lock(snapshots):
                        popo_drop_below(snapshots, key, None)
                self._pending[key] = None
        self.notify()

    def erase_snapshots(self, snapshots: Any, session_ids: Sequence[str]) -> None:
        with popo_lock(snapshots):
            for key in session_ids:
                popo_drop_below(snapshots, key, None)

    def replace_snapshot(self, snapshots: Any, row: StoredEvent, since: int) -> None:
        """Store the snapshot ``row`` and drop its session's snapshots at versions
        from ``since`` up to below it (docs/persistence.md#snapshots)."""
        snapshots.insert_events([row])
        with popo_lock(snapshots):
            popo_drop_between(
                snapshots, str(row.originator_id), since, row.originator_version
            )

    def erase_pending(self, limit: int) -> list[str]:
        with self.database_lock:
            return list(self._pending)[:limit]

    def erase_done(self, session_ids: Sequence[str]) -> None:
        with self.database_lock:
            for key in session_ids:
                self._pending.pop(key, None)

    def select_notifications(
        self,
        start: int | None,
        limit: int,
        stop: int | None = None,
        topics: Sequence[str] = (),
        *,
        inclusive_of_start: bool = True,
    ) -> Sequence[Notification]:
        """The library's read, skipping erased slots."""
        with self.database_lock:
            first = 1 if start is None else start + (0 if inclusive_of_start else 1)
            last = self.row_count() if stop is None else stop
            found: list[Notification] = []
            for position in range(max(first, 1), last + 1):
                if position > self.row_count() or len(found) == limit:
                    break
                row = self.row_at(position - 1)
                if row is None or (topics and row.topic not in topics):
                    continue
                found.append(
                    Notification(
                        id=position,
                        originator_id=row.originator_id,
                        originator_version=row.originator_version,
                        topic=row.topic,
                        state=row.state,
                    )
                )
            return found
