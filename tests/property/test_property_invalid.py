"""Random invalid appends never change anything (docs/events.md#the-append-pipeline).

A random valid prefix (tests/property/model.py), one append that breaks one rule
(tests/property/invalid.py: bad JSON, markers, payloads, replace ranges, provenance,
coverage, tool/result rewrites, turn/step/tool-call invariants), then the rest of a
valid session. The bad append must raise its ``SessionError`` subclass with the
spec's text and leave events, seq, surface, decision state, messages and — after a
flush — the stored log as they were; the valid continuation must still be accepted.
A state machine then interleaves many invalid appends into one bare session.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from agentlog.application import SessionHandle, Sessions
from agentlog.domain.errors import SessionError
from agentlog.domain.json import copy_json
from agentlog.domain.messages import derive_messages
from agentlog.domain.session import Session
from tests.property.invalid import Case, invalid_append
from tests.property.model import Draw, SessionModel, valid_models
from tests.scenarios.harness import Append

MakeApp = Callable[..., Sessions]


@st.composite
def invalid_cases(draw: Draw) -> tuple[list[Append], Case, list[Append]]:
    """``(valid prefix, invalid case, valid continuation)``."""
    model: SessionModel = draw(valid_models(max_events=30))
    prefix = list(model.appends)
    case = invalid_append(model, draw)
    for _ in range(draw(st.integers(1, 6))):
        draw(st.sampled_from(model.moves()))(draw)
    return prefix, case, model.appends[len(prefix) :]


def add(handle: SessionHandle, append: Append) -> dict[str, Any]:
    return handle.append(
        append.type, append.data, append.surface_op, append.source_event_seqs
    )


def observed(app: Sessions, handle: SessionHandle) -> Any:
    return (
        handle.events,
        handle.seq,
        handle.surface.seqs,
        copy_json(handle.aggregate.decision_state()),
        app.messages(handle.id),
    )


def check_rejected(case: Case, attempt: Callable[[], object]) -> None:
    _, error_type, message = case
    with pytest.raises(SessionError) as caught:
        attempt()
    assert type(caught.value) is error_type, repr(caught.value)
    if message is not None:
        assert str(caught.value) == message


@pytest.mark.slow
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(generated=invalid_cases(), data=st.data())
def test_invalid_appends_change_nothing_on_every_backend(
    make_app: MakeApp,
    generated: tuple[list[Append], Case, list[Append]],
    data: st.DataObject,
) -> None:
    prefix, case, rest = generated
    apps = [make_app()]
    try:
        writer = apps[0]
        session_id = str(uuid.uuid4())
        handle = writer.create_session(session_id=session_id)
        flush_after = data.draw(st.integers(0, len(prefix)), label="flush after")
        for index, append in enumerate(prefix):
            if index == flush_after:
                writer.flush(handle)
            add(handle, append)
        before = observed(writer, handle)
        check_rejected(case, lambda: add(handle, case[0]))
        assert observed(writer, handle) == before
        writer.flush(handle)
        assert observed(writer, handle) == before
        assert writer.is_stored(session_id)  # a created session exists when flushed
        reader = make_app()
        apps.append(reader)
        assert reader.read_events(session_id) == before[0]
        assert reader.messages(session_id) == before[4]
        assert reader.load_aggregate(session_id).decision_state() == before[3]
        for append in rest:
            add(handle, append)
        assert writer.messages(session_id) == derive_messages(handle.events)
    finally:
        for app in apps:
            app.close()


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(generated=invalid_cases())
def test_invalid_appends_change_nothing_on_the_aggregate(
    generated: tuple[list[Append], Case, list[Append]],
) -> None:
    prefix, case, rest = generated
    session = Session.create("s", invariants=True)
    events = [append.to(session) for append in prefix]
    state = copy_json(session.decision_state())
    pending = len(session.pending_events)
    check_rejected(case, lambda: case[0].to(session))
    assert session.seq == len(events)
    assert len(session.pending_events) == pending
    assert session.decision_state() == state
    events += [append.to(session) for append in rest]
    assert [e.envelope for e in session.pending_events[1:]] == events  # type: ignore[attr-defined]


class InterleavedSession(RuleBasedStateMachine):
    """Valid moves and invalid appends interleaved in one bare session."""

    def __init__(self) -> None:
        super().__init__()
        self.model = SessionModel()
        self.session = Session.create("s", invariants=True)
        self.events: list[dict[str, Any]] = []
        self.rejected = 0

    @rule(data=st.data())
    def valid_move(self, data: st.DataObject) -> None:
        start = self.model.seq
        data.draw(st.sampled_from(self.model.moves()))(data.draw)
        for append in self.model.appends[start:]:
            self.events.append(append.to(self.session))

    @rule(data=st.data())
    def invalid_append(self, data: st.DataObject) -> None:
        case = invalid_append(self.model, data.draw)
        check_rejected(case, lambda: case[0].to(self.session))
        self.rejected += 1

    @invariant()
    def nothing_but_valid_appends_was_recorded(self) -> None:
        assert self.session.seq == self.model.seq == len(self.events)
        assert self.session.surface.seqs == self.model.surface_seqs
        assert self.session.turns.open_turn == self.model.open_turn
        assert self.session.turns.open_step == self.model.open_step

    def teardown(self) -> None:
        recorded = [e.envelope for e in self.session.pending_events[1:]]  # type: ignore[attr-defined]
        assert recorded == self.events
        derive_messages(recorded)  # the strict fold accepts the log


TestInterleavedSession = InterleavedSession.TestCase
TestInterleavedSession.settings = settings(
    max_examples=50, stateful_step_count=30, deadline=None
)
TestInterleavedSession = pytest.mark.slow(TestInterleavedSession)
