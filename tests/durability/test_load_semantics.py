"""Load semantics: what taking a stored session over does, and what it refuses.

docs/persistence.md#take-over (load), docs/repair.md (open turn -> interrupted), docs/persistence.md#format-versions-and-legacy-shapes (version and
legacy refusal), "How this maps onto agentlog" item 3 (take-over repairs, reads never
write); docs/repair.md (the closers) and docs/persistence.md#take-over ("a live session in this
process is never repaired").

A type this build does not declare is a log-only plugin event in any family
(``tool/code-dispatch`` is a real one): recorded on append, seed, import and load.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from agentlog import import_log
from agentlog.application import Sessions
from agentlog.domain import vocabulary
from agentlog.domain.errors import (
    InvariantError,
    SessionAlreadyExistsError,
    SessionConflictError,
    StaleSessionError,
    SurfaceIntentError,
    UnsupportedSessionFormatError,
)
from agentlog.domain.events import Erased, LogOnly
from agentlog.domain.repair import interrupted_turn_closers
from agentlog.domain.session import Session, SessionCreated, SessionSnapshot
from tests.builders import turn1
from tests.durability.workers import agent_turn, append_args
from tests.rawstore import header, raw_write

MakeApp = Callable[..., Sessions]
USER = {"kind": "user"}


def open_turn_with_pending_call() -> list[dict[str, Any]]:
    """A crashed writer's log: turn 2 open, step 1 open, one call logged, one not."""
    turn2 = [
        {
            "type": "turn/start",
            "seq": 6,
            "time": 2000,
            "data": {"turn": 2, "trigger": {"kind": "message", "source": USER}},
        },
        {"type": "step/start", "seq": 7, "time": 2001, "data": {"turn": 2, "step": 1}},
        {
            "type": "assistant/message",
            "seq": 8,
            "time": 2002,
            "data": {
                "turn": 2,
                "step": 1,
                "content": [
                    {"type": "tool-call", "id": "a", "name": "bash", "arguments": "{}"},
                    {"type": "tool-call", "id": "b", "name": "bash", "arguments": "{}"},
                ],
            },
            "surfaceOp": "append",
        },
        {
            "type": "tool/call",
            "seq": 9,
            "time": 2003,
            "data": {
                "turn": 2,
                "step": 1,
                "callId": "a",
                "name": "bash",
                "arguments": "{}",
            },
        },
    ]
    return turn1() + turn2


def stored_length(app: Sessions, session_id: str) -> int:
    return app.stored_length(session_id)


# ------------------------------------------------------------------ repair once


def test_an_open_stored_turn_is_repaired_once_on_take_over(make_app: MakeApp) -> None:
    log = open_turn_with_pending_call()
    raw_write(make_app(), header("crashed"), log)
    closers = interrupted_turn_closers(log)
    assert [c["type"] for c in closers] == [
        "tool/result",
        "tool/result",
        "step/end",
        "turn/end",
    ]

    # Reads never write: the open turn is visible and storage is unchanged.
    reader = make_app()
    assert reader.read_events("crashed") == log
    reader.messages("crashed")
    assert stored_length(reader, "crashed") == len(log)

    # The take-over appends the closers and saves them before it returns.
    taker = make_app()
    handle = taker.get_session("crashed")
    assert handle.seq == len(log) + len(closers)
    assert handle.pending == []
    assert make_app().read_events("crashed") == log + closers

    # A second load, here or elsewhere, adds nothing.
    assert taker.get_session("crashed") is handle
    again = make_app()
    assert again.get_session("crashed").seq == len(log) + len(closers)
    assert again.repair("crashed") == []
    assert make_app().read_events("crashed") == log + closers

    # The repaired session continues with the next turn.
    handle.append(
        "turn/start", {"turn": 3, "trigger": {"kind": "message", "source": USER}}
    )
    handle.append("turn/end", {"turn": 3, "reason": {"kind": "completed"}})
    taker.flush(handle)
    assert stored_length(make_app(), "crashed") == len(log) + len(closers) + 2


