"""As-of reads equal forks: the messages as of every ``turn/end`` of a random
session are the messages of a fork at that boundary, on every backend.

The session is written in random flush batches, and read both by the writer
(its last events may still be unflushed: the live path) and by a second
application (the stored path, replayed from snapshots taken every 2, 7 or 500
events). The query service's surface and messages as of a seq agree too.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlog import EventNotFoundError, SessionError, SessionQuery
from agentlog.application import Sessions
from agentlog.domain.errors import SessionQueryError
from agentlog.domain.messages import derive_messages
from agentlog.domain.surface import fold_surface
from tests.builders import TS, U
from tests.property.model import valid_sessions
from tests.scenarios.harness import Append

MakeApp = Callable[..., Sessions]


def write(
    app: Sessions, appends: list[Append], data: st.DataObject
) -> tuple[str, list[dict[str, Any]]]:
    """Append the session, flushing in random batches; the tail may stay unflushed."""
    session_id = str(uuid.uuid4())
    handle = app.create_session(session_id=session_id)
    recorded = []
    for append in appends:
        recorded.append(
            handle.append(
                append.type, append.data, append.surface_op, append.source_event_seqs
            )
        )
        if data.draw(st.integers(0, 4), label="flush now") == 0:
            app.flush(handle)
    return session_id, recorded


def check_as_of(
    app: Sessions, session_id: str, recorded: list[dict[str, Any]], fork: bool
) -> None:
    query = SessionQuery(app)
    for event in recorded:
        seq = event["seq"]
        prefix = recorded[: seq + 1]
        expected = derive_messages(prefix)
        assert app.messages(session_id, at=seq) == expected
        assert query.read_messages(session_id, at=seq) == expected
        surface = query.read_surface(session_id, at=seq)
        assert surface.captured_through_seq == seq
        assert surface.events == [prefix[s] for s in fold_surface(prefix).nodes]
        if fork and event["type"] == "turn/end":
            child = app.fork(session_id, seq)
            assert app.messages(session_id, at=seq) == app.messages(child.id)
            app.flush(child)


@pytest.mark.slow
@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(appends=valid_sessions(max_events=30), data=st.data())
def test_messages_as_of_every_turn_end_equal_a_fork_there(
    make_app: MakeApp, appends: list[Append], data: st.DataObject
) -> None:
    interval = data.draw(st.sampled_from(["2", "7", "500"]), label="snapshot every")
    apps = [make_app(AGENTLOG_SNAPSHOT_INTERVAL=interval)]
    try:
        writer = apps[0]
        session_id, recorded = write(writer, appends, data)
        check_as_of(writer, session_id, recorded, fork=True)  # live, maybe unflushed
        writer.flush()
        if not recorded:
            return
        apps.append(make_app(AGENTLOG_SNAPSHOT_INTERVAL=interval))
        reader = apps[1]
        check_as_of(reader, session_id, recorded, fork=True)  # stored only
        past = len(recorded)
        with pytest.raises(EventNotFoundError):
            reader.messages(session_id, at=past)
        with pytest.raises(SessionQueryError) as refused:
            SessionQuery(reader).read_surface(session_id, at=past)
        assert refused.value.code == SessionQueryError.EVENT_NOT_FOUND
    finally:
        for app in apps:
            app.close()


@pytest.mark.parametrize("at", [-1, True, 1.5, "3"])
def test_a_bad_at_is_refused(app: Sessions, at: Any) -> None:
    handle = app.create_session()
    for item in (TS(), U("hi")):
        handle.append(item.type, item.data, item.surface_op)
    app.flush(handle)
    with pytest.raises(SessionError, match="at must be an integer"):
        app.messages(handle.id, at=at)
    with pytest.raises(SessionQueryError) as refused:
        SessionQuery(app).read_surface(handle.id, at=at)
    assert refused.value.code == SessionQueryError.EVENT_NOT_FOUND
