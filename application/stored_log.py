"""The one reader of a stored session's rows: its header and its events by seq.

Every read of a stored log — the application's reads, the message history, the
query's store reader — goes through :class:`StoredLog`, so a row is decoded and
checked one way everywhere: the mapper turns it into an event and checks it against
its row (``agentlog.infrastructure.mapper``), the header's version is checked by
:mod:`agentlog.domain.header`, and seqs must be contiguous
(docs/persistence.md#corruption). Loading the aggregate itself goes through the
library's repository with the same mapper.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from agentlog.domain.errors import (
    AgentlogError,
    CorruptSessionLogError,
    SessionNotFoundError,
)
from agentlog.domain.events import Erased, SessionEvent
from agentlog.domain.header import check_format_version
from agentlog.domain.session import SessionCreated, check_known_session_id

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from eventsourcing.application import Application
    from eventsourcing.persistence import ApplicationRecorder as Recorder
    from eventsourcing.persistence import Mapper, StoredEvent

    from agentlog.domain.json import Envelope

VERSION_MAX = 2**63 - 1
"""The largest stored version a store's signed 64-bit column can bind."""

Place = tuple[str, int]
"""``(session id, seq)``: where one event of a stored log is."""


@runtime_checkable
class PlaceReader(Protocol):
    """A recorder that reads rows of many streams in one statement
    (``agentlog.infrastructure.recorders``)."""

    def select_events_at_places(
        self, places: Sequence[tuple[str, int]]
    ) -> Sequence[StoredEvent]:
        """The rows at these ``(originator id, version)`` places, any order."""
        ...  # pragma: no cover


@runtime_checkable
class SnapshotTailReader(Protocol):
    """A recorder that reads a stream's latest snapshot and the events after
    it in one statement (``backends.postgres.recorders``): a load of a stored
    session in one round trip, not the library's two."""

    def select_snapshot_and_events(
        self, snapshots: object, originator_id: str, lte: int | None = None
    ) -> tuple[StoredEvent | None, Sequence[StoredEvent]] | None:
        """The latest row of the recorder ``snapshots`` at or below ``lte`` and
        this recorder's rows after it up to ``lte``, in order; ``None``: it
        cannot read ``snapshots`` with them (read them as the library does)."""
        ...  # pragma: no cover


@dataclass(frozen=True, slots=True)
class PlacedEvents:
    """What :meth:`StoredLog.events_at` read: each place's event, or the error
    reading that one event alone raises."""

    found: Mapping[Place, Envelope] = field(default_factory=dict)
    failed: Mapping[Place, Exception] = field(default_factory=dict)

    def event(self, place: Place) -> Envelope | None:
        """The event at ``place`` as ``events(id, seq, seq)`` gives it: ``None``
        if there is none, its error raised if its row cannot be read."""
        error = self.failed.get(place)
        if error is not None:
            raise error
        return self.found.get(place)


