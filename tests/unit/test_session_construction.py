"""The ``Session`` aggregate is built the library's way, from its created event.

``SessionCreated`` inherits the library's
:meth:`~eventsourcing.domain.CanInitAggregate.mutate`: it resolves the event's
``originator_topic``, runs the library's base initialiser with the event's
id, version and timestamp (picked from the event's attributes by name), then
``Session.__init__`` with the header. These tests pin what that relies on, so a
library change to the construction path fails here.
"""

from __future__ import annotations

from datetime import UTC, datetime

from eventsourcing.domain import CanInitAggregate
from eventsourcing.utils import get_topic, resolve_topic

from agentlog.domain.session import Session, SessionCreated, SessionSnapshot

HEADER = {"version": 1, "id": "s1", "createdAt": 1_700_000_000_123}


def test_the_created_event_uses_the_library_mutate() -> None:
    assert "mutate" not in vars(SessionCreated)
    assert SessionCreated.mutate is CanInitAggregate.mutate


def test_the_created_event_names_the_session_class() -> None:
    assert resolve_topic(SessionCreated.originator_topic) is Session
    assert SessionCreated.originator_topic == get_topic(Session)


def test_a_created_event_builds_a_fresh_session() -> None:
    session = Session.from_created(SessionCreated("s1", dict(HEADER)))
    created_on = datetime.fromtimestamp(1_700_000_000.123, tz=UTC)
    assert (session.id, session.version) == ("s1", 1)
    assert session.created_on == session.modified_on == created_on
    assert session.pending_events == []
    assert session.header == HEADER
    assert (session.seq, session.last_time, session.invariants) == (0, None, True)
    assert not session.is_turn_open


def test_create_records_the_created_event_it_was_built_from() -> None:
    session = Session.create("s1", dict(HEADER))
    [created] = session.pending_events
    assert isinstance(created, SessionCreated)
    assert (created.originator_id, created.originator_version) == ("s1", 1)
    assert created.header == HEADER


def test_an_odd_created_at_is_the_epoch_not_an_error() -> None:
    for created_at in ("yesterday", 10**20, None):
        session = Session.from_header("s1", {**HEADER, "createdAt": created_at})
        assert session.created_on == datetime.fromtimestamp(0, tz=UTC)


def test_a_snapshot_builds_the_session_through_the_created_event() -> None:
    session = Session.create("s1", dict(HEADER))
    session.append(
        "turn/start",
        {"turn": 1, "trigger": {"kind": "message", "source": {"kind": "user"}}},
    )
    snapshot = SessionSnapshot.take(session)
    again = snapshot.mutate(None)
    assert isinstance(again, Session)
    assert (again.id, again.version, again.seq) == ("s1", session.version, 1)
    assert again.decision_state() == session.decision_state()
