"""Provider formats (docs/providers.md), checked with the providers' own SDK types.

What we produce must validate as the official ``openai`` and ``anthropic`` request
types; a provider response recorded as a step and converted back gives the
provider's own message again (no network: responses are built from JSON).
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter

from agentlog import Sessions
from agentlog.integrations.anthropic_messages import record_message, to_anthropic
from agentlog.integrations.openai_chat import record_chat_completion, to_openai_chat
from agentlog.integrations.openai_responses import record_response, to_openai_responses

anthropic_types = pytest.importorskip("anthropic.types")
chat_types = pytest.importorskip("openai.types.chat")
responses_types = pytest.importorskip("openai.types.responses")

PNG = "iVBORw0KGgo="
CHAT_MESSAGES = TypeAdapter(list[chat_types.ChatCompletionMessageParam])
RESPONSES_INPUT = TypeAdapter(responses_types.ResponseInputParam)
ANTHROPIC_MESSAGES = TypeAdapter(list[anthropic_types.MessageParam])


def rich_session() -> tuple[Sessions, list[dict[str, Any]]]:
    """A session with text, an image, reasoning, parallel calls, an error result."""
    app = Sessions()
    user = [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image", "mediaType": "image/png", "data": PNG},
    ]
    with app.turn("s", user=user, create=True) as turn:
        with turn.step() as step:
            step.assistant("Let me look.", reasoning="Two tools at once.")
            a = step.tool_call("zoom", {"factor": 2}, call_id="call_a")
            b = step.tool_call("ocr", {}, call_id="call_b")
            step.tool_result(
                b, "no text", is_error=True, error={"name": "ocr", "code": "empty"}
            )
            step.tool_result(
                a,
                [
                    {"type": "text", "text": "a cat"},
                    {"type": "image", "url": "https://x/cat.png"},
                ],
            )
        with turn.step() as step:
            step.assistant("A cat.")
    return app, app.messages("s")


def test_chat_completions_messages_validate_and_keep_the_structure() -> None:
    _, messages = rich_session()
    chat = to_openai_chat(messages, system="Be terse.")
    CHAT_MESSAGES.validate_python(chat)
    assert [m["role"] for m in chat] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    assert chat[1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG}"},
    }
    assert chat[2]["tool_calls"][0]["function"] == {
        "name": "zoom",
        "arguments": '{"factor":2}',
    }
    assert chat[3] == {
        "role": "tool",
        "tool_call_id": "call_b",
        "content": [{"type": "text", "text": "no text"}],
    }
    assert "reasoning_content" not in chat[2]
    compatible = to_openai_chat(messages, reasoning_field="reasoning_content")
    assert compatible[1]["reasoning_content"] == "Two tools at once."


def test_responses_input_validates() -> None:
    _, messages = rich_session()
    items = to_openai_responses(messages)
    RESPONSES_INPUT.validate_python(items)
    kinds = [i.get("type", i.get("role")) for i in items]
    assert kinds == [
        "user",
        "assistant",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
        "assistant",
    ]
    assert items[5]["output"][1] == {
        "type": "input_image",
        "image_url": "https://x/cat.png",
        "detail": "auto",
    }


def test_anthropic_messages_validate_and_keep_errors_and_images() -> None:
    _, messages = rich_session()
    converted = to_anthropic(messages)
    ANTHROPIC_MESSAGES.validate_python(converted)
    assert [m["role"] for m in converted] == ["user", "assistant", "user", "assistant"]
    results = converted[2]["content"]
    assert results[0]["is_error"] is True and results[0]["tool_use_id"] == "call_b"
    assert results[1]["content"][1] == {
        "type": "image",
        "source": {"type": "url", "url": "https://x/cat.png"},
    }
    assert converted[1]["content"][-1] == {
        "type": "tool_use",
        "id": "call_b",
        "name": "ocr",
        "input": {},
    }


def recorded(record: Any, response: Any) -> tuple[Sessions, list[dict[str, Any]]]:
    app = Sessions()
    with app.turn("s", user="hi", create=True) as turn, turn.step() as step:
        calls = record(step, response)
        for call in calls:
            step.tool_result(call, f"result of {call.name}")
    return app, app.messages("s")


def test_a_chat_completion_round_trips() -> None:
    completion = chat_types.ChatCompletion.model_validate(
        {
            "id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-x",
            "choices": [{
                "index": 0, "finish_reason": "length",
                "message": {
                    "role": "assistant", "content": "Checking.",
                    "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"q": "é"}'}}],
                },
            }],
            "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107, "prompt_tokens_details": {"cached_tokens": 60}, "completion_tokens_details": {"reasoning_tokens": 3}},
        }
    )  # fmt: skip
    app, messages = recorded(record_chat_completion, completion)
    back = to_openai_chat(messages)
    original = completion.choices[0].message.model_dump(mode="json", exclude_none=True)
    assert back[1] == {k: v for k, v in original.items() if k != "annotations"}
    event = next(e for e in app.read_events("s") if e["type"] == "assistant/message")
    assert event["data"]["usage"] == {
        "inputTokens": 40,
        "outputTokens": 7,
        "cacheReadTokens": 60,
        "reasoningTokens": 3,
    }
    assert event["data"]["provenance"] == {"provider": "openai", "model": "gpt-x"}
    assert app.read_events("s")[-1]["data"]["reason"] == {"kind": "max-tokens"}


def test_a_responses_response_round_trips_with_its_reasoning_item() -> None:
    response = responses_types.Response.model_validate(
        {
            "id": "r1", "object": "response", "created_at": 1, "model": "o-x", "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [], "status": "completed",
            "output": [
                {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Think."}], "encrypted_content": "ENC"},
                {"type": "message", "id": "m1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Calling.", "annotations": []}]},
                {"type": "function_call", "id": "fc1", "call_id": "call_9", "name": "g", "arguments": "{}"},
            ],
            "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 1}, "output_tokens_details": {"reasoning_tokens": 2}},
        }
    )  # fmt: skip
    _, messages = recorded(record_response, response)
    items = to_openai_responses(messages)
    RESPONSES_INPUT.validate_python(items)
    assert items[1] == {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Think."}],
        "encrypted_content": "ENC",
    }
    assert items[2] == {"role": "assistant", "content": "Calling."}
    assert items[3] == {
        "type": "function_call",
        "call_id": "call_9",
        "name": "g",
        "arguments": "{}",
    }
    assert items[4] == {
        "type": "function_call_output",
        "call_id": "call_9",
        "output": "result of g",
    }


def test_an_anthropic_message_round_trips_with_signed_thinking_and_server_blocks() -> (
    None
):
    content = [
        {"type": "thinking", "thinking": "Hmm.", "signature": "sig"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "text", "text": "Searching.", "citations": None},
        {
            "type": "server_tool_use",
            "id": "srv_1",
            "name": "web_search",
            "input": {"query": "cats"},
        },
        {"type": "tool_use", "id": "tu_1", "name": "h", "input": {"n": 1}},
    ]
    message = anthropic_types.Message.model_validate(
        {
            "id": "m", "type": "message", "role": "assistant", "model": "claude-x", "content": content,
            "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 4, "cache_read_input_tokens": 30, "cache_creation_input_tokens": 5},
        }
    )  # fmt: skip
    _, messages = recorded(record_message, message)
    converted = to_anthropic(messages)
    ANTHROPIC_MESSAGES.validate_python(converted)
    sent = message.model_dump(mode="json", exclude_none=True)["content"]
    assert converted[1]["content"] == sent
    assert converted[2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "tu_1",
            "content": [{"type": "text", "text": "result of h"}],
            "is_error": False,
        }
    ]
