"""The turn writer (docs/agents.md): numbering, pairing, units of work, strictness."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from agentlog import (
    AsyncSessions,
    InvariantError,
    SessionError,
    SessionNotFoundError,
    Sessions,
    ToolCall,
    UnknownEventTypeError,
)
from tests.invariant_checker import InvariantChecker


@pytest.fixture
def app() -> Any:
    sessions = Sessions()
    yield sessions
    sessions.close()


def types(app: Sessions, session_id: str) -> list[str]:
    return [event["type"] for event in app.read_events(session_id)]


def checked(app: Sessions, session_id: str) -> list[dict[str, Any]]:
    events = app.read_events(session_id)
    checker = InvariantChecker()
    for event in events:
        checker.feed(event)
    assert checker.turns.open_turn is None
    return events


def test_a_tool_calling_turn_is_written_in_the_invariants_order(app: Sessions) -> None:
    with app.turn("s", user="What is 2+2?", create=True, cwd="/w") as turn:
        with turn.step() as step:
            step.chunk({"type": "reasoning-delta", "index": 0, "text": "easy"})
            step.assistant("Let me compute.", reasoning="easy", model=("acme", "m1"))
            call = step.tool_call("calc", {"expr": "2+2"}, call_id="c1")
            assert call == ToolCall("c1", "calc", '{"expr":"2+2"}')
            step.tool_result(call, "4")
        with turn.step() as step:
            step.assistant("4", usage={"inputTokens": 9, "outputTokens": 1})
    events = checked(app, "s")
    assert [e["type"] for e in events] == [
        "turn/start", "user/message", "step/start", "assistant/chunk",
        "assistant/message", "tool/call", "tool/result", "step/end",
        "step/start", "assistant/message", "step/end", "turn/end",
    ]  # fmt: skip
    message, result = events[4], events[6]
    assert message["sourceEventSeqs"] == [3]
    assert message["data"]["provenance"] == {"provider": "acme", "model": "m1"}
    assert result["sourceEventSeqs"] == [5]
    assert app.header("s")["cwd"] == "/w"
    assert app.messages("s")[1] == {
        "role": "assistant",
        "content": [
            {"type": "reasoning", "text": "easy"},
            {"type": "text", "text": "Let me compute."},
            {
                "type": "tool-call",
                "id": "c1",
                "name": "calc",
                "arguments": '{"expr":"2+2"}',
            },
        ],
    }
    assert events[-1]["data"] == {"turn": 1, "reason": {"kind": "completed"}}


def test_turns_and_steps_are_numbered_after_what_the_log_holds(app: Sessions) -> None:
    for _ in range(2):
        with app.turn("s", user="hi", create=True) as turn:
            for _ in range(3):
                with turn.step() as step:
                    step.assistant("ok")
    events = checked(app, "s")
    starts = [
        (e["data"]["turn"], e["data"]["step"])
        for e in events
        if e["type"] == "step/start"
    ]
    assert starts == [(t, s) for t in (1, 2) for s in (1, 2, 3)]
    other = Sessions()
    with pytest.raises(SessionNotFoundError):
        other.turn("missing", user="x").open()  # not created: refused, nothing stored
    assert not other.is_stored("missing")


def test_the_output_is_assembled_from_chunks_when_not_given(app: Sessions) -> None:
    with app.turn("s", user="go", create=True) as turn, turn.step() as step:
        step.chunk({"type": "text-delta", "index": 0, "text": "Read"})
        step.chunk({"type": "text-delta", "index": 0, "text": "ing"})
        step.chunk(
            {
                "type": "tool-call-delta",
                "index": 1,
                "id": "c9",
                "name": "read",
                "argumentsDelta": '{"p"',
            }
        )
        step.chunk(
            {"type": "tool-call-delta", "index": 1, "id": "c9", "argumentsDelta": ":1}"}
        )
        step.chunk({"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 2}})
        assert [call.id for call in step.tool_calls] == ["c9"]
        step.tool_result("c9", "done")
    events = checked(app, "s")
    message = next(e for e in events if e["type"] == "assistant/message")
    assert message["data"]["content"] == [
        {"type": "text", "text": "Reading"},
        {"type": "tool-call", "id": "c9", "name": "read", "arguments": '{"p":1}'},
    ]
    assert message["data"]["usage"] == {"inputTokens": 1, "outputTokens": 2}
    assert message["sourceEventSeqs"] == [3, 4, 5, 6, 7]


def test_results_pair_with_this_steps_calls_once(app: Sessions) -> None:
    with app.turn("s", user="go", create=True) as turn:
        with turn.step() as step:
            call = step.tool_call("t")
            step.tool_result(call, "one")
            with pytest.raises(InvariantError, match="no prior tool/call in this step"):
                step.tool_result(call, "twice")
            with pytest.raises(InvariantError, match='"nope"'):
                step.tool_result("nope", "x")
            with pytest.raises(
                SessionError, match="already recorded its assistant message"
            ):
                step.assistant("late")
            step_two = step
        with pytest.raises(SessionError, match="is not open"):
            step_two.assistant("after its block")
        with turn.step() as step:
            step.tool_call("t", call_id="same")
            with pytest.raises(SessionError, match="already used"):
                step.tool_call("t", call_id="same")
        with turn.step() as step, pytest.raises(InvariantError):
            step.tool_result(call, "a call of the step before")
    checked(app, "s")


def failing_turn(app: Sessions) -> None:
    with app.turn("s", user="go", create=True) as turn:
        turn.context("AGENTS.md says hi", plugin="agents-md")
        with turn.step() as step:
            step.assistant("ok")
        with turn.step() as step:
            step.assistant("half")
            step.tool_call("t")
            raise RuntimeError("model down")


def test_a_failed_step_stores_nothing_and_the_turn_ends_in_error(app: Sessions) -> None:
    with pytest.raises(RuntimeError, match="model down"):
        failing_turn(app)
    events = checked(app, "s")
    assert [e["type"] for e in events][-3:] == [
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    assert events[-1]["data"]["reason"] == {
        "kind": "error", "step": 2, "message": "model down", "code": "RuntimeError",
    }  # fmt: skip
    assert all("half" not in str(e) for e in events)


def test_a_caught_step_failure_keeps_what_waited_for_it(app: Sessions) -> None:
    with app.turn("s", user="go", create=True) as turn:
        turn.steer("be brief")
        with pytest.raises(ValueError), turn.step():
            raise ValueError
        with turn.step() as step:
            step.assistant("done")
    events = checked(app, "s")
    kinds = [e["type"] for e in events]
    assert kinds.count("steering/message") == 1
    assert kinds.index("steering/message") < kinds.index("step/start")
    steps = [e["data"]["step"] for e in events if e["type"] == "step/start"]
    assert steps == [1]  # the failed step's number is free again


def failing_turn_unit(app: Sessions) -> None:
    with app.turn("s", user="go", unit="turn", create=True) as turn:
        with turn.step() as step:
            step.assistant("ok")
        raise KeyError("x")


def test_a_turn_unit_stores_nothing_when_it_fails(app: Sessions) -> None:
    with pytest.raises(KeyError):
        failing_turn_unit(app)
    assert not app.is_stored("s")
    with app.turn("s", user="again", unit="turn", create=True) as turn:
        with turn.step() as step:
            step.assistant("ok")
        turn.context("between", plugin="p")  # written at once inside the unit
    assert types(app, "s").count("turn/end") == 1
    checked(app, "s")


def test_end_reasons_follow_the_precedence(app: Sessions) -> None:
    with app.turn("s", user="a", create=True) as turn, turn.step() as step:
        step.chunk({"type": "finish", "reason": {"kind": "max-tokens"}})
    with app.turn("s", user="b") as turn:
        with turn.step() as step:
            step.assistant("x", max_tokens=True)
        turn.end("disposed")
    with pytest.raises(KeyboardInterrupt), app.turn("s", user="c"):
        raise KeyboardInterrupt
    with app.turn("s", user="d") as turn:
        turn.end({"kind": "rejected", "reason": "hook vetoed it"})
        with pytest.raises(SessionError, match="over"):
            turn.user("too late")
    reasons = [
        e["data"]["reason"] for e in checked(app, "s") if e["type"] == "turn/end"
    ]
    assert reasons == [
        {"kind": "max-tokens"},
        {"kind": "disposed"},
        {"kind": "aborted", "reason": "KeyboardInterrupt"},
        {"kind": "rejected", "reason": "hook vetoed it"},
    ]


def test_strict_types_refuse_a_typo_in_a_core_family(app: Sessions) -> None:
    with app.turn("s", user="a", create=True) as turn:
        with pytest.raises(UnknownEventTypeError, match='did you mean "user/message"'):
            turn.event("user/mesage", {"content": []})
        with pytest.raises(SessionError, match="written by the turn writer itself"):
            turn.event("turn/end", {"turn": 1})
        turn.event("todo/write", {"todos": []})
        turn.event("myplugin/thing", {"any": "json"})
    with app.turn("s", user="b", strict=False) as turn:
        turn.event("tool/code-dispatch", {"plugin": "ok"})
    assert "tool/code-dispatch" in types(app, "s")
    assert "user/mesage" not in types(app, "s")


def test_a_bad_payload_fails_where_it_is_given(app: Sessions) -> None:
    with app.turn("s", user="a", create=True) as turn:
        with pytest.raises(SessionError, match="invalid payload"):
            turn.event("todo/write", {"todos": "not a list"})
        with pytest.raises(SessionError, match="non-JSON"):
            turn.context([{"type": "text", "text": b"bytes"}], plugin="p")
    checked(app, "s")


def test_a_turn_cannot_open_over_an_open_one(app: Sessions) -> None:
    handle = app.create_session(session_id="s")
    handle.append("turn/start", {"turn": 1})
    with pytest.raises(InvariantError, match="turn/start while turn 1 is still open"):
        app.turn("s", user="x").open()


def test_steering_from_another_thread_lands_between_steps(app: Sessions) -> None:
    with app.turn("s", user="go", create=True) as turn:
        with turn.step() as step:
            step.assistant("working")

        def steer() -> None:
            with app.command("s") as handle:
                handle.append(
                    "steering/message",
                    {
                        "turn": 1,
                        "content": [{"type": "text", "text": "faster"}],
                        "source": {"kind": "user"},
                    },
                    surface_op="append",
                )

        thread = threading.Thread(target=steer)
        thread.start()
        thread.join()
        with turn.step() as step:
            step.assistant("ok")
    kinds = types(app, "s")
    assert kinds.index("steering/message") < len(kinds) - 4
    checked(app, "s")


def test_async_turns_write_the_same_log() -> None:
    async def main() -> list[dict[str, Any]]:
        app = AsyncSessions()
        async with app.turn("s", user="hi", create=True) as turn:
            async with turn.step() as step:
                call = step.tool_call("t", "{}", call_id="c")
                step.tool_result(call, "r")
            async with turn.step() as step:
                step.assistant("bye")

        async def failing() -> None:
            async with app.turn("s", user="again", unit="turn") as turn:
                async with turn.step() as step:
                    step.assistant("x")
                raise RuntimeError

        with pytest.raises(RuntimeError):
            await failing()
        events = await app.read_events("s")
        await app.close()
        return events

    events = asyncio.run(main())
    checker = InvariantChecker()
    for event in events:
        checker.feed(event)
    assert [e["type"] for e in events].count("turn/end") == 1
    assert events[-1]["data"]["reason"] == {"kind": "completed"}


def test_a_strict_application_refuses_typos_on_every_append() -> None:
    strict = Sessions(strict_types=True)
    handle = strict.create_session(session_id="s")
    handle.append("turn/start", {"turn": 1})
    with pytest.raises(UnknownEventTypeError, match='did you mean "user/message"'):
        handle.append("user/mesage", {"content": [], "source": {"kind": "user"}})
    assert handle.seq == 1  # nothing recorded
    handle.append("myplugin/thing", {"any": "json"})  # other families pass
    handle.append("todo/write", {"todos": []})
    handle.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    strict.flush(handle)

    def typo_in_a_command() -> None:
        with strict.command("s") as held:
            held.append("turn/start", {"turn": 2})
            held.append("tool/code-dispatch", {"plugin": "x"})

    with pytest.raises(UnknownEventTypeError):
        typo_in_a_command()
    with pytest.raises(UnknownEventTypeError), strict.turn("s", user="a") as turn:
        turn.event("tool/code-dispatch", {"plugin": "x"})  # the app's setting wins
    assert types(strict, "s") == [
        "turn/start",
        "myplugin/thing",
        "todo/write",
        "turn/end",
        "turn/start",
        "user/message",
        "turn/end",
    ]
    strict.close()
    lenient = Sessions(invariants=False)  # the default: a typo is a plugin event
    lenient.create_session(session_id="s").append("user/mesage", {"x": 1})
    assert lenient.read_events("s")[0]["type"] == "user/mesage"
    lenient.close()

    async def main() -> None:
        app = AsyncSessions(strict_types=True)
        handle = await app.create_session(session_id="a")
        with pytest.raises(UnknownEventTypeError):
            handle.append("assistant/mesage", {"content": []})
        await app.close()

    asyncio.run(main())


def half_step(turn: Any) -> None:
    with turn.step() as step:
        step.assistant("half")
        raise ValueError


async def half_async_step(turn: Any) -> None:
    async with turn.step() as step:
        step.assistant("half")
        raise ValueError


def test_a_turn_on_a_handle_writes_and_the_loop_flushes(app: Sessions) -> None:
    handle = app.create_session(session_id="s")
    with app.turn(handle, user="go") as turn:
        with turn.step() as step:
            call = step.tool_call("t", "{}", call_id="c")
            step.tool_result(call, "r")
        with pytest.raises(ValueError):
            half_step(turn)
        with turn.step() as step:
            step.assistant("done")
    assert not app.is_stored("s")  # nothing flushed by the writer
    assert "half" not in str(handle.pending)
    app.flush(handle)
    events = checked(app, "s")
    assert [e["data"]["step"] for e in events if e["type"] == "step/start"] == [1, 2]


def test_an_async_turn_on_a_handle_writes_and_the_loop_flushes() -> None:
    async def main() -> list[dict[str, Any]]:
        app = AsyncSessions()
        handle = await app.create_session(session_id="s")
        async with app.turn(handle, user="go") as turn:
            async with turn.step() as step:
                call = step.tool_call("t", "{}", call_id="c")
                step.tool_result(call, "r")
            with pytest.raises(ValueError):
                await half_async_step(turn)
            async with turn.step() as step:
                step.assistant("done")
        assert not await app.is_stored("s")  # nothing flushed by the writer
        assert "half" not in str(handle.pending)
        await app.flush(handle)
        stored = await app.get_session("s")
        assert stored is handle
        async with (
            app.turn(stored, user="again", unit="turn") as turn,
            turn.step() as step,
        ):
            step.assistant("ok")
        await app.flush(handle)
        events = await app.read_events("s")
        await app.close()
        return events

    events = asyncio.run(main())
    checker = InvariantChecker()
    for event in events:
        checker.feed(event)
    assert checker.turns.open_turn is None
    steps = [
        (e["data"]["turn"], e["data"]["step"])
        for e in events
        if e["type"] == "step/start"
    ]
    assert steps == [(1, 1), (1, 2), (2, 1)]
    assert "half" not in str(events)


def test_a_cancelled_async_step_on_a_handle_drops_its_events() -> None:
    async def main() -> None:
        app = AsyncSessions()
        handle = await app.create_session(session_id="s")
        started = asyncio.Event()

        async def stuck_step(turn: Any) -> None:
            async with turn.step() as step:
                step.assistant("half")
                started.set()
                await asyncio.sleep(60)

        async with app.turn(handle, user="go") as turn:
            task = asyncio.create_task(stuck_step(turn))
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            async with turn.step() as step:
                step.assistant("done")
        assert "half" not in str(handle.pending)
        await app.flush(handle)
        events = await app.read_events("s")
        await app.close()
        checker = InvariantChecker()
        for event in events:
            checker.feed(event)
        assert [e["type"] for e in events].count("step/start") == 1

    asyncio.run(main())
