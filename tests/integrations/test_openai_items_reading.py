"""``items_of``: the SDK items of derived messages, in order, whatever shape each
message has (docs/openai-agents.md#items-round-trip-exactly)."""

from __future__ import annotations

from typing import Any

from agentlog.integrations.openai_items import items_of

USER = {"role": "user", "content": "hi"}
CALL = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
OUTPUT = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
IMAGE_MESSAGE = {
    "role": "user",
    "content": [
        {"type": "input_text", "text": "look"},
        {"type": "input_image", "image_url": "https://x/a.png"},
    ],
}


def test_each_message_shape_gives_its_items_in_order() -> None:
    messages: list[dict[str, Any]] = [
        # one block carrying its item (the common message)
        {"role": "user", "content": [{"type": "text", "text": "hi", "item": USER}]},
        # an item on the first block only: the image beside it is not an item
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look", "item": IMAGE_MESSAGE},
                {"type": "image", "url": "https://x/a.png"},
            ],
        },
        # a tool result carrying its output item
        {
            "role": "user",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "c1",
                    "content": [{"type": "text", "text": "ok", "item": OUTPUT}],
                    "isError": False,
                }
            ],
        },
        # another writer's messages: plain items made for them
        {"role": "assistant", "content": [{"type": "text", "text": "plain"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool-call", "id": "c2", "name": "g", "arguments": "{}"},
                "not a block",
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "c2",
                    "content": [{"type": "text", "text": "done"}],
                    "isError": False,
                }
            ],
        },
        # two items in one assistant message
        {
            "role": "assistant",
            "content": [
                {"type": "tool-call", "id": "c1", "name": "f", "item": CALL},
                {"type": "text", "text": "x", "item": {"role": "assistant"}},
            ],
        },
    ]
    assert items_of(messages) == [
        USER,
        IMAGE_MESSAGE,
        OUTPUT,
        {"role": "assistant", "content": "plain"},
        {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c2", "output": "done"},
        CALL,
        {"role": "assistant"},
    ]
    # the items handed back are the blocks' own (the caller copies them)
    assert items_of(messages)[0] is USER
