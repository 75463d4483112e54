"""As-of reads: a session's surface, and so its messages, as it was after any event.

The surface after event ``seq`` is the aggregate's decision state at that version.
The repository replays it from the latest snapshot at or before that version, so
nothing is copied (no fork) and only the rows after that snapshot are read. A live
session's unflushed events are folded on top of the stored state at its last
flushed event (docs/surface.md#as-of-reads).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentlog.domain.errors import EventNotFoundError
from agentlog.domain.events import SessionEvent
from agentlog.domain.json import copy_json
from agentlog.domain.surface import Surface

if TYPE_CHECKING:
    from agentlog.application.sessions import Sessions
    from agentlog.domain.json import Envelope


@dataclass(frozen=True, slots=True)
class SurfaceAsOf:
    """The surface node seqs after event ``seq``, and the unflushed events among
    them (by seq) that the store does not hold yet."""

    header: dict[str, Any]
    seq: int
    nodes: list[int]
    pending: dict[int, Envelope]


def surface_as_of(app: Sessions, session_id: str, seq: int) -> SurfaceAsOf:
    """The surface right after event ``seq``; a seq past the log raises
    :class:`EventNotFoundError`, an unknown session ``SessionNotFoundError``."""
    live = app.live_session(session_id)
    if live is not None:
        aggregate = live.aggregate
        if seq >= aggregate.seq:
            raise EventNotFoundError(session_id, seq)
        header = live.header
        unflushed = [e for e in aggregate.pending_events if isinstance(e, SessionEvent)]
        stored_end = unflushed[0].seq if unflushed else aggregate.seq
        if seq >= stored_end:
            surface = (
                app.load_aggregate(session_id, at=stored_end - 1).surface
                if stored_end
                else Surface()
            )
            pending: dict[int, Envelope] = {}
            for event in unflushed:
                if event.seq > seq:
                    break
                surface.apply(event.envelope)
                pending[event.seq] = event.envelope
            return SurfaceAsOf(header, seq, surface.seqs, pending)
    stored = app.load_aggregate(session_id, at=seq)
    if stored.seq <= seq:
        raise EventNotFoundError(session_id, seq)
    header = copy_json(stored.header) if live is None else header
    return SurfaceAsOf(header, seq, stored.surface.seqs, {})


def events_of(
    app: Sessions, session_id: str, state: SurfaceAsOf, seqs: list[int]
) -> list[Envelope]:
    """The events at ``seqs`` (nodes of ``state``), read by seq: only these rows."""
    stored = sorted(seq for seq in seqs if seq not in state.pending)
    found = {
        row.originator_version - 2: app.stored_log.envelope(row)
        for row in app.history.rows_at(session_id, stored)
    }
    for seq in seqs:
        if seq in state.pending:
            found[seq] = copy_json(state.pending[seq])
    return [found[seq] for seq in seqs]


__all__ = ["SurfaceAsOf", "events_of", "surface_as_of"]
