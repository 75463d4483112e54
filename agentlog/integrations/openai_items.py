"""OpenAI Agents SDK items as content blocks, and back (docs/openai-agents.md).

Each SDK item (a Responses input item) is kept whole, verbatim, on the content
block that shows it to the model (the block's ``item`` key), so reading the
history back gives the very items that were added. Blocks without an ``item``
(written by something else) are turned into equivalent items.
"""

from __future__ import annotations

import json
from typing import Any, Final

ITEM: Final = "item"
"""The block key holding the SDK item verbatim."""
OTHER: Final = "openai-item"
"""The block type of an item agentlog has no block for (a hosted tool call, …)."""

MODEL_TYPES: Final = frozenset(
    {
        "reasoning",
        "function_call",
        "custom_tool_call",
        "file_search_call",
        "web_search_call",
        "computer_call",
        "code_interpreter_call",
        "image_generation_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "tool_search_call",
        "program",
        "additional_tools",
        "compaction",
    }
)
"""Item types only a model produces (with assistant messages): a step's output."""
SERVER_OUTPUT_TYPES: Final = frozenset({"tool_search_output", "program_output"})
"""Outputs the model's server may run and return inside its response (model
output then), unless the item says the client ran it (``execution: client``)."""
CALL_TYPES: Final = frozenset({"function_call", "custom_tool_call"})
OUTPUT_TYPES: Final = frozenset({"function_call_output", "custom_tool_call_output"})


def is_model_item(item: Any) -> bool:
    """Whether the item is model output (a step), not input (a turn's prompt)."""
    if not isinstance(item, dict):
        return False
    kind = item.get("type")
    if kind in MODEL_TYPES:
        return True
    if kind in SERVER_OUTPUT_TYPES:
        return item.get("execution") != "client"
    return item.get("role") == "assistant"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = []
    for part in content:
        if isinstance(part, dict):
            text = part.get("text", part.get("refusal"))
            if isinstance(text, str):
                texts.append(text)
    return "".join(texts)


def message_blocks(item: dict[str, Any]) -> list[dict[str, Any]]:
    """The blocks of an input message: its text and images, the first carrying it."""
    content = item.get("content")
    blocks: list[dict[str, Any]] = []
    if isinstance(content, str):
        blocks.append({"type": "text", "text": content})
    elif isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind in ("input_text", "output_text", "text"):
                blocks.append({"type": "text", "text": str(part.get("text", ""))})
            elif kind == "input_image" and isinstance(part.get("image_url"), str):
                blocks.append({"type": "image", "url": part["image_url"]})
    if not blocks:
        blocks.append({"type": OTHER})
    blocks[0] = {**blocks[0], ITEM: item}
    return blocks


def model_block(item: dict[str, Any]) -> dict[str, Any]:
    """The assistant-message block showing one model output item."""
    kind = item.get("type")
    if kind in CALL_TYPES:
        arguments = item.get("arguments", item.get("input", ""))
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        return {
            "type": "tool-call",
            "id": str(item.get("call_id", "")),
            "name": str(item.get("name", "")),
            "arguments": arguments
            if isinstance(arguments, str)
            else json.dumps(arguments),
            ITEM: item,
        }
    if kind == "reasoning":
        summary = item.get("summary") or []
        text = "".join(s.get("text", "") for s in summary if isinstance(s, dict))
        return {"type": "reasoning", "text": text, ITEM: item}
    if item.get("role") == "assistant":
        return {"type": "text", "text": _text(item.get("content")), ITEM: item}
    return {"type": OTHER, ITEM: item}


def output_blocks(item: dict[str, Any]) -> list[dict[str, Any]]:
    """A tool result's content for a call's output item (its text, carrying it)."""
    output = item.get("output")
    text = output if isinstance(output, str) else _text(output)
    return [{"type": "text", "text": text, ITEM: item}]


def items_of(messages: list[dict[str, Any]]) -> list[Any]:
    """The SDK items of derived messages, in order."""
    items: list[Any] = []
    append = items.append
    for message in messages:
        content = message.get("content", [])
        if type(content) is list and len(content) == 1:
            # The common message: one block carrying its item (a full read
            # passes here once per item).
            block = content[0]
            if type(block) is dict and ITEM in block:
                append(block[ITEM])
                continue
        blocks = [b for b in content if isinstance(b, dict)]
        ours = any(ITEM in b for b in blocks)
        for block in blocks:
            if ITEM in block:
                append(block[ITEM])
            elif block.get("type") == "tool-result":
                items.extend(_result_items(block))
            elif not ours:
                made = _foreign_item(message.get("role"), block)
                if made is not None:
                    append(made)
    return items


def _result_items(block: dict[str, Any]) -> list[Any]:
    inner = [b for b in block.get("content", []) if isinstance(b, dict)]
    kept = [b[ITEM] for b in inner if ITEM in b]
    if kept:
        return kept
    text = "".join(str(b.get("text", "")) for b in inner if b.get("type") == "text")
    return [
        {
            "type": "function_call_output",
            "call_id": block.get("toolCallId"),
            "output": text,
        }
    ]


def _foreign_item(role: Any, block: dict[str, Any]) -> Any:
    """An item for a block another writer stored (no ``item`` on it)."""
    kind = block.get("type")
    if kind == "text":
        return {"role": role, "content": block.get("text", "")}
    if kind == "tool-call":
        return {
            "type": "function_call",
            "call_id": block.get("id"),
            "name": block.get("name"),
            "arguments": block.get("arguments"),
        }
    return None
