"""Random agent loops written through the turn API keep every rule by themselves.

Each example drives a generated loop (turns of steps with chunks, text, reasoning,
parallel tool calls answered in any order or not at all, steering, context, todos,
failing steps and failing turns) through ``app.turn``, on an application whose own
invariant check is off, so only the writer keeps the rules. The stored log must then
pass the full checker of docs/invariants.md, number its turns and steps from 1, close
every turn, and derive exactly the messages of the units that succeeded.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlog.application import Sessions
from tests.invariant_checker import InvariantChecker

MakeApp = Callable[..., Sessions]


class BoomError(Exception):
    """A failure the loop raises on purpose."""


texts = st.text(max_size=12)
steps = st.fixed_dictionaries(
    {
        "chunks": st.lists(texts, max_size=3),
        "text": st.none() | texts,
        "reasoning": st.none() | texts,
        "calls": st.integers(0, 3),
        "answer": st.lists(st.integers(0, 2), max_size=3, unique=True),
        "error": st.booleans(),
        "fail": st.integers(0, 6).map(lambda n: n == 0),
        "steer": st.none() | texts,
    }
)
turns = st.fixed_dictionaries(
    {
        "user": st.none() | texts,
        "unit": st.sampled_from(["step", "turn"]),
        "context": st.none() | texts,
        "todo": st.booleans(),
        "steps": st.lists(steps, max_size=4),
        "fail": st.integers(0, 5).map(lambda n: n == 0),
        "reason": st.sampled_from(["completed", "max-tokens", "disposed"]),
    }
)


def frame(tag: str, kind: str, text: str) -> dict[str, Any]:
    blocks = [{"type": "text", "text": t} for t in (f'<{tag} source="{kind}">', text)]
    return {"role": "user", "content": [*blocks, {"type": "text", "text": f"</{tag}>"}]}


def run_step(step: Any, spec: dict[str, Any], out: list[dict[str, Any]]) -> None:
    """Write one step; appends to ``out`` the messages it should derive."""
    for piece in spec["chunks"]:
        step.chunk({"type": "text-delta", "index": 0, "text": piece})
    explicit = spec["text"] is not None or spec["reasoning"] is not None
    if explicit:
        step.assistant(spec["text"], reasoning=spec["reasoning"])
    calls = [step.tool_call(f"tool{i}", {"n": i}) for i in range(spec["calls"])]
    blocks: list[dict[str, Any]] = []
    if explicit:
        if spec["reasoning"] is not None:
            blocks.append({"type": "reasoning", "text": spec["reasoning"]})
        if spec["text"] is not None:
            blocks.append({"type": "text", "text": spec["text"]})
    elif spec["chunks"] and not calls:
        blocks.append({"type": "text", "text": "".join(spec["chunks"])})
    for call in calls:
        blocks.append(
            {
                "type": "tool-call",
                "id": call.id,
                "name": call.name,
                "arguments": call.arguments,
            }
        )
    if blocks:
        out.append({"role": "assistant", "content": blocks})
    for index in spec["answer"]:
        if index >= len(calls):
            continue
        step.tool_result(calls[index], f"out{index}", is_error=spec["error"])
        result = {
            "type": "tool-result",
            "toolCallId": calls[index].id,
            "content": [{"type": "text", "text": f"out{index}"}],
            "isError": spec["error"],
        }
        out.append({"role": "user", "content": [result]})
    if spec["fail"]:
        raise BoomError


def run_turn(app: Sessions, session_id: str, spec: dict[str, Any]) -> list[Any]:
    """Write one turn; returns the messages it should derive."""
    out: list[dict[str, Any]] = []
    turn = app.turn(session_id, user=spec["user"], unit=spec["unit"], create=True)
    try:
        with turn:
            if spec["user"] is not None:
                out.append(
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": spec["user"]}],
                    }
                )
            if spec["context"] is not None:
                turn.context(spec["context"], plugin="p")
                out.append(frame("context", "plugin", spec["context"]))
            if spec["todo"]:
                turn.event("todo/write", {"todos": []})
            for step_spec in spec["steps"]:
                if step_spec["steer"] is not None:
                    turn.steer(step_spec["steer"])
                    out.append(frame("steering", "user", step_spec["steer"]))
                produced: list[dict[str, Any]] = []
                try:
                    with turn.step() as step:
                        run_step(step, step_spec, produced)
                except BoomError:
                    continue  # the step stored nothing; the turn goes on
                out.extend(produced)
            turn.end(spec["reason"])
            if spec["fail"]:
                raise BoomError
    except BoomError:
        if spec["unit"] == "turn":
            return []  # the turn was one unit: nothing of it is stored
    return out


LOOPS = st.lists(turns, min_size=1, max_size=4)
FIXTURE_OK = [HealthCheck.function_scoped_fixture]


@pytest.mark.parametrize("backend", ["popo"], indirect=True)
@settings(max_examples=12, deadline=None, suppress_health_check=FIXTURE_OK)
@given(loop=LOOPS)
def test_random_loops_keep_every_rule(
    make_app: MakeApp, loop: list[dict[str, Any]]
) -> None:
    check_loop(make_app, loop)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["popo", "sqlite"], indirect=True)
@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURE_OK)
@given(loop=LOOPS)
def test_many_random_loops_keep_every_rule(
    make_app: MakeApp, loop: list[dict[str, Any]]
) -> None:
    check_loop(make_app, loop)


def check_loop(make_app: MakeApp, loop: list[dict[str, Any]]) -> None:
    """Drive ``loop`` through the writer; check the log and the messages."""
    app = make_app(invariants=False)
    session_id = str(uuid.uuid4())
    expected: list[Any] = []
    stored_turns = 0
    for spec in loop:
        produced = run_turn(app, session_id, spec)
        expected.extend(produced)
        stored_turns += not (spec["unit"] == "turn" and spec["fail"])
    if stored_turns == 0:
        assert not app.is_stored(session_id)
        return
    events = make_app().read_events(session_id)  # a second application reads the store
    checker = InvariantChecker()
    for event in events:
        checker.feed(event)
    assert checker.turns.open_turn is None
    starts = [e["data"]["turn"] for e in events if e["type"] == "turn/start"]
    assert starts == list(range(1, stored_turns + 1))
    ends = [e["data"]["reason"]["kind"] for e in events if e["type"] == "turn/end"]
    assert len(ends) == stored_turns
    assert set(ends) <= {"completed", "max-tokens", "disposed", "error"}
    for event in events:
        if event["type"] == "tool/result":
            (cited,) = event["sourceEventSeqs"]
            assert events[cited]["type"] == "tool/call"
            assert events[cited]["data"]["callId"] == event["data"]["callId"]
    assert app.messages(session_id) == expected
    assert make_app().messages(session_id) == expected
