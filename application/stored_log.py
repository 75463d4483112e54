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

from typing import TYPE_CHECKING, Any

from agentlog.domain.errors import CorruptSessionLogError, SessionNotFoundError
from agentlog.domain.events import Erased, SessionEvent
from agentlog.domain.header import check_format_version
from agentlog.domain.session import SessionCreated

if TYPE_CHECKING:
    from eventsourcing.application import Application
    from eventsourcing.persistence import ApplicationRecorder as Recorder
    from eventsourcing.persistence import Mapper, StoredEvent

    from agentlog.domain.json import Envelope

VERSION_MAX = 2**63 - 1
"""The largest stored version a store's signed 64-bit column can bind."""


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

    def envelope(self, row: StoredEvent) -> Envelope:
        """One event row as its envelope, checked against the row by the mapper."""
        event = self.mapper.to_domain_event(row)
        assert isinstance(event, SessionEvent)
        return event.envelope
