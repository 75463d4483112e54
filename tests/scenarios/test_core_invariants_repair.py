"""Core scenarios J (invariants, 126–139 and 146) and H 113, through ``Sessions``.

Everything runs through the default ``Sessions`` (``I``: invariants on) on every
backend; messages carry the ``invariant violated: `` prefix, and a rejected append
must leave events, seq, surface, decision state and messages as they were. H 113
appends crash-repair closers through such a session. H 102–112 and 114 (the closers
themselves, on the aggregate) are in test_core_repair_closers.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentlog.application import SessionHandle, Sessions
from agentlog.domain.errors import InvariantError, SessionError
from agentlog.domain.json import copy_json
from agentlog.domain.repair import interrupted_turn_closers
from tests.scenarios.harness import (
    SE,
    SS,
    TE,
    TS,
    A,
    Acall,
    Append,
    C,
    R,
    SessionsScenario,
    U,
    add,
    chunk,
    raises_exactly,
    text,
)

MakeApp = Callable[..., Sessions]
USER = {"kind": "user"}
INTERRUPTED = {"name": "InterruptedError", "code": "interrupted"}


def snapshot(app: Sessions, handle: SessionHandle) -> Any:
    """Everything a rejected append must leave as it was."""
    return (
        handle.events,
        handle.seq,
        handle.surface.seqs,
        copy_json(handle.aggregate.decision_state()),
        len(handle.aggregate.pending_events),
        app.messages(handle.id),
    )


def rejects(
    app: Sessions, handle: SessionHandle, append: Append, message: str
) -> InvariantError:
    """The kit's scenario on the live handle, plus everything else it must keep."""
    before = snapshot(app, handle)
    scenario = SessionsScenario(app, handle.id).when(append)
    scenario.then_raises(InvariantError, message, code="INVARIANT")
    assert snapshot(app, handle) == before
    assert isinstance(scenario.error, InvariantError)
    return scenario.error


def violated(detail: str) -> str:
    return "invariant violated: " + detail


def R_step(call_id: str, step: int) -> Append:
    return R(call_id, step=step)


# ------------------------------------------------------------ J. invariants

WELL_FORMED = (
    TS(1),
    U("go"),
    SS(1, 1),
    chunk(),
    Acall("c1"),
    C("c1"),
    R("c1"),
    SE(1, 1),
    TE(1),
)


def test_core_126_a_well_formed_turn_is_accepted(make_app: MakeApp) -> None:
    app = make_app()
    handle = app.create_session(session_id="ok")
    recorded = add(handle, *WELL_FORMED)
    assert [e["seq"] for e in recorded] == list(range(9))
    app.flush(handle)
    assert make_app().read_events("ok") == recorded


VIOLATIONS = [
    pytest.param((TS(1),), TS(2), "turn/start 2 while turn 1 is still open", id="127"),
    pytest.param((TS(1),), TE(2), "turn/end 2 does not match open turn 1", id="128"),
    pytest.param(
        (TS(1),), SS(2, 1), "step/start in turn 2 but open turn is 1", id="129"
    ),
    pytest.param(
        (TS(1), SS(1, 1)),
        SE(1, 2),
        "step/end names turn 1/step 2 but open is turn 1/step 1",
        id="130",
    ),
    pytest.param(
        (TS(1),),
        chunk(1, 1),
        "assistant/chunk names turn 1/step 1 but open is turn 1/step null",
        id="131",
    ),
    pytest.param(
        (TS(1), SS(1, 1)),
        R("ghost"),
        "tool/result for ghost with no prior tool/call in this step",
        id="133",
    ),
    pytest.param(
        (TS(1), TE(1)), TS(3), "turn/start expected turn 2, got 3", id="137-turn"
    ),
    pytest.param(
        (TS(1), SS(1, 1), SE(1, 1)),
        SS(1, 3),
        "step/start expected step 2 in turn 1, got 3",
        id="137-step",
    ),
    pytest.param(
        (TS(1), SS(1, 1)),
        TE(1),
        "turn/end 1 while step 1 is still open",
        id="138-turn-end",
    ),
    pytest.param(
        (TS(1), SS(1, 1)),
        SS(1, 2),
        "step/start 2 while step 1 is still open",
        id="138-step-start",
    ),
    pytest.param(
        (TS(1), SS(1, 1), C("c1"), SE(1, 1), SS(1, 2)),
        R_step("c1", 2),
        "tool/result for c1 with no prior tool/call in this step",
        id="139-result-in-later-step",
    ),
    pytest.param(
        (TS(1), SS(1, 1)),
        A("x", step=2),
        "assistant/message names turn 1/step 2 but open is turn 1/step 1",
        id="139-wrong-step",
    ),
]


@pytest.mark.parametrize(("given", "command", "detail"), VIOLATIONS)
def test_core_127_to_139_violations_are_rejected_with_the_spec_text(
    make_app: MakeApp, given: tuple[Append, ...], command: Append, detail: str
) -> None:
    app = make_app()
    handle = app.create_session(session_id="i")
    add(handle, *given)
    rejects(app, handle, command, violated(detail))
    # The same append is a rule of I only: st records it.
    unchecked = SessionsScenario(make_app(invariants=False), "st").given(*given)
    unchecked.when(command).then(command)


OUTSIDE = [
    U("x"),
    Append("context/message", {"content": [], "source": USER}, surface_op="append"),
    Append(
        "steering/message",
        {"turn": 1, "content": [], "source": USER},
        surface_op="append",
    ),
    Append("compaction/marker", {"foo": "bar"}),
]


