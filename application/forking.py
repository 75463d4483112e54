"""Forking: a child session seeded with its source's events up to a ``turn/end``.

See docs/fork.md#fork. A stored source is copied row by row inside the store
(:mod:`agentlog.application.fork_copy`) when the store can; otherwise, and for a
live source, the child is created with the events as its seed.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from agentlog.application.fork_copy import can_copy, fork_by_copy
from agentlog.application.handle import SessionHandle
from agentlog.domain.errors import (
    SessionErasedError,
    SessionForkError,
    SessionNotFoundError,
)
from agentlog.domain.fork import resolve_fork_boundary
from agentlog.domain.session import check_known_session_id, check_session_id

if TYPE_CHECKING:
    from agentlog.application.sessions import Sessions


def fork_session(
    app: Sessions,
    source: str | SessionHandle,
    boundary: object = None,
    child_session_id: str | None = None,
) -> SessionHandle:
    """Seed a child with the source's events up to a ``turn/end``."""
    app.check_writable()
    if child_session_id is not None:
        check_session_id(child_session_id)
    if not isinstance(source, SessionHandle):
        check_known_session_id(source)
    if child_session_id is not None and (
        child_session_id in app.live or app.is_stored(child_session_id)
    ):
        raise SessionForkError(
            f'session "{child_session_id}" already exists',
            SessionForkError.SESSION_ALREADY_EXISTS,
        )
    if child_session_id is not None and app.is_erased(child_session_id):
        raise SessionErasedError(child_session_id)
    source_id = source.id if isinstance(source, SessionHandle) else source
    live = app.live.get(source_id)
    if isinstance(source, SessionHandle):
        if live is None and not app.is_stored(source_id):
            raise SessionForkError(
                f'session "{source_id}" not found',
                SessionForkError.SESSION_NOT_FOUND,
            )
        if live is not None and live is not source:
            raise SessionForkError(
                f'session "{source_id}" is not the live store instance',
                SessionForkError.SESSION_NOT_LIVE,
            )
    if live is not None:
        header = live.aggregate.header
        length = live.seq
    else:
        try:
            header = app.stored_header(source_id)
        except SessionNotFoundError:
            raise SessionForkError(
                f'session "{source_id}" not found',
                SessionForkError.SESSION_NOT_FOUND,
            ) from None
        length = app.stored_length(source_id)

    def type_at(seq: int) -> str:
        return str(app.read_events(source_id, after=seq - 1, limit=1)[0]["type"])

    last = resolve_fork_boundary(source_id, boundary, length, type_at)
    cwd = header.get("cwd")
    owner = header.get("owner")
    if live is None and last is not None and can_copy(app):
        # A stored parent: copy its validated rows in the store.
        child_id = child_session_id or str(uuid.uuid4())
        app.live.refuse(child_id)
        child = fork_by_copy(
            app,
            source_id,
            last,
            cwd=cwd if isinstance(cwd, str) else None,
            owner=owner if isinstance(owner, str) else None,
            child_id=child_id,
            project=app.loader.project,
            clock=app.clock,
            snapshot=app.snapshot_interval > 0,
        )
        handle = app.loader.make_live(child, new=True)
        return app.observers.announce(handle)
    seed = [] if last is None else app.read_events(source_id, limit=last + 1)
    return app.create_session(
        cwd=cwd if isinstance(cwd, str) else None,
        owner=owner if isinstance(owner, str) else None,
        session_id=child_session_id,
        seed=seed,
        parent_session=source_id,
        seed_length=len(seed),
        strict=app.invariants,
    )
