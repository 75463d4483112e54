"""PydanticAIHistory under the real pydantic-ai: Agent.run with FunctionModel.

Runs with tool calls, a retry and thinking are saved run by run and loaded back
as ``message_history``; the loaded messages must equal pydantic-ai's own, parts and
timestamps included, and the log must be a valid agentlog session.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pydantic_ai = pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent, ModelRetry  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

from agentlog import Sessions  # noqa: E402
from agentlog.integrations.pydantic_ai import PydanticAIHistory  # noqa: E402
from tests.invariant_checker import InvariantChecker  # noqa: E402


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls the tool with a bad then a good argument, thinks, then answers."""
    last = messages[-1]
    kinds = [part.part_kind for part in last.parts]
    if "user-prompt" in kinds:
        return ModelResponse(
            parts=[
                ThinkingPart(content="I need the tool.", signature="sig"),
                ToolCallPart("double", {"n": -1}, tool_call_id="t1"),
            ]
        )
    if getattr(last.parts[0], "outcome", None) == "retried" or "retry-prompt" in kinds:
        return ModelResponse(
            parts=[ToolCallPart("double", {"n": 21}, tool_call_id="t2")]
        )
    return ModelResponse(parts=[TextPart(content="The answer is 42.")])


def make_agent() -> Agent[None, str]:
    agent = Agent(FunctionModel(scripted), system_prompt="Be exact.")

    @agent.tool_plain
    def double(n: int) -> int:
        """Double a positive number."""
        if n < 0:
            raise ModelRetry("n must be positive")
        return 2 * n

    return agent


def test_runs_round_trip_as_message_history(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'agentlog.db'}"
    app = Sessions(store=url)
    history = PydanticAIHistory(app, "s", cwd="/work")
    agent = make_agent()
    first = agent.run_sync("What is 21 doubled?", message_history=history.load())
    history.save(first.new_messages())
    second = agent.run_sync("And again?", message_history=history.load())
    history.save(second.new_messages())
    app.close()
    reopened = Sessions(store=url)
    loaded = PydanticAIHistory(reopened, "s").load()
    assert loaded == second.all_messages()
    events = reopened.read_events("s")
    checker = InvariantChecker()
    for event in events:
        checker.feed(event)
    assert [e["data"]["turn"] for e in events if e["type"] == "turn/end"] == [1, 2]
    assert (
        sum(e["type"] == "step/start" and e["data"]["turn"] == 1 for e in events) == 3
    )
    results = [e["data"] for e in events if e["type"] == "tool/result"]
    assert [r["isError"] for r in results] == [True, False, True, False]
    messages = reopened.messages("s")
    assert messages[1]["content"][0]["text"] == "What is 21 doubled?"
    assert messages[2]["content"][0]["type"] == "reasoning"
    reopened.close()


MOMENT = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
times = st.integers(0, 10**6).map(
    lambda s: MOMENT + timedelta(seconds=s, microseconds=s % 997)
)
text = st.text(max_size=20)
request_parts = st.one_of(
    st.builds(UserPromptPart, content=text, timestamp=times),
    st.builds(SystemPromptPart, content=text, timestamp=times),
    st.builds(
        RetryFeedbackPart,
        content=text,
        retry=st.just(RetryInfo(cause="model_retry")),
        timestamp=times,
    ),
)
response_parts = st.one_of(
    st.builds(TextPart, content=text),
    st.builds(ThinkingPart, content=text, signature=st.none() | text),
    st.builds(
        ToolCallPart,
        tool_name=st.sampled_from(["a", "b"]),
        args=st.dictionaries(st.text(max_size=3), st.integers()),
        tool_call_id=st.sampled_from(["c1", "c2"]),
    ),
)
answers = st.builds(
    ToolReturnPart,
    tool_name=st.sampled_from(["a", "b"]),
    content=text,
    tool_call_id=st.sampled_from(["c1", "c2"]),
    timestamp=times,
)


@st.composite
def runs(draw: st.DrawFn) -> list[ModelMessage]:
    messages: list[ModelMessage] = [
        ModelRequest(parts=draw(st.lists(request_parts, min_size=1, max_size=3)))
    ]
    for _ in range(draw(st.integers(0, 3))):
        messages.append(
            ModelResponse(
                parts=draw(st.lists(response_parts, max_size=3)),
                timestamp=draw(times),
                model_name=draw(st.none() | text),
            )
        )
        if draw(st.booleans()):
            messages.append(
                ModelRequest(
                    parts=draw(
                        st.lists(
                            st.one_of(answers, request_parts), min_size=1, max_size=3
                        )
                    )
                )
            )
    return messages


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(batches=st.lists(runs(), min_size=1, max_size=3))
def test_random_histories_round_trip_exactly(batches: list[list[ModelMessage]]) -> None:
    app = Sessions()
    history = PydanticAIHistory(app, "s")
    for batch in batches:
        history.save(batch)
    assert history.load() == [message for batch in batches for message in batch]
    checker = InvariantChecker()
    for event in app.read_events("s"):
        checker.feed(event)
    app.close()