def test_racing_take_overs_append_the_closers_once(make_app: MakeApp) -> None:
    """A take-over that loses the repair race reloads and finds nothing to repair."""
    log = open_turn_with_pending_call()
    raw_write(make_app(), header("raced"), log)
    closers = interrupted_turn_closers(log)
    slow, fast = make_app(), make_app()
    loads: list[int] = []
    load_aggregate = slow.load_aggregate

    def load_then_lose_the_race(session_id: str) -> Session:
        aggregate = load_aggregate(session_id)
        loads.append(aggregate.seq)
        if len(loads) == 1:
            fast.get_session(session_id)  # repairs first, between load and flush
        return aggregate

    slow.load_aggregate = load_then_lose_the_race  # type: ignore[method-assign]
    handle = slow.get_session("raced")
    assert loads == [len(log), len(log) + len(closers)]
    assert handle.seq == len(log) + len(closers)
    assert not handle.stale
    assert make_app().read_events("raced") == log + closers


def test_repair_from_a_snapshot_equals_repair_from_the_whole_log(
    make_app: MakeApp,
) -> None:
    env = {"AGENTLOG_SNAPSHOT_INTERVAL": "5"}
    writer = make_app(**env)
    handle = writer.create_session(session_id="snap")
    events = [*agent_turn(1), *agent_turn(2)[:8]]  # turn 2 open, call-2 pending
    for args in events:
        append_args(handle, args)
        writer.flush(handle)  # one flush per event: a snapshot every 5 versions
    writer.close(handle)
    assert writer.snapshots is not None
    assert list(writer.snapshots.get("snap", desc=True, limit=1))
    log = writer.read_events("snap")
    closers = interrupted_turn_closers(log)
    assert [c["type"] for c in closers] == ["tool/result", "step/end", "turn/end"]
    assert closers[0]["sourceEventSeqs"] == [23]
    taker = make_app(**env)
    taker.get_session("snap")
    assert make_app(**env).read_events("snap") == log + closers


# ---------------------------------------------------------- live sessions


def test_a_live_session_is_never_repaired(make_app: MakeApp) -> None:
    app = make_app()
    handle = app.create_session(session_id="live")
    for args in agent_turn(1)[:8]:  # mid-turn, a tool call pending
        append_args(handle, args)
    app.flush(handle)
    assert handle.aggregate.closers()  # the turn is open...

    assert app.get_session("live") is handle  # ...but live here: returned as is
    assert app.repair("live") == []
    assert handle.pending == []
    assert stored_length(app, "live") == 8

    # The live writer finishes its turn itself, with its real events.
    for args in agent_turn(1)[8:]:
        append_args(handle, args)
    app.flush(handle)
    events = make_app().read_events("live")
    assert [e["type"] for e in events] == [args[0] for args in agent_turn(1)]
    assert events[-1]["data"]["reason"] == {"kind": "completed"}


def test_another_process_taking_over_makes_the_live_writer_conflict(
    make_app: MakeApp,
) -> None:
    """Mapping item 3: take-over closes the turn; the old writer's flush conflicts."""
    app = make_app()
    handle = app.create_session(session_id="taken")
    for args in agent_turn(1)[:3]:
        append_args(handle, args)
    app.flush(handle)

    other = make_app()
    other.get_session("taken")  # another process takes over: closes turn 1
    repaired = other.read_events("taken")
    assert repaired[-1]["data"]["reason"] == {"kind": "interrupted"}

    append_args(handle, agent_turn(1)[3])
    with pytest.raises(SessionConflictError) as caught:
        app.flush(handle)
    assert caught.value.session_id == "taken"
    assert caught.value.expected_seq == 3
    assert handle.stale
    with pytest.raises(StaleSessionError):
        append_args(handle, agent_turn(1)[4])
    # Nothing was merged: the store holds the three events and the closers only.
    assert make_app().read_events("taken") == repaired
    # Reloading gives the repaired session; the writer goes on with turn 2.
    reloaded = app.get_session("taken")
    assert reloaded is not handle
    assert reloaded.seq == len(repaired)
    assert reloaded.aggregate.turns.next_turn == 2


