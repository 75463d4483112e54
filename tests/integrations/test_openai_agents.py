"""AgentlogSession under the real OpenAI Agents SDK, side by side with SQLiteSession.

A scripted ``Model`` plays the model (no network). Every run goes once through an
``AgentlogSession`` and once through the SDK's own ``SQLiteSession``: the items read
back and every input the model received must be equal. The log itself must be a
valid agentlog session: a run with one tool call is one turn of two steps.
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest

agents = pytest.importorskip("agents")

from agents import Agent, Runner, SQLiteSession, function_tool  # noqa: E402
from agents.items import ModelResponse  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import (  # noqa: E402
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)
from openai.types.responses.response_reasoning_item import Summary  # noqa: E402

from agentlog import AsyncSessions, Sessions  # noqa: E402
from agentlog.integrations.openai_agents import AgentlogSession  # noqa: E402
from tests.invariant_checker import InvariantChecker  # noqa: E402


def say(text: str, item_id: str = "msg_1") -> ResponseOutputMessage:
    part = ResponseOutputText(type="output_text", text=text, annotations=[])
    return ResponseOutputMessage(
        id=item_id, type="message", role="assistant", status="completed", content=[part]
    )


def call(name: str, arguments: str, call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call",
        name=name,
        arguments=arguments,
        call_id=call_id,
        id=f"fc_{call_id}",
    )


def think(text: str) -> ResponseReasoningItem:
    return ResponseReasoningItem(
        id="rs_1", type="reasoning", summary=[Summary(type="summary_text", text=text)]
    )


class ScriptedModel(Model):
    """Returns the scripted outputs in order and remembers every input it got."""

    def __init__(self, outputs: list[list[Any]]) -> None:
        self.outputs = outputs
        self.inputs: list[Any] = []

    def _next(self, given: Any) -> list[Any]:
        self.inputs.append(copy.deepcopy(given))
        return self.outputs.pop(0)

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        usage = Usage(requests=1, input_tokens=10, output_tokens=2, total_tokens=12)
        return ModelResponse(output=self._next(input), usage=usage, response_id=None)

    async def stream_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> Any:
        output = self._next(input)
        response = Response(
            id="resp_1", created_at=0, model="scripted", object="response", output=output,
            parallel_tool_calls=True, tool_choice="auto", tools=[],
        )  # fmt: skip
        yield ResponseCompletedEvent(
            type="response.completed", response=response, sequence_number=0
        )


@function_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@function_tool
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


def script() -> list[list[Any]]:
    return [
        [think("Use the tool."), call("add", '{"a": 1, "b": 2}', "call_1")],
        [say("1 + 2 = 3")],
        [
            call("add", '{"a": 3, "b": 4}', "call_2"),
            call("shout", '{"text": "hi"}', "call_3"),
        ],
        [say("7, and HI")],
        [call("transfer_to_poet", "{}", "call_4")],
        [say("Roses are red.", "msg_2")],
        [say("Still here.", "msg_3")],
    ]


def agents_for(model: ScriptedModel) -> Agent[Any]:
    poet = Agent(name="poet", model=model, instructions="Rhyme.")
    return Agent(name="main", model=model, tools=[add, shout], handoffs=[poet])


async def conversation(
    session: Any, *, streamed: bool
) -> tuple[list[Any], ScriptedModel]:
    model = ScriptedModel(script())
    agent = agents_for(model)
    for prompt in [
        "What is 1 + 2?",
        "Now 3 + 4, and shout hi",
        "A poem please",
        "Still there?",
    ]:
        if streamed:
            result = Runner.run_streamed(agent, prompt, session=session)
            async for _ in result.stream_events():
                pass
        else:
            result = await Runner.run(agent, prompt, session=session)
        agent = result.last_agent
    return model.inputs, model


@pytest.mark.parametrize("streamed", [False, True])
def test_runs_match_sqlite_session(tmp_path: Path, streamed: bool) -> None:
    async def main() -> None:
        reference = SQLiteSession("ref", str(tmp_path / "ref.db"))
        app = Sessions(store=f"sqlite:///{tmp_path / 'agentlog.db'}")
        ours = AgentlogSession("s", app, cwd="/work")
        ref_inputs, _ = await conversation(reference, streamed=streamed)
        our_inputs, _ = await conversation(ours, streamed=streamed)
        assert our_inputs == ref_inputs
        expected = await reference.get_items()
        assert await ours.get_items() == expected
        assert await ours.get_items(limit=3) == await reference.get_items(limit=3)
        app.close()
        reopened = AgentlogSession(
            "s", Sessions(store=f"sqlite:///{tmp_path / 'agentlog.db'}")
        )
        assert await reopened.get_items() == expected
        events = reopened.app.read_events("s")
        checker = InvariantChecker()
        for event in events:
            checker.feed(event)
        turns = [e["data"]["turn"] for e in events if e["type"] == "turn/start"]
        ends = [e for e in events if e["type"] == "turn/end"]
        assert turns == [1, 2, 3, 4] and len(ends) == 4
        first = [
            e for e in events if e["type"] == "step/start" and e["data"]["turn"] == 1
        ]
        assert len(first) == 2  # one tool call: one turn of two steps
        assert reopened.app.header("s")["cwd"] == "/work"
        messages = reopened.app.messages("s")
        assert messages[0]["content"][0]["text"] == "What is 1 + 2?"
        assert messages[1]["content"][1]["type"] == "tool-call"
        reference.close()
        reopened.app.close()

    asyncio.run(main())


def test_pop_and_clear_change_what_the_model_sees_and_keep_the_log() -> None:
    async def main() -> None:
        reference = SQLiteSession("ref")
        app = AsyncSessions()
        ours = AgentlogSession("s", app)
        await conversation(reference, streamed=False)
        await conversation(ours, streamed=False)
        for _ in range(3):
            assert await ours.pop_item() == await reference.pop_item()
            assert await ours.get_items() == await reference.get_items()
        models = [ScriptedModel([[say("After the pops.", "msg_9")]]) for _ in range(2)]
        await Runner.run(Agent(name="main", model=models[0]), "Again?", session=ours)
        await Runner.run(
            Agent(name="main", model=models[1]), "Again?", session=reference
        )
        assert models[0].inputs == models[1].inputs  # the popped items are not sent
        assert await ours.get_items() == await reference.get_items()
        shadowed_before = len(await app.read_events("s"))
        await ours.clear_session()
        await reference.clear_session()
        assert await ours.get_items() == [] == await reference.get_items()
        assert await app.messages("s") == []
        events = await app.read_events("s")
        assert len(events) > shadowed_before  # nothing removed from the log
        assert any(e["type"] == "tool/call" for e in events)
        assert await ours.pop_item() is None
        await app.close()

    asyncio.run(main())


def test_items_round_trip_exactly() -> None:
    items: list[Any] = [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Look"},
                {
                    "type": "input_image",
                    "image_url": "https://x/cat.png",
                    "detail": "auto",
                },
            ],
        },
        {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "ENC"},
        {
            "id": "ws_1",
            "type": "web_search_call",
            "status": "completed",
            "action": {"type": "search", "query": "cats"},
        },
        {
            "id": "fc_1",
            "type": "function_call",
            "call_id": "c1",
            "name": "f",
            "arguments": "{}",
        },
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": [{"type": "input_text", "text": "done"}],
        },
        {
            "id": "mcp_1",
            "type": "mcp_call",
            "server_label": "s",
            "name": "t",
            "arguments": "{}",
            "output": "ok",
        },
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "A cat.", "annotations": []}],
        },
        {"role": "user", "content": "And now?"},
    ]

    async def main() -> None:
        app = Sessions()
        ours = AgentlogSession("s", app)
        await ours.add_items(items[:2])
        await ours.add_items(items[2:6])
        await ours.add_items(items[6:])
        assert await ours.get_items() == items
        assert await ours.get_items(limit=2) == items[-2:]
        assert await ours.pop_item() == items[-1]
        assert await ours.pop_item() == items[-2]
        assert await ours.get_items() == items[:-2]
        app.close()

    asyncio.run(main())


def test_a_failed_add_stores_nothing() -> None:
    async def main() -> None:
        app = Sessions()
        ours = AgentlogSession("s", app)
        await ours.add_items([{"role": "user", "content": "hi"}])
        with pytest.raises(Exception, match="non-JSON"):
            await ours.add_items(
                [
                    {"role": "user", "content": "ok"},
                    {"role": "user", "content": b"bytes"},
                ]
            )
        assert await ours.get_items() == [{"role": "user", "content": "hi"}]
        app.close()

    asyncio.run(main())


def test_a_stored_conversation_reads_like_any_session(tmp_path: Path) -> None:
    """Export, import elsewhere, search and the listing see an SDK session."""
    from agentlog import SessionQuery, export_session, import_log

    async def main() -> None:
        app = Sessions()
        ours = AgentlogSession("s", app, cwd="/work")
        await conversation(ours, streamed=False)
        expected = await ours.get_items()
        path = tmp_path / "s.jsonl"
        path.write_bytes(export_session(app, "s"))
        other = Sessions()
        imported = import_log(other, path, strict=True).session_id
        assert await AgentlogSession(imported, other).get_items() == expected
        query = SessionQuery(other)
        assert [r.header["id"] for r in query.list_sessions()] == [imported]
        assert query.search_events(imported, "Roses").items
        app.close()
        other.close()

    asyncio.run(main())


def test_read_items_are_the_callers_own() -> None:
    """Reads share the cached messages internally; what they hand out is a copy."""

    async def main() -> None:
        app = Sessions()
        ours = AgentlogSession("s", app)
        await conversation(ours, streamed=False)
        expected = copy.deepcopy(await ours.get_items())
        messages = app.messages("s")
        for limit in (None, 3):
            for item in await ours.get_items(limit):
                if isinstance(item, dict):
                    item.clear()
        assert await ours.get_items() == expected
        assert app.messages("s") == messages
        app.close()

    asyncio.run(main())


def test_two_processes_writing_one_session_lose_nothing(tmp_path: Path) -> None:
    """A write on a handle another process has moved past is run again on the
    stored state (no read of the stored version comes before it)."""

    def run(number: int) -> list[list[Any]]:
        call_id = f"call_{number}"
        return [
            [{"role": "user", "content": f"question {number}"}],
            [
                {
                    "type": "function_call",
                    "call_id": call_id,
                    "name": "f",
                    "arguments": "{}",
                },
                {"type": "function_call_output", "call_id": call_id, "output": "4"},
            ],
            [say(f"answer {number}", f"msg_{number}").model_dump(exclude_unset=True)],
        ]

    async def main() -> None:
        url = f"sqlite:///{tmp_path / 'a.db'}"
        apps = [Sessions(store=url), Sessions(store=url)]
        writers = [AgentlogSession("s", app) for app in apps]
        written: list[Any] = []
        for number in range(6):
            for batch in run(number):
                await writers[number % 2].add_items(batch)
                written.extend(batch)
        fresh = Sessions(store=url)
        assert await AgentlogSession("s", fresh).get_items() == written
        for writer in writers:
            assert await writer.get_items() == written
        checker = InvariantChecker()
        for event in fresh.read_events("s"):
            checker.feed(event)
        for app in (*apps, fresh):
            app.close()

    asyncio.run(main())
