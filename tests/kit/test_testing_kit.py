"""agentlog.testing: each step checks what it promises, and fails when it does not hold."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agentlog import InvariantError, SessionForkError, SurfaceIntentError
from agentlog.testing import Append, Scenario, SessionsScenario, given, without_time
from tests.builders import SE, SS, TE, TS, A, U

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentlog import Sessions

NOT_IN_TURN = 'invariant violation: assistant/message "x" outside an open turn'


def test_then_compares_the_new_events_with_appends_at_their_seqs() -> None:
    scenario = given(TS(1), U("hi"), SS(1, 1)).when(A("hello"))
    scenario.then(A("hello"))
    assert scenario.first_new_seq == 3
    assert scenario.new == [A("hello").envelope(3)]
    assert [event["seq"] for event in scenario.events] == [0, 1, 2, 3]


def test_then_fails_on_other_events_and_on_an_error() -> None:
    scenario = given(TS(1), U("hi"), SS(1, 1)).when(A("hello"))
    with pytest.raises(AssertionError):
        scenario.then(A("bye"))
    with pytest.raises(AssertionError):
        scenario.then()
    with pytest.raises(AssertionError, match="expected events"):
        given().when(A("x")).then(A("x"))


def test_invariants_are_on_by_default_and_can_be_turned_off() -> None:
    given().when(A("x")).then_raises(InvariantError, code="INVARIANT")
    given(invariants=False).when(A("x")).then(A("x"))
    Scenario(invariants=False).when(A("x")).then(A("x"))


def test_then_raises_checks_the_class_the_message_and_the_code() -> None:
    rejected = given().when(U("x").with_intent("bogus"))
    rejected.then_raises(SurfaceIntentError)
    with pytest.raises(AssertionError):
        rejected.then_raises(InvariantError)
    with pytest.raises(AssertionError):
        rejected.then_raises(SurfaceIntentError, "another message")
    with pytest.raises(AssertionError):
        rejected.then_raises(SurfaceIntentError, code="INVARIANT")
    with pytest.raises(AssertionError, match="got events"):
        given(TS(1)).when(U("x")).then_raises(SurfaceIntentError)


def test_a_command_is_any_callable_on_the_aggregate() -> None:
    scenario = given(TS(1), U("hi")).when(lambda session: session.repair())
    scenario.then(TE(1, "interrupted"))
    assert scenario.result == scenario.new


def test_a_rejected_command_that_changed_the_state_is_caught() -> None:
    def half_done(session: object) -> None:
        TS(1).to(session)
        raise ValueError("after recording")

    with pytest.raises(AssertionError, match="recorded events"):
        given().when(half_done)


def test_times_come_from_the_clock() -> None:
    ticks = iter(range(100, 200))
    scenario = given(TS(1), clock=lambda: next(ticks)).when(U("hi"))
    # The header took the first tick (its createdAt).
    assert [event["time"] for event in scenario.events] == [101, 102]
    assert without_time(scenario.new) == without_time([U("hi").envelope(1)])


def test_append_is_the_arguments_of_one_append_call() -> None:
    plain = Append("user/message", {"content": [], "source": {"kind": "user"}})
    assert plain.envelope(4, time=9) == {
        "type": "user/message",
        "seq": 4,
        "time": 9,
        "data": plain.data,
    }
    marked = plain.with_intent("append", [1])
    assert marked.envelope(4)["surfaceOp"] == "append"
    assert marked.envelope(4)["sourceEventSeqs"] == [1]


def test_a_sessions_scenario_stores_and_reads_back(
    make_app: Callable[..., Sessions],
) -> None:
    app = make_app()
    scenario = SessionsScenario(app, "s1").given(TS(1), U("hi"), SS(1, 1))
    scenario.when(A("hello")).then(A("hello"))
    assert [event["seq"] for event in scenario.events] == [0, 1, 2, 3]
    reader = make_app()
    assert without_time(reader.read_events("s1")) == without_time(scenario.events)


def test_a_failed_sessions_command_stores_nothing(
    make_app: Callable[..., Sessions],
) -> None:
    app = make_app()
    scenario = SessionsScenario(app, "s1").given(TS(1), U("hi"), SS(1, 1))
    scenario.when(SE(2, 1)).then_raises(InvariantError, code="INVARIANT")
    scenario.when(lambda sessions, sid: sessions.fork(sid, 1)).then_raises(
        SessionForkError
    )
    assert len(scenario.events) == 3


def test_the_examples_of_docs_testing_md_pass() -> None:
    """docs/testing.md's examples run as written, and their tests pass."""
    page = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    namespace: dict[str, Any] = {}
    for block in blocks:
        exec(compile(block, "docs/testing.md", "exec"), namespace)
    tests = [value for name, value in namespace.items() if name.startswith("test_")]
    assert len(tests) == 3
    for test in tests:
        test()
