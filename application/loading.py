"""How a session becomes live: created new, or loaded from the store and taken over.

A stored session is rebuilt from its latest snapshot plus the tail of its events,
refusing legacy shapes on the way
(docs/persistence.md#format-versions-and-legacy-shapes). Taking a session over
makes it live in this process and repairs an open last turn (docs/repair.md).
"""

from __future__ import annotations

import logging
import uuid
from itertools import chain
from typing import TYPE_CHECKING, Any

from eventsourcing.application import AggregateNotFoundError

from agentlog.application.gc_pause import gc_paused
from agentlog.application.handle import SessionHandle
from agentlog.application.store_errors import store_errors
from agentlog.application.stored_log import SnapshotTailReader
from agentlog.domain.errors import (
    SessionAlreadyExistsError,
    SessionConflictError,
    SessionErasedError,
    SessionNotFoundError,
)
from agentlog.domain.events import SessionEvent
from agentlog.domain.header import check_format_version
from agentlog.domain.session import (
    Session,
    check_known_session_id,
    check_session_id,
    make_header,
    project_session,
)
from agentlog.domain.vocabulary import check_legacy, check_reserved_type

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

    from agentlog.application.sessions import Sessions
    from agentlog.domain.json import Envelope

REPAIR_ATTEMPTS = 5
logger = logging.getLogger(__name__)


class SessionLoader:
    """Creates live sessions, loads, takes over and repairs stored ones."""

    def __init__(self, app: Sessions) -> None:
        self.app = app

    def create(
        self,
        *,
        cwd: str | None,
        session_id: str | None,
        seed: Sequence[Mapping[str, Any]] | None,
        parent_session: str | None,
        created_at: int | None,
        seed_length: int | None,
        delegation_depth: int | None,
        owner: str | None,
        strict: bool,
        origin: str | None = None,
    ) -> SessionHandle:
        """A new live session, announced to the observers (``create_session``)."""
        app = self.app
        if session_id is None:
            session_id = str(uuid.uuid4())
        check_session_id(session_id)
        app.live.refuse(session_id)
        header = make_header(
            session_id,
            created_at=created_at,
            cwd=cwd,
            parent_session=parent_session,
            seed_length=seed_length,
            delegation_depth=delegation_depth,
            owner=owner,
            origin=origin,
            clock=app.clock,
        )
        if app.is_stored(session_id):
            msg = (
                f'session "{session_id}" already has a persisted log; load it with '
                "get_session instead of creating it"
            )
            raise SessionAlreadyExistsError(msg)
        if app.is_erased(session_id):
            raise SessionErasedError(session_id)
        aggregate = Session.create(
            session_id,
            header,
            seed=seed,
            strict=strict,
            invariants=app.invariants,
            clock=app.clock,
        )
        return app.observers.announce(self.make_live(aggregate, new=True))

    def load_aggregate(
        self,
        session_id: str,
        *,
        at: int | None = None,
        tail: dict[int, Envelope] | None = None,
    ) -> Session:
        """The stored session's decision state: latest snapshot plus the tail
        (``at``: as of that seq, from the latest snapshot at or before it).
        ``tail`` receives the tail's events by seq (a read that needs some of
        them then reads none again)."""
        check_known_session_id(session_id)
        version = None if at is None else at + 2
        project = self.project
        if tail is not None:

            def project(aggregate: Session | None, events: Any) -> Session | None:
                return self.project(aggregate, keeping(events, tail))

        try:
            with store_errors(), gc_paused():
                aggregate = self._reconstruct(session_id, version, project)
        except AggregateNotFoundError:
            raise SessionNotFoundError(session_id) from None
        assert isinstance(aggregate, Session)
        check_format_version(session_id, aggregate.header)
        if aggregate.corruption is not None:
            raise aggregate.corruption
        aggregate.invariants = self.app.invariants
        aggregate.clock = self.app.clock
        return aggregate

    def _reconstruct(
        self,
        session_id: str,
        version: int | None,
        project: Callable[[Session | None, Any], Session | None],
    ) -> Any:
        """The library's repository read, or, where the recorder reads the
        latest snapshot and the events after it in one statement
        (:class:`SnapshotTailReader`), the same fold over that one read."""
        app = self.app
        recorder = app.recorder
        snapshots = app.snapshots
        if (
            snapshots is not None
            and app.repository.cache is None
            and isinstance(recorder, SnapshotTailReader)
        ):
            read = recorder.select_snapshot_and_events(
                snapshots.recorder, session_id, version
            )
            if read is not None:
                snapshot, rows = read
                first = [] if snapshot is None else [snapshot]
                aggregate = project(
                    None, map(app.mapper.to_domain_event, chain(first, rows))
                )
                if aggregate is None:
                    raise AggregateNotFoundError(session_id)
                return aggregate
        return app.repository.get(session_id, version=version, projector_func=project)

    def make_live(self, aggregate: Session, *, new: bool = False) -> SessionHandle:
        """Make ``aggregate`` the session's live handle (the newest one wins).

        ``new`` refuses an id a usable live handle already has.
        """
        app = self.app
        app.check_writable()
        aggregate.invariants = app.invariants
        aggregate.clock = app.clock
        return app.live.enter(SessionHandle(app, aggregate), new=new)

    def project(self, aggregate: Session | None, events: Any) -> Session | None:
        """The library's projector function, refusing legacy shapes."""
        return project_session(aggregate, refusing_legacy(events))

    def get_session(self, session_id: str) -> SessionHandle:
        """The live handle, taking a stored session over (see ``Sessions``)."""
        check_known_session_id(session_id)
        app = self.app
        handle = app.live.current(session_id)
        if handle is not None:
            return handle
        for attempt in range(REPAIR_ATTEMPTS):
            aggregate = app.load_aggregate(session_id)
            handle = self.make_live(aggregate)
            if not aggregate.closers():
                return handle
            aggregate.repair()
            try:
                app.saver.flush(handle)
            except SessionConflictError:
                # Another writer appended (or repaired) first: read again.
                logger.info(
                    "repair of session %r lost a conflict; reading it again",
                    session_id,
                )
                if attempt == REPAIR_ATTEMPTS - 1:
                    raise
                continue
            logger.info("repaired session %r on take-over", session_id)
            return handle
        raise AssertionError("unreachable")  # pragma: no cover

    def repair(self, session_id: str) -> list[Envelope]:
        """Close an open stored turn now (what ``get_session`` does on take-over)."""
        check_known_session_id(session_id)
        app = self.app
        app.check_writable()
        live = app.live.get(session_id)
        if live is not None and not live.stale:
            return []
        aggregate = app.load_aggregate(session_id)
        closers = aggregate.repair()
        if closers:
            handle = SessionHandle(app, aggregate)
            app.saver.flush(handle)
            logger.info("repaired session %r (%d closer(s))", session_id, len(closers))
        return closers


def keeping(events: Iterable[Any], tail: dict[int, Envelope]) -> Iterator[Any]:
    """``events`` as they are folded, each session event's envelope kept in
    ``tail`` by seq."""
    for event in events:
        if isinstance(event, SessionEvent):
            tail[event.seq] = event.envelope
        yield event


def refusing_legacy(events: Iterable[Any]) -> Iterator[Any]:
    """Pass events through, refusing legacy shapes.

    See docs/persistence.md#format-versions-and-legacy-shapes.
    """
    for event in events:
        if isinstance(event, SessionEvent):
            envelope = event.envelope
            check_legacy(
                event.originator_id, envelope["type"], envelope["data"], event.seq
            )
            check_reserved_type(event.originator_id, envelope["type"], event.seq)
        yield event
