"""Random valid sessions round-trip through every backend .

Each example appends a generated session (tests/property/model.py) through the
default ``Sessions`` (invariants on), flushing in random batches, then reloads it with
a second application: events, decision state and derived messages must be equal, and
a fork at a random ``turn/end`` must derive its prefix's messages. Core scenarios 60 and
61 (derivation is a pure, replayable function that ignores log-only noise) run here
too, on the bare aggregate.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlog.application import Sessions
from agentlog.domain.json import copy_json
from agentlog.domain.messages import derive_messages
from agentlog.domain.session import Session
from tests.property.model import valid_sessions
from tests.scenarios.harness import Append

MakeApp = Callable[..., Sessions]
BACKEND_SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def bare(appends: list[Append]) -> tuple[Session, list[dict[str, Any]]]:
    session = Session.create("s", invariants=True)
    return session, [append.to(session) for append in appends]


def check_fork(
    app: Sessions, session_id: str, recorded: list[Any], data: st.DataObject
) -> Any:
    """Fork at a random ``turn/end`` (or the default boundary); the child derives
    the prefix's messages. Returns the child, or ``None`` without a turn/end."""
    ends = [e["seq"] for e in recorded if e["type"] == "turn/end"]
    if not ends:
        return None
    boundary = data.draw(st.sampled_from(ends), label="fork boundary")
    default = boundary == recorded[-1]["seq"] and data.draw(st.booleans())
    child = app.fork(session_id, None if default else boundary)
    prefix = recorded[: boundary + 1]
    assert child.events == prefix
    assert child.header["seedLength"] == boundary + 1
    assert child.header["parentSession"] == session_id
    assert app.messages(child.id) == derive_messages(prefix)
    app.flush(child)
    return child


@pytest.mark.slow
@BACKEND_SETTINGS
@given(appends=valid_sessions(max_events=40), data=st.data())
def test_valid_sessions_round_trip_on_every_backend(
    make_app: MakeApp, appends: list[Append], data: st.DataObject
) -> None:
    interval = data.draw(st.sampled_from(["2", "7", "500"]), label="snapshot every")
    apps = [make_app(AGENTLOG_SNAPSHOT_INTERVAL=interval)]
    try:
        writer = apps[0]
        session_id = str(uuid.uuid4())
        handle = writer.create_session(session_id=session_id)
        recorded, unflushed = [], 0
        batch = data.draw(st.integers(1, 12), label="first batch")
        for append in appends:
            recorded.append(
                handle.append(
                    append.type,
                    append.data,
                    append.surface_op,
                    append.source_event_seqs,
                )
            )
            unflushed += 1
            if unflushed == batch:
                writer.flush(handle)
                unflushed, batch = 0, data.draw(st.integers(1, 12), label="batch")
        assert handle.events == recorded  # stored and pending, before the last flush
        live_child = check_fork(writer, session_id, recorded, data)  # pending too
        writer.flush(handle)
        expected = derive_messages(recorded)
        assert writer.messages(session_id) == expected
        assert writer.is_stored(session_id)  # a created session exists when flushed
        reader = make_app(AGENTLOG_SNAPSHOT_INTERVAL=interval)
        apps.append(reader)
        assert reader.read_events(session_id) == recorded
        loaded = reader.load_aggregate(session_id)
        assert loaded.seq == handle.seq
        assert loaded.surface.seqs == handle.surface.seqs
        assert loaded.decision_state() == handle.aggregate.decision_state()
        assert reader.messages(session_id) == expected
        assert writer.messages(session_id) == expected
        tail = data.draw(st.integers(0, len(expected) + 1), label="last")
        assert reader.messages(session_id, last=tail) == (
            expected[-tail:] if tail else []
        )
        if live_child is not None:
            assert reader.messages(live_child.id) == writer.messages(live_child.id)
        check_fork(reader, session_id, recorded, data)  # from the stored log
    finally:
        for app in apps:
            app.close()


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(valid_sessions(max_events=60))
def test_core_060_derivation_is_deterministic_and_replayable(
    appends: list[Append],
) -> None:
    session, events = bare(appends)
    first, second = derive_messages(events), derive_messages(events)
    assert first == second
    replay = Session.create("replay", seed=copy_json(events), strict=True)
    assert replay.seq == session.seq
    assert replay.surface.seqs == session.surface.seqs
    replayed = [e.envelope for e in replay.pending_events[1:]]  # type: ignore[attr-defined]
    assert replayed == events
    assert derive_messages(replayed) == first


NOISE = st.sampled_from(
    [
        Append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "x"}}),
        Append("step/start", {"turn": 1, "step": 1}),
        Append("step/end", {"turn": 1, "step": 1}),
        Append("turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
        Append("todo/write", {"todos": []}),
        Append("compaction/marker", {"foo": "bar"}),
    ]
)


def renumbered(event: dict[str, Any], new_seq: dict[int, int]) -> dict[str, Any]:
    """``event`` at its new seq, with its replace range and provenance moved too."""
    event = {**copy_json(event), "seq": new_seq[event["seq"]]}
    op = event.get("surfaceOp")
    if isinstance(op, dict):
        event["surfaceOp"] = {
            **op,
            "start": new_seq[op["start"]],
            "end": new_seq[op["end"]],
        }
    if "sourceEventSeqs" in event:
        event["sourceEventSeqs"] = [new_seq[s] for s in event["sourceEventSeqs"]]
    return event


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(valid_sessions(max_events=40), st.data())
def test_core_061_log_only_noise_never_changes_derivation(
    appends: list[Append], data: st.DataObject
) -> None:
    session, events = bare(appends)
    noisy: list[dict[str, Any]] = []
    new_seq: dict[int, int] = {}
    for event in [*events, None]:
        for noise in data.draw(st.lists(NOISE, max_size=2), label="noise"):
            noisy.append(noise.envelope(len(noisy)))
        if event is not None:
            new_seq[event["seq"]] = len(noisy)
            noisy.append(renumbered(event, new_seq))
    messages = derive_messages(noisy)
    assert messages == derive_messages(events)
    assert {m["role"] for m in messages} <= {"user", "assistant"}
    seeded = Session.create("noisy", seed=noisy, invariants=False)  # (a)–(c) pass
    assert [noisy[s]["type"] for s in seeded.surface.seqs] == [
        events[s]["type"] for s in session.surface.seqs
    ]
