"""The current surface of a stored session, read a chunk of rows at a time.

``SessionQuery.read_surface`` folds the whole log in memory; for a very long
session that is the log's size. The stored aggregate already holds the surface's
node seqs (from its latest snapshot plus the tail), so the surface rows can be
read by seq, a chunk at a time, in model-history order, and written out as they
come: memory is one chunk of events plus the node list, whatever the log's length.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentlog.domain.errors import EventNotFoundError
from agentlog.domain.json import copy_json

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from eventsourcing.persistence import StoredEvent

    from agentlog.application.sessions import Sessions
    from agentlog.domain.json import Envelope

CHUNK = 500
"""Surface events read (and held) at a time."""


@dataclass(frozen=True)
class SurfaceStream:
    """``read_surface``'s fields, with the events as an iterator."""

    session: dict[str, Any]
    captured_through_seq: int | None
    events: Iterator[Envelope]


def stored_surface(
    app: Sessions,
    session_id: str,
    rows_at: Callable[[str, list[int]], Sequence[StoredEvent]],
    decode: Callable[[StoredEvent], Envelope],
    at: int | None = None,
) -> SurfaceStream:
    """The stored session's surface (``at``: as of that seq, see
    :mod:`~agentlog.application.as_of`); rows are read while the iterator is
    consumed."""
    aggregate = app.load_aggregate(session_id, at=at)
    if at is not None and aggregate.seq <= at:
        raise EventNotFoundError(session_id, at)
    seqs = aggregate.surface.seqs
    captured = aggregate.seq - 1 if aggregate.seq else None

    def events() -> Iterator[Envelope]:
        for start in range(0, len(seqs), CHUNK):
            chunk = seqs[start : start + CHUNK]
            rows = rows_at(session_id, sorted(chunk))
            by_seq = {row.originator_version - 2: row for row in rows}
            for seq in chunk:
                yield decode(by_seq[seq])

    return SurfaceStream(copy_json(aggregate.header), captured, events())
