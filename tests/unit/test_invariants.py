"""Turn/step/tool-call invariants: core scenarios 126–146.

Per docs/invariants.md scenarios 140–144 are unit tests of the checker fed directly (through
``append`` the core texts win); here every log goes to ``InvariantChecker`` (the full
steps 1–6) and the step-5 rules also to ``TurnInvariants`` alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from agentlog.domain.errors import InvariantError
from agentlog.domain.invariants import TurnInvariants
from agentlog.domain.repair import interrupted_turn_closers
from tests.builders import SE, SS, TE, TS, USER, A, Acall, Append, C, R, U, chunk, text
from tests.builders import log as _log
from tests.invariant_checker import InvariantChecker

if TYPE_CHECKING:
    from agentlog.domain.json import Envelope


def replace(start: int, end: int, src: Any = None) -> Append:
    """A compaction checkpoint (a user/message needs only an open turn)."""
    data = {
        "content": [text("summary")],
        "source": {"kind": "plugin", "plugin": "compact"},
    }
    return Append(
        "user/message", data, {"op": "replace", "start": start, "end": end}, src
    )


def log(*items: Append) -> list[Envelope]:
    return _log(*items, time=0)


def event(seq: int, item: Append) -> Envelope:
    return item.envelope(seq, time=0)


def accepted(*items: Append) -> InvariantChecker:
    checker = InvariantChecker()
    for envelope in log(*items):
        checker.feed(envelope)
    return checker


def violation(*items: Append) -> str:
    """The message the last item raises after all earlier ones were accepted.

    Step-5 rules must fail the same way in ``TurnInvariants`` alone, and a rejected
    event must leave both checkers unchanged (146).
    """
    *history, last = log(*items)
    checker = InvariantChecker()
    turns = TurnInvariants()
    for envelope in history:
        checker.feed(envelope)
        turns.check(envelope)
        turns.apply(envelope)
    before = (checker.last_seq, set(checker.known_seqs), checker.surface.to_state())
    turns_before = turns.to_state()
    with pytest.raises(InvariantError) as caught:
        checker.feed(last)
    after = (checker.last_seq, set(checker.known_seqs), checker.surface.to_state())
    assert after == before
    assert checker.turns.to_state() == turns_before
    message = str(caught.value)
    assert message.startswith("invariant violated: ")
    assert caught.value.code == "INVARIANT"
    return message.removeprefix("invariant violated: ")


def turns_violation(*items: Append) -> str:
    """The step-5 message of the last item from ``TurnInvariants`` alone."""
    *history, last = log(*items)
    turns = TurnInvariants()
    for envelope in history:
        turns.check(envelope)
        turns.apply(envelope)
    with pytest.raises(InvariantError) as caught:
        turns.check(last)
    return caught.value.detail


def test_core_126_well_formed_turn() -> None:
    accepted(TS(), U("u"), SS(), chunk(), Acall("c1"), C("c1"), R("c1"), SE(), TE())


@pytest.mark.parametrize(
    ("items", "detail"),
    [
        ((TS(1), TS(2)), "turn/start 2 while turn 1 is still open"),  # 127
        ((TS(1), TE(2)), "turn/end 2 does not match open turn 1"),  # 128
        ((TS(1), SS(2, 1)), "step/start in turn 2 but open turn is 1"),  # 129
        (
            (TS(1), SS(1, 1), SE(1, 2)),
            "step/end names turn 1/step 2 but open is turn 1/step 1",
        ),  # 130
        (
            (TS(1), chunk(1, 1)),
            "assistant/chunk names turn 1/step 1 but open is turn 1/step null",
        ),  # 131
        (
            (TS(), SS(), R("ghost")),
            "tool/result for ghost with no prior tool/call in this step",
        ),  # 133
        ((TS(1), TE(1), TS(3)), "turn/start expected turn 2, got 3"),  # 137
        (
            (TS(), SS(1, 1), SE(1, 1), SS(1, 3)),
            "step/start expected step 2 in turn 1, got 3",
        ),  # 137
        ((TS(), SS(1, 1), TE(1)), "turn/end 1 while step 1 is still open"),  # 138
        ((TS(), SS(1, 1), SS(1, 2)), "step/start 2 while step 1 is still open"),  # 138
        (
            (TS(), SS(1, 1), C("c1"), SE(1, 1), SS(1, 2), R("c1", step=2)),
            "tool/result for c1 with no prior tool/call in this step",
        ),  # 139
        (
            (TS(), SS(1, 1), A(step=2)),
            "assistant/message names turn 1/step 2 but open is turn 1/step 1",
        ),  # 139
    ],
)
def test_core_127_to_139_step_five_rules(
    items: tuple[Append, ...], detail: str
) -> None:
    assert violation(*items) == detail
    assert turns_violation(*items) == detail


@pytest.mark.parametrize(
    "item",
    [
        U("u"),
        Append("context/message", {"content": [], "source": USER}, "append"),
        Append(
            "steering/message", {"turn": 1, "content": [], "source": USER}, "append"
        ),
        Append("compaction/marker", {"foo": "bar"}),
    ],
)
def test_core_132_events_outside_a_turn(item: Append) -> None:
    detail = (
        f"{item[0]} appended outside any open turn (every event must be turn-enclosed)"
    )
    assert violation(item) == detail
    assert violation(TS(), TE(), item) == detail


def test_core_134_synthetic_crash_result_is_exempt() -> None:
    interrupted = R(
        "crashed",
        isError=True,
        error={"name": "InterruptedError", "code": "interrupted"},
    )
    accepted(TS(), SS(), Acall("crashed"), interrupted, SE(), TE(reason="interrupted"))
    assert violation(TS(), SS(), R("x", isError=True, error={"code": "other"})) == (
        "tool/result for x with no prior tool/call in this step"
    )


def test_core_135_call_without_result_is_legal() -> None:
    accepted(TS(), SS(), C("c1"), SE(), TE(reason="error"))


def test_core_136_seed_replay_and_per_session_state() -> None:
    with pytest.raises(InvariantError, match="turn/start 2 while turn 1 is still open"):
        accepted(TS(1), TS(2))
    first, second = accepted(TS(1)), accepted(TS(1))
    assert first.turns.open_turn == second.turns.open_turn == 1


def test_core_140_provenance_values() -> None:
    checker = accepted(TS())
    cases = [
        ([], "sourceEventSeqs must not be empty when present"),
        ([0, 0], "sourceEventSeqs must not contain duplicates"),
        ([1], "sourceEventSeqs must reference earlier events: 1 >= current seq 1"),
        ([99], "sourceEventSeqs must reference earlier events: 99 >= current seq 1"),
    ]
    for sources, detail in cases:
        with pytest.raises(InvariantError) as caught:
            checker.check(event(1, U(src=sources)))
        assert caught.value.detail == detail
    gap = InvariantChecker()
    gap.feed(event(0, TS()))
    with pytest.raises(InvariantError, match=r"references unknown seq 1$"):
        gap.check(event(2, U(src=[1])))


def test_core_141_replace_order_is_by_position() -> None:
    todo = Append("todo/write", {"todos": []})
    base = (TS(), todo, U("a"), U("b"))  # surface [2, 3]
    assert violation(*base, replace(3, 2, [3, 2])) == (
        "surface replace: start seq 3 (pos 1) is after end seq 2 (pos 0) on the surface"
    )
    reordered = (*base, replace(2, 2, [2]))  # surface [4, 3]
    assert accepted(*reordered, replace(4, 3, [4, 3])).surface.seqs == [5]
    assert violation(*reordered, replace(3, 4, [3, 4])) == (
        "surface replace: start seq 3 (pos 1) is after end seq 4 (pos 0) on the surface"
    )


def test_core_142_replace_coverage() -> None:
    base = (TS(), SS(), U("a"), U("b"))
    missing = (
        "surface replace: sourceEventSeqs must include every shadowed surface node"
    )
    assert violation(*base, replace(2, 3, [2])) == f"{missing}; missing 3"
    assert violation(*base, replace(2, 2)) == f"{missing}; missing 2"
    with pytest.raises(InvariantError, match=r"missing 3$"):
        accepted(*base, replace(2, 3, [2]))


def test_core_143_replace_range_not_on_the_surface() -> None:
    base = (TS(), SS(), U("a"))
    assert violation(*base, replace(1, 2, [1, 2])) == (
        "surface replace: start seq 1 is not on the surface"
    )
    assert violation(*base, replace(2, 99, [2])) == (
        "surface replace: end seq 99 is not on the surface"
    )


def test_core_144_non_surface_event_with_markers() -> None:
    assert violation(TS(), Append("turn/end", {"turn": 1}, None, [0])) == (
        "turn/end cannot carry sourceEventSeqs (non-surface event)"
    )
    assert violation(TS(), Append("turn/end", {"turn": 1}, "append", None)) == (
        "turn/end cannot carry surfaceOp (non-surface event)"
    )


def test_core_145_error_text_and_code() -> None:
    error = InvariantError("seq must strictly increase")
    assert str(error) == "invariant violated: seq must strictly increase"
    assert error.code == "INVARIANT"
    checker = accepted(TS())
    with pytest.raises(InvariantError) as caught:
        checker.check(event(0, TE()))
    assert str(caught.value) == (
        "invariant violated: seq must strictly increase: saw 0 after 0"
    )


def test_core_146_rejection_changes_nothing_and_next_event_passes() -> None:
    assert violation(TS(), SS(), R("ghost")) == (
        "tool/result for ghost with no prior tool/call in this step"
    )
    checker = accepted(TS(), SS())
    with pytest.raises(InvariantError):
        checker.feed(event(2, R("ghost")))
    checker.feed(event(2, SE()))
    assert checker.turns.next_step == 2


def test_core_113_repair_closers_satisfy_the_checker() -> None:
    events = log(TS(), SS(), Acall("c1"))
    checker = accepted(TS(), SS(), Acall("c1"))
    for closer in interrupted_turn_closers(events):
        checker.feed(closer)
    assert checker.turns.open_turn is None


def test_turn_state_round_trips_and_apply_is_total() -> None:
    turns = TurnInvariants()
    for envelope in log(TS(), SS(), C("c1"), C("c2"), R("c1")):
        turns.apply(envelope)
    restored = TurnInvariants.from_state(turns.to_state())
    assert (
        restored.to_state()
        == turns.to_state()
        == {
            "openTurn": 1,
            "openStep": 1,
            "nextTurn": 1,
            "nextStep": 1,
            "pendingCalls": ["c2"],
        }
    )
    garbage: list[Envelope] = [
        {"type": "turn/end", "seq": 0, "time": 0, "data": None},
        {"type": "tool/call", "seq": 1, "time": 0, "data": {"callId": ["x"]}},
        {"type": "turn/start", "seq": 2, "time": 0, "data": "nope"},
    ]
    for envelope in garbage:
        restored.apply(envelope)
    assert restored.open_turn is None
