"""Persistence scenarios A (public contract), B (crash recovery) and F 79–81, mapped
onto the recorders as its "How this maps onto agentlog" section says, on every backend.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentlog.application import Sessions
from agentlog.domain.errors import (
    NonJsonDataError,
    SessionAlreadyExistsError,
    SessionConflictError,
    SessionNotFoundError,
    StaleSessionError,
    UnsupportedSessionFormatError,
)
from tests.builders import turn1
from tests.rawstore import header, raw_write

MakeApp = Callable[..., Sessions]
USER = {"kind": "user"}


def append_all(handle: Any, events: list[dict[str, Any]]) -> None:
    for event in events:
        handle.append(
            event["type"],
            event["data"],
            surface_op=event.get("surfaceOp"),
            source_event_seqs=event.get("sourceEventSeqs"),
        )


def without_time(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "time"} for e in events]


def test_pq_001_create_append_and_load(make_app: MakeApp) -> None:
    app = make_app()
    handle = app.create_session(cwd="/srv/app", session_id="s1")
    append_all(handle, turn1())
    app.flush(handle)
    reader = make_app()
    assert reader.header("s1")["version"] == 0
    assert reader.header("s1")["cwd"] == "/srv/app"
    assert without_time(reader.read_events("s1")) == without_time(turn1())


def test_pq_002_a_created_session_is_stored_at_its_first_flush(
    make_app: MakeApp,
) -> None:
    # Sessions exist when created (issue 22): the header alone is a session.
    app = make_app()
    handle = app.create_session(session_id="lazy")
    assert not app.is_stored("lazy")
    app.flush(handle)
    assert app.is_stored("lazy")
    assert make_app().read_events("lazy") == []
    append_all(handle, turn1())
    app.flush(handle)
    assert len(make_app().read_events("lazy")) == len(turn1())


def test_pq_003_079_a_second_writer_at_taken_seqs_conflicts(make_app: MakeApp) -> None:
    first, second = make_app(), make_app()
    handle = first.create_session(session_id="s")
    append_all(handle, turn1())
    first.flush(handle)
    other = second.get_session("s")
    mine = first.get_session("s")
    mine.append(
        "turn/start", {"turn": 2, "trigger": {"kind": "message", "source": USER}}
    )
    other.append(
        "turn/start", {"turn": 2, "trigger": {"kind": "message", "source": USER}}
    )
    first.flush(mine)
    with pytest.raises(SessionConflictError) as caught:
        second.flush(other)
    assert caught.value.session_id == "s"
    assert caught.value.expected_seq == 6
    assert other.stale
    with pytest.raises(StaleSessionError):
        other.append("turn/end", {"turn": 2, "reason": {"kind": "completed"}})
    assert len(make_app().read_events("s")) == 7


def test_pq_005_non_json_data_materialises_nothing(make_app: MakeApp) -> None:
    app = make_app()
    handle = app.create_session(session_id="bad")
    with pytest.raises(NonJsonDataError, match="non-JSON-serializable"):
        handle.append(
            "turn/start", {"turn": 1, "trigger": {"kind": "message"}, "x": {1}}
        )
    app.flush(handle)
    assert make_app().read_events("bad") == []  # the header only


def test_pq_007_caller_mutation_before_flush_is_not_stored(make_app: MakeApp) -> None:
    app = make_app()
    handle = app.create_session(session_id="s")
    events = turn1()
    append_all(handle, events)
    events[1]["data"]["content"][0]["text"] = "mutated"
    events.clear()
    app.flush(handle)
    stored = make_app().read_events("s")
    assert [e["seq"] for e in stored] == [0, 1, 2, 3, 4, 5]
    assert stored[1]["data"]["content"][0]["text"] == "hi"


def test_pq_010_creating_an_existing_id(make_app: MakeApp) -> None:
    app = make_app()
    handle = app.create_session(session_id="dup", cwd="/a")
    with pytest.raises(SessionAlreadyExistsError, match="already exists"):
        app.create_session(session_id="dup")
    append_all(handle, turn1())
    app.flush(handle)
    with pytest.raises(
        SessionAlreadyExistsError,
        match=r'session "dup" already has a persisted log; load it with get_session',
    ):
        make_app().create_session(session_id="dup", cwd="/other")


def test_pq_011_loading_an_unknown_id(make_app: MakeApp) -> None:
    app = make_app()
    with pytest.raises(SessionNotFoundError, match='session "nope" not found'):
        app.get_session("nope")
    with pytest.raises(SessionNotFoundError):
        app.read_events("nope")


def test_pq_012_header_fields_round_trip(make_app: MakeApp) -> None:
    app = make_app()
    handle = app.create_session(
        session_id="child", parent_session="p", seed_length=0, delegation_depth=2
    )
    append_all(handle, turn1())
    app.flush(handle)
    stored = make_app().header("child")
    assert stored["parentSession"] == "p"
    assert stored["seedLength"] == 0
    assert stored["delegationDepth"] == 2


def test_pq_013_another_format_version_is_refused(make_app: MakeApp) -> None:
    app = make_app()
    raw_write(app, {**header("v99"), "version": 99}, turn1())
    message = 'unsupported session format version 99 for "v99" (only v0 is supported)'
    with pytest.raises(UnsupportedSessionFormatError) as caught:
        make_app().get_session("v99")
    assert str(caught.value) == message


def test_pq_014_legacy_events_are_refused_on_load(make_app: MakeApp) -> None:
    app = make_app()
    events = turn1()[:1] + [
        {"type": "request/header-delta", "seq": 1, "time": 1, "data": {}},
    ]
    raw_write(app, header("legacy"), events)
    with pytest.raises(UnsupportedSessionFormatError) as caught:
        make_app().get_session("legacy")
    assert str(caught.value) == (
        'session "legacy" contains unsupported legacy request/header-delta event at seq 1'
    )
    fallback = [
        {
            "type": "request/header",
            "seq": 0,
            "time": 1,
            "data": {"header": {"config": {}}, "reason": "fallback"},
        }
    ]
    raw_write(app, header("fallback"), fallback)
    with pytest.raises(UnsupportedSessionFormatError) as caught:
        make_app().get_session("fallback")
    assert str(caught.value) == (
        'session "fallback" contains unsupported legacy request/header reason '
        '"fallback" at seq 0'
    )


def test_pq_015_a_second_application_continues_a_stored_log(make_app: MakeApp) -> None:
    app = make_app()
    handle = app.create_session(session_id="s")
    append_all(handle, turn1())
    app.flush(handle)
    other = make_app()
    resumed = other.get_session("s")
    resumed.append(
        "turn/start", {"turn": 2, "trigger": {"kind": "message", "source": USER}}
    )
    resumed.append("turn/end", {"turn": 2, "reason": {"kind": "completed"}})
    other.flush(resumed)
    assert [e["seq"] for e in make_app().read_events("s")] == list(range(8))


def test_pq_017_interleaved_sessions_stay_apart(make_app: MakeApp) -> None:
    app = make_app()
    a, b = app.create_session(session_id="a"), app.create_session(session_id="b")
    for event_a, event_b in zip(turn1(), turn1(), strict=True):
        append_all(a, [event_a])
        event_b = {**event_b}
        if event_b["type"] == "user/message":
            event_b["data"] = {
                "content": [{"type": "text", "text": "bee"}],
                "source": USER,
            }
        append_all(b, [event_b])
    app.flush(a)
    app.flush(b)
    reader = make_app()
    assert "bee" not in str(reader.read_events("a"))
    assert "bee" in str(reader.read_events("b"))


def test_pq_018_023_024_an_open_turn_is_repaired_once_on_take_over(
    make_app: MakeApp,
) -> None:
    app = make_app()
    open_turn = [
        {
            "type": "turn/start",
            "seq": 6,
            "time": 2000,
            "data": {"turn": 2, "trigger": {"kind": "message", "source": USER}},
        },
        {"type": "step/start", "seq": 7, "time": 2001, "data": {"turn": 2, "step": 1}},
    ]
    raw_write(app, header("crashed"), turn1() + open_turn)
    # Reads never write (mapping item 3): the open turn is visible, storage unchanged.
    assert len(make_app().read_events("crashed")) == 8
    taker = make_app()
    handle = taker.get_session("crashed")
    events = taker.read_events("crashed")
    assert [e["type"] for e in events[-4:]] == [
        "turn/start",
        "step/start",
        "step/end",
        "turn/end",
    ]
    assert [e["seq"] for e in events] == list(range(10))
    assert events[-1]["data"]["reason"] == {"kind": "interrupted"}
    assert {e["time"] for e in events[-2:]} == {2001}
    handle.append(
        "turn/start", {"turn": 3, "trigger": {"kind": "message", "source": USER}}
    )
    handle.append("turn/end", {"turn": 3, "reason": {"kind": "completed"}})
    taker.flush(handle)
    reloaded = make_app()
    reloaded.get_session("crashed")
    assert [e["seq"] for e in reloaded.read_events("crashed")] == list(range(12))


def test_pq_019_020_021_pending_calls_get_synthetic_results(make_app: MakeApp) -> None:
    app = make_app()
    calls = {
        "type": "assistant/message",
        "seq": 2,
        "time": 5,
        "data": {
            "turn": 1,
            "step": 1,
            "content": [
                {
                    "type": "tool-call",
                    "id": "call-x",
                    "name": "bash",
                    "arguments": "{}",
                },
                {
                    "type": "tool-call",
                    "id": "call-y",
                    "name": "bash",
                    "arguments": "{}",
                },
            ],
        },
        "surfaceOp": "append",
    }
    tool_call = {
        "type": "tool/call",
        "seq": 3,
        "time": 6,
        "data": {
            "turn": 1,
            "step": 1,
            "callId": "call-x",
            "name": "bash",
            "arguments": "{}",
        },
    }
    raw_write(
        app, header("calls"), [turn1()[0], turn1()[2] | {"seq": 1}, calls, tool_call]
    )
    make_app().get_session("calls")
    events = make_app().read_events("calls")
    results = [e for e in events if e["type"] == "tool/result"]
    assert [r["data"]["callId"] for r in results] == ["call-x", "call-y"]
    assert results[0]["sourceEventSeqs"] == [3]
    assert "sourceEventSeqs" not in results[1]
    assert results[0]["data"]["content"] == [
        {
            "type": "text",
            "text": "Tool call interrupted by a crash; no result was recorded.",
        }
    ]
    assert results[0]["data"]["error"] == {
        "name": "InterruptedError",
        "code": "interrupted",
    }
    assert [e["type"] for e in events[-2:]] == ["step/end", "turn/end"]


def test_pq_025_a_balanced_log_loads_twice_unchanged(make_app: MakeApp) -> None:
    app = make_app()
    raw_write(app, header("ok"), turn1())
    make_app().get_session("ok")
    make_app().get_session("ok")
    assert len(make_app().read_events("ok")) == 6


def test_pq_081_markers_round_trip(make_app: MakeApp) -> None:
    app = make_app(invariants=False)
    handle = app.create_session(session_id="m")
    user = {"content": [{"type": "text", "text": "a"}], "source": USER}
    handle.append("user/message", user, surface_op="append")
    handle.append("user/message", user, surface_op="append")
    handle.append(
        "assistant/message",
        {"turn": 1, "step": 1, "content": []},
        surface_op={"op": "replace", "start": 0, "end": 1},
        source_event_seqs=[0, 1],
    )
    app.flush(handle)
    stored = make_app().read_events("m")
    assert stored[2]["surfaceOp"] == {"op": "replace", "start": 0, "end": 1}
    assert stored[2]["sourceEventSeqs"] == [0, 1]
    assert "sourceEventSeqs" not in stored[0]


def test_run_with_retry_reapplies_after_a_conflict(make_app: MakeApp) -> None:
    first, second = make_app(invariants=False), make_app(invariants=False)
    handle = first.create_session(session_id="r")
    handle.append("note/x", {"n": 0})
    first.flush(handle)
    stale = second.get_session("r")
    first.get_session("r").append("note/x", {"n": 1})
    first.flush()
    stale.append("note/x", {"n": 2})
    with pytest.raises(SessionConflictError):
        second.flush(stale)
    second.run_with_retry("r", lambda h: h.append("note/x", {"n": 2}))
    assert [e["data"]["n"] for e in make_app().read_events("r")] == [0, 1, 2]


def test_pq_006_plain_json_values_are_stored(make_app: MakeApp) -> None:
    app = make_app(invariants=False)
    handle = app.create_session(session_id="v")
    data = {"a": None, "b": True, "c": False, "d": [1, [2, {"e": []}]], "f": {}}
    handle.append("note/x", data)
    app.flush(handle)
    assert make_app().read_events("v")[0]["data"] == data


def test_pq_008_016_mutating_a_header_copy_changes_nothing(make_app: MakeApp) -> None:
    app = make_app()
    handle = app.create_session(session_id="h", cwd="/w")
    header = handle.header
    header["cwd"] = "/elsewhere"
    append_all(handle, turn1())
    app.flush(handle)
    loaded = make_app().header("h")
    loaded["cwd"] = "/mutated"
    assert make_app().header("h")["cwd"] == "/w"


def test_pq_022_a_call_in_a_closed_step_gets_no_synthetic_result(
    make_app: MakeApp,
) -> None:
    app = make_app()
    call = {
        "type": "assistant/message",
        "seq": 2,
        "time": 5,
        "data": {
            "turn": 1,
            "step": 1,
            "content": [
                {"type": "tool-call", "id": "old", "name": "bash", "arguments": "{}"}
            ],
        },
        "surfaceOp": "append",
    }
    events = [turn1()[0], turn1()[2] | {"seq": 1}, call, turn1()[4] | {"seq": 3}]
    raw_write(app, header("closed-step"), events)
    make_app().get_session("closed-step")
    types = [e["type"] for e in make_app().read_events("closed-step")]
    assert types[4:] == ["turn/end"]


def test_pq_035_a_failed_flush_keeps_its_events_for_the_retry(
    make_app: MakeApp,
) -> None:
    from eventsourcing.persistence import OperationalError

    from agentlog.domain.errors import StoreUnavailableError

    app = make_app()
    handle = app.create_session(session_id="retry")
    append_all(handle, turn1()[:3])
    original = app.recorder.insert_events
    calls = {"n": 0}

    def failing_once(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise OperationalError("disk full")
        return original(*args, **kwargs)

    app.recorder.insert_events = failing_once  # type: ignore[method-assign]
    with pytest.raises(StoreUnavailableError) as caught:
        app.flush(handle)
    assert isinstance(caught.value.__cause__, OperationalError)
    assert not handle.stale
    app.flush(handle)
    assert [e["seq"] for e in make_app().read_events("retry")] == [0, 1, 2]


def test_pq_037_038_a_fork_persists_its_seed_once(make_app: MakeApp) -> None:
    app = make_app()
    source = app.create_session(session_id="src", cwd="/w")
    append_all(source, turn1())
    app.flush(source)
    child = app.fork("src", child_session_id="child")
    app.flush(child)
    app.flush(child)
    reader = make_app()
    assert without_time(reader.read_events("child")) == without_time(turn1())
    header_of_child = reader.header("child")
    assert header_of_child["parentSession"] == "src"
    assert header_of_child["seedLength"] == 6
    assert header_of_child["cwd"] == "/w"


def test_pq_080_data_persists_across_application_instances(make_app: MakeApp) -> None:
    first = make_app()
    handle = first.create_session(session_id="p")
    append_all(handle, turn1())
    first.close()
    assert len(make_app().read_events("p")) == 6
