"""Core scenarios H (crash repair closers, 102–112 and 114) on the bare aggregate.

``Session.closers()`` is kept incrementally (a live session knows its closers without
rescanning); each scenario also checks it equals the pure scan
``interrupted_turn_closers(events)``. 113 (closers through an invariant-checking
session) is in test_core_invariants_repair.py.
"""

from __future__ import annotations

import itertools
from typing import Any

from agentlog.domain.repair import interrupted_turn_closers
from tests.scenarios.harness import (
    SE,
    SS,
    TE,
    TS,
    Acall,
    Append,
    C,
    R,
    Scenario,
    call_block,
    text,
)

INTERRUPTED = {"name": "InterruptedError", "code": "interrupted"}
CRASH_TEXT = "Tool call interrupted by a crash; no result was recorded."


def closers_of(*appends: Append) -> list[dict[str, Any]]:
    """The aggregate's closers after ``appends``; equal to the pure scan."""
    times = itertools.count(999)  # the header takes 999; events start at 1000
    scenario = Scenario(clock=lambda: next(times)).given(*appends)
    closers = scenario.session.closers()
    assert closers == interrupted_turn_closers(scenario.events)
    return closers


def crash_result(call_id: str, seq: int, *, turn: int = 2, **extra: Any) -> Any:
    return {
        "type": "tool/result",
        "seq": seq,
        "time": extra.pop("time"),
        "data": {
            "turn": turn,
            "step": 1,
            "callId": call_id,
            "content": [text(CRASH_TEXT)],
            "isError": True,
            "error": INTERRUPTED,
        },
        "surfaceOp": "append",
        **extra,
    }


def step_end(turn: int, seq: int, time: int) -> Any:
    return {
        "type": "step/end",
        "seq": seq,
        "time": time,
        "data": {"turn": turn, "step": 1},
    }


def turn_end(turn: int, seq: int, time: int) -> Any:
    reason = {"kind": "interrupted"}
    return {
        "type": "turn/end",
        "seq": seq,
        "time": time,
        "data": {"turn": turn, "reason": reason},
    }


def assistant2(*call_ids: str) -> Append:
    content = [text("working"), *(call_block(c) for c in call_ids)]
    return Append(
        "assistant/message", {"turn": 2, "step": 1, "content": content}, "append"
    )


OPEN_105 = (TS(2), SS(2, 1), assistant2("call-1"))


def test_core_102_a_closed_or_empty_log_needs_no_closers() -> None:
    assert closers_of(TS(1), TE(1)) == []
    assert closers_of() == []


def test_core_103_an_open_turn_gets_an_interrupted_end() -> None:
    assert closers_of(TS(1)) == [turn_end(1, 1, 1000)]


def test_core_104_an_open_step_is_closed_first() -> None:
    assert closers_of(TS(1), SS(1, 1)) == [step_end(1, 2, 1001), turn_end(1, 3, 1001)]


def test_core_105_an_unanswered_call_gets_a_synthetic_result() -> None:
    closers = closers_of(*OPEN_105)
    assert closers == [
        crash_result("call-1", 3, time=1002),
        step_end(2, 4, 1002),
        turn_end(2, 5, 1002),
    ]
    assert "sourceEventSeqs" not in closers[0]


def test_core_106_an_answered_call_needs_no_result() -> None:
    result = Append("tool/result", {**R("call-1").data, "turn": 2}, "append")
    assert closers_of(*OPEN_105, result) == [
        step_end(2, 4, 1003),
        turn_end(2, 5, 1003),
    ]


def test_core_107_a_closed_step_still_owes_the_turn_end() -> None:
    assert closers_of(*OPEN_105, SE(2, 1)) == [turn_end(2, 4, 1003)]


def test_core_108_only_the_open_turn_counts() -> None:
    closers = closers_of(
        TS(1), SS(1, 1), Acall("old-call"), C("old-call"), R("old-call"), SE(1, 1),
        TE(1), TS(2), SS(2, 1), assistant2("new-call"),
    )  # fmt: skip
    results = [c["data"]["callId"] for c in closers if c["type"] == "tool/result"]
    assert results == ["new-call"]


def test_core_109_only_the_unanswered_call_gets_a_result() -> None:
    answered = Append("tool/result", {**R("call-a").data, "turn": 2}, "append")
    closers = closers_of(TS(2), SS(2, 1), assistant2("call-a", "call-b"), answered)
    assert [c["data"]["callId"] for c in closers[:-2]] == ["call-b"]


def test_core_110_a_seen_tool_call_becomes_provenance() -> None:
    tool_call = Append("tool/call", {**C("call-1").data, "turn": 2})
    closers = closers_of(*OPEN_105, tool_call)
    assert closers[0] == crash_result("call-1", 4, time=1003, sourceEventSeqs=[3])


def test_core_111_an_orphan_tool_call_is_ignored() -> None:
    assert closers_of(TS(1), SS(1, 1), C("orphan")) == [
        step_end(1, 3, 1002),
        turn_end(1, 4, 1002),
    ]


def test_core_112_results_follow_block_and_log_order() -> None:
    second = Append(
        "assistant/message",
        {"turn": 2, "step": 1, "content": [call_block("c3")]},
        "append",
    )
    closers = closers_of(TS(2), SS(2, 1), assistant2("c2", "c1"), second)
    assert [c["data"]["callId"] for c in closers[:3]] == ["c2", "c1", "c3"]
    assert [c["seq"] for c in closers] == [4, 5, 6, 7, 8]


def test_core_114_an_orphan_compact_start_is_ignored() -> None:
    compact_start = Append("compact/start", {"turn": 1})
    assert closers_of(TS(1), compact_start) == [turn_end(1, 2, 1001)]
