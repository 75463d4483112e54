"""Crash repair closers: core scenarios 102–114."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentlog.domain.repair import RepairTracker, interrupted_turn_closers
from agentlog.domain.surface import fold_surface
from tests.builders import SE, SS, TE, TS, A, Append, C, R, text
from tests.builders import call_block as call
from tests.builders import log as _log
from tests.invariant_checker import InvariantChecker

if TYPE_CHECKING:
    from agentlog.domain.json import Envelope

INTERRUPTED = {"name": "InterruptedError", "code": "interrupted"}
CRASH_TEXT = "Tool call interrupted by a crash; no result was recorded."


def log(*items: Append) -> list[Envelope]:
    """Events at times 100, 101, …: repair must reuse the last one's."""
    return _log(*items, time=100, tick=1)


def interrupted_result(seq: int, turn: int, step: int, call_id: str) -> Envelope:
    return {
        "type": "tool/result",
        "seq": seq,
        "time": 0,
        "data": {
            "turn": turn,
            "step": step,
            "callId": call_id,
            "content": [text(CRASH_TEXT)],
            "isError": True,
            "error": INTERRUPTED,
        },
        "surfaceOp": "append",
    }


def closers_of(*items: Append) -> list[Envelope]:
    return interrupted_turn_closers(log(*items))


def shapes(closers: list[Envelope]) -> list[tuple[str, int, Any]]:
    return [(c["type"], c["seq"], c["data"].get("callId")) for c in closers]


def test_core_102_closed_or_empty_log() -> None:
    assert closers_of(TS(1), TE(1)) == []
    assert interrupted_turn_closers([]) == []


def test_core_103_open_turn() -> None:
    assert closers_of(TS(1)) == [
        {
            "type": "turn/end",
            "seq": 1,
            "time": 100,
            "data": {"turn": 1, "reason": {"kind": "interrupted"}},
        }
    ]


def test_core_104_open_step() -> None:
    closers = closers_of(TS(1), SS(1, 1))
    assert closers[0] == {
        "type": "step/end",
        "seq": 2,
        "time": 101,
        "data": {"turn": 1, "step": 1},
    }
    assert [c["type"] for c in closers] == ["step/end", "turn/end"]
    assert [c["seq"] for c in closers] == [2, 3]


def test_core_105_unanswered_call() -> None:
    items = (TS(2), SS(2, 1), A(text("t"), call("call-1"), turn=2))
    closers = closers_of(*items)
    assert [c["seq"] for c in closers] == [3, 4, 5]
    assert [c["type"] for c in closers] == ["tool/result", "step/end", "turn/end"]
    assert closers[0] == {**interrupted_result(3, 2, 1, "call-1"), "time": 102}
    assert list(closers[0]) == ["type", "seq", "time", "data", "surfaceOp"]
    assert list(closers[0]["data"]) == [
        "turn",
        "step",
        "callId",
        "content",
        "isError",
        "error",
    ]
    assert all(c["time"] == 102 for c in closers)


def test_core_106_answered_call() -> None:
    items = (TS(2), SS(2, 1), A(call("call-1"), turn=2), R("call-1", turn=2))
    assert [c["type"] for c in closers_of(*items)] == ["step/end", "turn/end"]


def test_core_107_closed_step() -> None:
    items = (TS(2), SS(2, 1), A(call("call-1"), turn=2), SE(2, 1))
    assert shapes(closers_of(*items)) == [("turn/end", 4, None)]


def test_core_108_earlier_turns_do_not_count() -> None:
    items = (
        TS(1),
        SS(1, 1),
        A(call("old-call")),
        R("old-call"),
        SE(1, 1),
        TE(1),
        TS(2),
        SS(2, 1),
        A(call("new-call"), turn=2),
    )
    closers = closers_of(*items)
    assert [c["data"].get("callId") for c in closers] == ["new-call", None, None]


def test_core_109_only_the_unanswered_call() -> None:
    items = (TS(), SS(), A(call("call-a"), call("call-b")), R("call-a"))
    assert shapes(closers_of(*items))[0] == ("tool/result", 4, "call-b")


def test_core_110_tool_call_seq_becomes_provenance() -> None:
    items = (TS(2), SS(2, 1), A(call("call-1"), turn=2), C("call-1", turn=2))
    result = closers_of(*items)[0]
    assert result["sourceEventSeqs"] == [3]
    assert list(result) == [
        "type",
        "seq",
        "time",
        "data",
        "surfaceOp",
        "sourceEventSeqs",
    ]


def test_core_111_orphan_tool_call_is_ignored() -> None:
    closers = closers_of(TS(), SS(), C("orphan"))
    assert [c["type"] for c in closers] == ["step/end", "turn/end"]


def test_core_112_results_in_block_and_log_order() -> None:
    items = (
        TS(),
        SS(),
        A(call("b"), call("a")),
        C("a"),
        R("x"),
        A(call("c"), call("b")),
    )
    closers = closers_of(*items)
    # Re-registering "b" keeps its place; "a" keeps its tool/call seq.
    assert [c["data"].get("callId") for c in closers[:3]] == ["b", "a", "c"]
    assert closers[1]["sourceEventSeqs"] == [3]
    assert "sourceEventSeqs" not in closers[0]


def test_core_113_closers_are_accepted_by_checker_and_fold() -> None:
    events = log(TS(1), SS(1, 1), A(call("c1")))
    closers = interrupted_turn_closers(events)
    checker = InvariantChecker()
    for envelope in [*events, *closers]:
        checker.feed(envelope)
    assert checker.turns.open_turn is None
    assert closers[-1]["data"]["reason"] == {"kind": "interrupted"}
    assert fold_surface([*events, *closers]).nodes == [2, 3]


def test_core_114_orphan_compact_start_is_ignored() -> None:
    compact = Append("compact/start", {"turn": 1})
    closers = closers_of(TS(), compact)
    assert [c["type"] for c in closers] == ["turn/end"]


def test_tracker_state_round_trips() -> None:
    tracker = RepairTracker()
    for envelope in log(
        TS(2), SS(2, 1), A(call("x"), call("y"), turn=2), C("y", turn=2)
    ):
        tracker.apply(envelope)
    restored = RepairTracker.from_state(tracker.to_state())
    assert (
        restored.to_state()
        == tracker.to_state()
        == {
            "openTurn": 2,
            "openStep": 1,
            "pending": [["x", 1, None], ["y", 1, 3]],
        }
    )
    assert restored.closers(4, 7) == tracker.closers(4, 7)


ITEMS = st.sampled_from(
    [
        TS(1),
        TE(1),
        SS(1, 1),
        SE(1, 1),
        A(call("a")),
        A(call("b"), call("a")),
        C("a"),
        C("b"),
        R("a"),
        R("b"),
        Append("todo/write", {"todos": []}),
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(ITEMS, max_size=25))
def test_incremental_tracker_equals_the_pure_scan(items: list[Append]) -> None:
    events = log(*items)
    tracker = RepairTracker()
    for index, envelope in enumerate(events):
        tracker.apply(envelope)
        tracker = RepairTracker.from_state(tracker.to_state())
        prefix = events[: index + 1]
        assert tracker.closers(index + 1, envelope["time"]) == interrupted_turn_closers(
            prefix
        )