# ------------------------------------------------------------------ versions


@pytest.mark.parametrize("version", [1, 99, -1])
def test_another_format_version_is_refused(make_app: MakeApp, version: int) -> None:
    app = make_app()
    log = open_turn_with_pending_call()
    raw_write(app, {**header("other"), "version": version}, log)
    raw_write(app, header("fine"), turn1())
    message = (
        f'unsupported session format version {version} for "other" '
        "(only v0 is supported)"
    )
    reader = make_app()
    for read in (reader.get_session, reader.messages, reader.header, reader.repair):
        with pytest.raises(UnsupportedSessionFormatError) as caught:
            read("other")
        assert str(caught.value) == message
    # Refused means untouched: no closers were written to the open turn.
    assert stored_length(reader, "other") == len(log)
    with pytest.raises(SessionAlreadyExistsError):
        reader.create_session(session_id="other")
    assert reader.get_session("fine").seq == 6


@pytest.mark.parametrize("version", ["0", 0.0, True, None], ids=repr)
def test_a_version_that_is_not_the_integer_zero_is_refused(
    make_app: MakeApp, version: Any
) -> None:
    app = make_app()
    stored = {**header("odd"), "version": version}
    if version is None:
        del stored["version"]
    raw_write(app, stored, turn1())
    with pytest.raises(UnsupportedSessionFormatError):
        make_app().get_session("odd")


# -------------------------------------------------------------------- legacy


@pytest.mark.parametrize(
    ("event", "found"),
    [
        (
            {"type": "request/header-delta", "seq": 6, "time": 1, "data": {}},
            "request/header-delta event",
        ),
        (
            {
                "type": "request/header",
                "seq": 6,
                "time": 1,
                "data": {"header": {"config": {}}, "reason": "fallback"},
            },
            'request/header reason "fallback"',
        ),
    ],
    ids=["header-delta", "fallback"],
)
def test_a_legacy_log_is_refused_and_left_untouched(
    make_app: MakeApp, event: dict[str, Any], found: str
) -> None:
    app = make_app()
    open_turn = {
        "type": "turn/start",
        "seq": 7,
        "time": 1,
        "data": {"turn": 2, "trigger": {"kind": "message", "source": USER}},
    }
    raw_write(app, header("legacy"), [*turn1(), event, open_turn])
    message = f'session "legacy" contains unsupported legacy {found} at seq 6'
    reader = make_app()
    for read in (reader.get_session, reader.messages, reader.repair):
        with pytest.raises(UnsupportedSessionFormatError) as caught:
            read("legacy")
        assert str(caught.value) == message
    assert stored_length(reader, "legacy") == 8


def test_a_legacy_append_is_refused_and_records_nothing(make_app: MakeApp) -> None:
    app = make_app(invariants=False)
    handle = app.create_session(session_id="s")
    with pytest.raises(UnsupportedSessionFormatError) as caught:
        handle.append("request/header-delta", {})
    assert str(caught.value) == (
        'session "s" contains unsupported legacy request/header-delta event at seq 0'
    )
    assert handle.seq == 0
    assert handle.pending == []


# ------------------------------------------------------ types this build does not declare
# The original treats every type it does not know as a log-only plugin event, and so
# do we, whatever the family: on append, seed, import and load. Only the declared
# core types get core rules; the one refusal is a reserved name.

UNDECLARED = ["tool/code-dispatch", "tool/code-dispatch-start", "turn/pause", "note"]
"""Two real plugin types of the ``tool/`` family, one in ``turn/``, one bare name."""
DISPATCH = {
    "parentCallId": "call-1",
    "subCallId": "call-1:code:1",
    "name": "bash",
    "arguments": {"command": "echo CODE_ONE"},
    "isError": False,
    "resultSummary": "CODE_ONE\n",
}


def test_reserved_names_are_the_header_snapshot_and_tombstone_topics() -> None:
    reserved = {SessionCreated.TOPIC, SessionSnapshot.TOPIC, Erased.TOPIC}
    assert reserved == vocabulary.RESERVED_TYPES


