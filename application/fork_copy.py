"""Fork a stored session by copying its rows in the store, not re-validating them.

A stored parent's rows passed the append pipeline when they were written, so a
fork at a ``turn/end`` copies them in bulk (seqs unchanged, one transaction, see
``copy_stream`` in ``agentlog.infrastructure.recorders``) instead of decoding and
re-checking each one as a seed. Only the decision state at the boundary is
computed, from the parent's latest snapshot at or below it plus the rows after
it, read a page at a time: memory stays bounded however long the parent is.
See docs/fork.md#fork.
"""

from __future__ import annotations

import contextlib
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from eventsourcing.persistence import IntegrityError

from agentlog.domain.errors import CorruptSessionLogError, SessionForkError
from agentlog.domain.session import (
    Session,
    SessionCreated,
    SessionSnapshot,
    make_header,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from eventsourcing.application import Application
    from eventsourcing.persistence import StoredEvent

    from agentlog.domain.session import Clock

    Projector = Callable[[Session | None, Any], Session | None]

PAGE = 1000
"""Rows decoded at a time while folding the parent up to the boundary."""


@runtime_checkable
class StreamCopier(Protocol):
    """A recorder that copies a stream's rows in the database."""

    def copy_stream(
        self,
        header: StoredEvent,
        source_id: str,
        last: int,
        snapshot: tuple[Any, StoredEvent] | None = None,
        reseal: Callable[[StoredEvent], StoredEvent] | None = None,
    ) -> None: ...


@runtime_checkable
class Resealer(Protocol):
    """A mapper whose rows may be bound to their session (per-session keys)."""

    @property
    def copies_verbatim(self) -> bool: ...

    def reseal(self, stored_event: StoredEvent, session_id: str) -> StoredEvent: ...


def can_copy(app: Application[str]) -> bool:
    return isinstance(app.recorder, StreamCopier)


def state_at(
    app: Application[str], session_id: str, version: int, project: Projector
) -> Session:
    """The stored session's decision state at ``version`` (snapshot plus pages)."""
    aggregate: Session | None = None
    position = 0
    if app.snapshots is not None:
        rows = app.snapshots.recorder.select_events(
            session_id, lte=version, desc=True, limit=1
        )
        if rows:
            aggregate = project(None, [app.mapper.to_domain_event(rows[0])])
            position = 0 if aggregate is None else aggregate.version
    while position < version:
        rows = app.recorder.select_events(
            session_id, gt=position, lte=version, limit=PAGE
        )
        if not rows:
            break
        aggregate = project(aggregate, map(app.mapper.to_domain_event, rows))
        position = rows[-1].originator_version
    if aggregate is None or aggregate.version != version:
        seq = version - 2
        msg = f'corrupt session log: session "{session_id}" ends before seq {seq}'
        raise CorruptSessionLogError(msg, session_id=session_id, seq=seq)
    if aggregate.corruption is not None:
        raise aggregate.corruption
    return aggregate


def fork_by_copy(
    app: Application[str],
    source_id: str,
    last: int,
    *,
    cwd: str | None,
    child_id: str,
    project: Projector,
    clock: Clock,
    snapshot: bool,
    owner: str | None = None,
) -> Session:
    """Store the child (header plus the parent's seqs 0..``last``); its state."""
    version = last + 2
    parent = state_at(app, source_id, version, project)
    header = make_header(
        child_id,
        cwd=cwd,
        owner=owner,
        parent_session=source_id,
        seed_length=last + 1,
        clock=clock,
    )
    recorder = app.recorder
    assert isinstance(recorder, StreamCopier)
    state = {**parent.decision_state(), "header": header}
    child = Session.from_decision_state(child_id, version, state)
    created = app.mapper.to_stored_event(SessionCreated(child_id, header))
    # The child's snapshot (loading it later starts there, not at its first row)
    # commits with the copy when both tables share the datastore.
    taken: tuple[Any, StoredEvent] | None = None
    if snapshot and app.snapshots is not None:
        row = app.mapper.to_stored_event(SessionSnapshot.take(child))
        taken = (app.snapshots.recorder, row)
    shared = taken is not None and getattr(taken[0], "datastore", None) is getattr(
        recorder, "datastore", False
    )
    # With per-session keys a row opens only under its own session's key: each
    # copied row is sealed again under the child's (docs/encryption.md).
    mapper = app.mapper
    reseal = None
    if isinstance(mapper, Resealer) and not mapper.copies_verbatim:
        reseal = partial(mapper.reseal, session_id=child_id)
    try:
        recorder.copy_stream(
            created, source_id, version, taken if shared else None, reseal=reseal
        )
    except IntegrityError:
        raise SessionForkError(
            f'session "{child_id}" already exists',
            SessionForkError.SESSION_ALREADY_EXISTS,
        ) from None
    if taken is not None and not shared and app.snapshots is not None:
        with contextlib.suppress(IntegrityError):
            app.snapshots.recorder.insert_events([taken[1]])
    return child