class StoredLog:
    """Reads an application's stored sessions, decoding rows with its mapper.

    The recorder and mapper are looked up on the application at each read, so a
    recorder the application is given later (tests share one) is the one read.
    """

    def __init__(self, app: Application[Any]) -> None:
        self.app = app

    @property
    def recorder(self) -> Recorder:
        return self.app.recorder

    @property
    def mapper(self) -> Mapper[Any]:
        return self.app.mapper

    def header(self, session_id: str, *, check_version: bool = False) -> dict[str, Any]:
        """The stored header (version-1 row); its format version checked on request."""
        rows = self.recorder.select_events(session_id, lte=1, limit=1)
        if not rows:
            raise SessionNotFoundError(session_id)
        created = self.mapper.to_domain_event(rows[0])
        assert isinstance(created, SessionCreated)
        if check_version:
            check_format_version(session_id, created.header)
        return created.header

    def events(
        self,
        session_id: str,
        start: int = 0,
        last: int | None = None,
        limit: int | None = None,
    ) -> list[Envelope]:
        """The stored events with seqs ``start..last``, at most ``limit``, in order.

        A missing seq in between is corruption (``has a seq gap at seq N``); an
        erased session is a missing one.
        """
        if last is not None and last < start:
            return []
        # Event seq n is stored at version n + 2; a bound past the largest
        # version a store can hold (a signed 64-bit column) selects nothing more.
        rows = self.recorder.select_events(
            session_id,
            gt=min(start + 1, VERSION_MAX),
            lte=None if last is None else min(last + 2, VERSION_MAX),
            limit=limit,
        )
        events = []
        for expected, row in enumerate(rows, start=start + 2):
            if row.topic == Erased.TOPIC:
                # Only an erased stream has a tombstone (docs/erasure.md).
                raise SessionNotFoundError(session_id)
            if row.originator_version != expected:
                msg = (
                    f'corrupt session log: session "{session_id}" has a seq gap at '
                    f"seq {expected - 2}"
                )
                raise CorruptSessionLogError(
                    msg, session_id=session_id, seq=expected - 2
                )
            events.append(self.envelope(row))
        return events

    def events_at(self, places: Iterable[Place]) -> PlacedEvents:
        """The events at these places, from every session at once.

        One statement on SQLite and PostgreSQL (a page of search hits is one
        round trip, not one per hit). Each place reads as ``events(id, seq,
        seq)`` would: a place of a session never stored (an id no store can
        hold, with NUL or a lone surrogate, included) or erased (its rows are
        deleted), or a seq out of range, reads nothing; a row that cannot be
        read (corrupt, its session's key forgotten) fails that place only.
        """
        wanted = {place for place in places if _readable(place)}
        if not wanted:
            return PlacedEvents()
        rows = self._rows_at(sorted(wanted))
        found: dict[Place, Envelope] = {}
        failed: dict[Place, Exception] = {}
        for row in rows:
            place = (str(row.originator_id), row.originator_version - 2)
            if place not in wanted:
                continue
            if row.topic == Erased.TOPIC:
                # A tombstone at the very place reads as ``events`` reads it.
                failed[place] = SessionNotFoundError(place[0])
                continue
            try:
                found[place] = self.envelope(row)
            except Exception as error:  # raised by event(place)
                failed[place] = error
        return PlacedEvents(found, failed)

    def _rows_at(self, places: Sequence[Place]) -> Sequence[StoredEvent]:
        """The rows at these places: one statement where the recorder can,
        else (another recorder class) one read per place."""
        recorder = self.recorder
        versions = [(session_id, seq + 2) for session_id, seq in places]
        if isinstance(recorder, PlaceReader):
            return recorder.select_events_at_places(versions)
        return [
            row
            for session_id, version in versions
            for row in recorder.select_events(session_id, gt=version - 1, lte=version)
        ]

    def envelope(self, row: StoredEvent) -> Envelope:
        """One event row as its envelope, checked against the row by the mapper.

        A mapper that decodes an event row straight to its checked envelope
        (agentlog's) is asked for just that: no event object is built for a row
        read only to be shown (a third of a surface row's decoding time).
        """
        mapper = self.mapper
        decode = getattr(mapper, "decode_envelope", None)
        if decode is not None and row.originator_version >= 2:
            envelope: Envelope = decode(row)
            return envelope
        event = mapper.to_domain_event(row)
        assert isinstance(event, SessionEvent)
        return event.envelope


def _readable(place: Place) -> bool:
    """Whether a place could hold a stored event: a storable session id (the
    rule of ``check_known_session_id``) and a seq whose version a store can
    bind. Any other place reads nothing, as an id never stored does."""
    session_id, seq = place
    if type(seq) is not int or not 0 <= seq <= VERSION_MAX - 2:
        return False
    try:
        check_known_session_id(session_id)
    except AgentlogError:
        return False
    return True