@pytest.mark.parametrize("event_type", UNDECLARED)
def test_an_undeclared_type_of_any_family_is_a_log_only_plugin_event(
    make_app: MakeApp, event_type: str
) -> None:
    app = make_app()
    handle = app.create_session(session_id="s")
    handle.append(
        "turn/start", {"turn": 1, "trigger": {"kind": "message", "source": USER}}
    )
    recorded = handle.append(event_type, DISPATCH)
    assert recorded == {
        "type": event_type,
        "seq": 1,
        "time": recorded["time"],
        "data": DISPATCH,
    }
    assert type(handle.aggregate.pending_events[-1]) is LogOnly
    handle.append(event_type, "any JSON at all")  # no payload model applies
    with pytest.raises(SurfaceIntentError, match="is not surface-eligible"):
        handle.append(event_type, {}, "append")
    handle.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    app.flush()
    events = make_app().read_events("s")
    assert [e["type"] for e in events][1:3] == [event_type, event_type]
    assert events[1]["data"] == DISPATCH


def test_an_undeclared_core_family_type_still_obeys_the_turn_enclosure(
    make_app: MakeApp,
) -> None:
    """No core rule of its own, but the rules every event obeys still apply."""
    handle = make_app().create_session(session_id="s")
    with pytest.raises(InvariantError, match="outside any open turn"):
        handle.append("tool/code-dispatch", DISPATCH)


def test_an_undeclared_type_in_a_seed_is_recorded(make_app: MakeApp) -> None:
    app = make_app()
    pause = {"type": "tool/code-dispatch", "seq": 6, "time": 1, "data": DISPATCH}
    handle = app.create_session(session_id="seeded", seed=[*turn1(), pause])
    assert handle.seq == 7


def test_an_undeclared_type_imports(make_app: MakeApp) -> None:
    app = make_app()
    dispatch = {"type": "tool/code-dispatch-start", "seq": 6, "time": 1, "data": {}}
    rows = [{"type": "session", **header("imported")}, *turn1(), dispatch]
    import_log(
        app,
        "".join(json.dumps(row, separators=(",", ":")) + "\n" for row in rows).encode(),
    )
    assert make_app().read_events("imported")[6] == dispatch


def test_an_undeclared_type_loads_and_the_session_takes_over(make_app: MakeApp) -> None:
    app = make_app()
    open_turn = turn1()[:1]
    pause = {"type": "turn/pause", "seq": 1, "time": 1, "data": {}}
    raw_write(app, header("newer"), [*open_turn, pause])
    reader = make_app()
    handle = reader.get_session("newer")
    assert reader.read_events("newer")[1] == pause
    # The open turn is closed by repair, as for any log: turn/pause is no rule of ours.
    assert handle.seq == 3
    assert stored_length(reader, "newer") == 3


@pytest.mark.parametrize("event_type", sorted(vocabulary.RESERVED_TYPES))
def test_a_reserved_name_is_refused_at_append(
    make_app: MakeApp, event_type: str
) -> None:
    app = make_app(invariants=False)
    handle = app.create_session(session_id="s")
    with pytest.raises(UnsupportedSessionFormatError) as caught:
        handle.append(event_type, {})
    assert str(caught.value) == (
        f'session "s" contains reserved event type "{event_type}" at seq 0; that '
        "name is the stored header's, a snapshot's or a tombstone's"
    )
    assert handle.pending == []


def test_a_plugin_type_loads_and_appends_normally(make_app: MakeApp) -> None:
    app = make_app()
    note = {"type": "writer/note", "seq": 6, "time": 1, "data": {"n": 1}}
    raw_write(app, header("plugin"), [*turn1(), note])
    handle = make_app().get_session("plugin")
    assert handle.seq == 7
    handle.append(
        "turn/start", {"turn": 2, "trigger": {"kind": "message", "source": USER}}
    )
    handle.append("writer/note", {"n": 2})
    handle.append("turn/end", {"turn": 2, "reason": {"kind": "completed"}})