@pytest.mark.parametrize("command", OUTSIDE, ids=lambda a: a.type)
def test_core_132_events_outside_any_open_turn(
    make_app: MakeApp, command: Append
) -> None:
    app = make_app()
    detail = (
        f"{command.type} appended outside any open turn "
        "(every event must be turn-enclosed)"
    )
    fresh = app.create_session(session_id="fresh")
    rejects(app, fresh, command, violated(detail))
    closed = app.create_session(session_id="closed")
    add(closed, TS(1), TE(1))
    rejects(app, closed, command, violated(detail))


def test_core_134_a_synthetic_crash_result_is_exempt(make_app: MakeApp) -> None:
    app = make_app()
    handle = app.create_session()
    crash = R("crashed", isError=True, error=INTERRUPTED)
    interrupted = TE(1, {"kind": "interrupted"})
    add(handle, TS(1), SS(1, 1), Acall("crashed"), crash, SE(1, 1), interrupted)
    assert handle.seq == 6
    other = R("x", isError=True, error={"name": "E", "code": "other"})
    add(handle, TS(2), SS(2, 1))
    rejects(
        app,
        handle,
        Append("tool/result", {**other.data, "turn": 2}, "append"),
        violated("tool/result for x with no prior tool/call in this step"),
    )


def test_core_135_a_call_without_a_result_is_legal(make_app: MakeApp) -> None:
    app = make_app()
    handle = app.create_session()
    error = {"kind": "error", "step": 1, "message": "boom"}
    add(handle, TS(1), SS(1, 1), C("c1"), SE(1, 1), TE(1, error))
    assert handle.seq == 5


def seed_of(*appends: Append) -> list[dict[str, Any]]:
    return [a.envelope(seq, time=1000 + seq) for seq, a in enumerate(appends)]


def test_core_136_history_meets_the_checker_when_asked(make_app: MakeApp) -> None:
    app = make_app()
    bad = seed_of(TS(1), TS(2))
    with raises_exactly(
        InvariantError, violated("turn/start 2 while turn 1 is still open")
    ):
        app.create_session(session_id="bad", seed=bad, strict=True)
    assert app.live_session("bad") is None
    assert not app.is_stored("bad")
    # docs/invariants.md#when-they-run: without strict, history passes (a)–(c) only; later appends are checked
    # against the state folded from it (turn 2 is open there).
    lenient = app.create_session(session_id="bad", seed=bad)
    rejects(app, lenient, TS(3), violated("turn/start 3 while turn 2 is still open"))
    add(lenient, TE(2))
    first = app.create_session(session_id="a")
    second = app.create_session(session_id="b")
    add(first, TS(1))
    add(second, TS(1))
    assert first.seq == second.seq == 1


def test_core_000_1_core_texts_win_over_invariant_texts(make_app: MakeApp) -> None:
    # docs/events.md#the-append-pipeline: checks (a)–(c) run before (d); this append breaks a surface rule and
    # the turn-enclosure rule, and the surface text wins.
    app = make_app()
    handle = app.create_session()
    with raises_exactly(
        SessionError, "surface replace: start seq 7 not found in surface"
    ):
        add(handle, U("x").with_intent({"op": "replace", "start": 7, "end": 7}, [0]))
    assert handle.seq == 0


REJECTED_146 = [
    TS(2),
    TE(2),
    SE(1, 2),
    R("ghost"),
    A("x", step=2),
    chunk(1, 7),
    SS(1, 2),
]


@pytest.mark.parametrize("command", REJECTED_146, ids=lambda a: a.type)
def test_core_146_a_rejected_append_changes_nothing_and_the_next_one_passes(
    make_app: MakeApp, command: Append
) -> None:
    app = make_app()
    handle = app.create_session(session_id="r")
    add(handle, TS(1), U("go"), SS(1, 1))
    app.flush(handle)
    add(handle, Acall("c1"), C("c1"))  # stored and pending events both
    before = snapshot(app, handle)
    SessionsScenario(app, "r").when(command).then_raises(InvariantError)
    assert snapshot(app, handle) == before
    recorded = add(handle, R("c1"), SE(1, 1), TE(1))
    assert [e["seq"] for e in recorded] == [5, 6, 7]
    recorded[0]["data"]["content"].append(text("mutated"))  # a copy: no effect
    app.flush(handle)
    stored = make_app().read_events("r")
    assert stored == handle.events
    assert stored[5]["data"]["content"] == [text("ok")]


# ------------------------------------------------------------ H. crash repair


def test_core_113_closers_pass_an_invariant_checking_session(
    make_app: MakeApp,
) -> None:
    app = make_app()
    handle = app.create_session(session_id="crashed")
    add(handle, TS(1), SS(1, 1), Acall("c1"))
    closers = interrupted_turn_closers(handle.events)
    assert closers == handle.aggregate.closers()
    recorded = add(
        handle,
        *(
            Append(c["type"], c["data"], c.get("surfaceOp"), c.get("sourceEventSeqs"))
            for c in closers
        ),
    )
    assert [e["type"] for e in recorded] == ["tool/result", "step/end", "turn/end"]
    assert recorded[-1]["data"]["reason"] == {"kind": "interrupted"}
    assert handle.aggregate.closers() == []
    add(handle, TS(2))  # the turn is closed: the next one opens
    app.flush(handle)
    assert make_app().read_events("crashed") == handle.events
