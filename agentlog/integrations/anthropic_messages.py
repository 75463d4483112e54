"""Anthropic Messages: derived messages as ``messages=``, a message as a step.

See docs/providers.md#anthropic-messages.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agentlog.integrations._blocks import as_dict, usage

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from agentlog.application.agent_turns import StepBase
    from agentlog.domain.step_output import ToolCall

RAW = "anthropic-block"
"""The block type keeping a content block agentlog has no kind for (a server tool
use, a web search result), sent back as it came."""


def _image(block: Mapping[str, Any]) -> dict[str, Any]:
    if "url" in block:
        return {"type": "image", "source": {"type": "url", "url": block["url"]}}
    source = {
        "type": "base64",
        "media_type": block.get("mediaType", "image/png"),
        "data": block.get("data", ""),
    }
    return {"type": "image", "source": source}


def _input(arguments: str) -> Any:
    """A tool call's arguments as ``input``: the JSON object, or ``{"arguments":
    text}`` when the text is not one."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": arguments}


def _block(block: Mapping[str, Any]) -> dict[str, Any] | None:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block["text"]}
    if kind == "image":
        return _image(block)
    if kind == "reasoning":
        if "signature" not in block:
            return None
        return {
            "type": "thinking",
            "thinking": block["text"],
            "signature": block["signature"],
        }
    if kind == "redacted-reasoning":
        return {"type": "redacted_thinking", "data": block["data"]}
    if kind == "tool-call":
        return {
            "type": "tool_use",
            "id": block["id"],
            "name": block["name"],
            "input": _input(block["arguments"]),
        }
    if kind == "tool-result":
        content = [
            b
            for b in (
                _block(c) for c in block.get("content", []) if isinstance(c, dict)
            )
            if b
        ]
        return {
            "type": "tool_result",
            "tool_use_id": block["toolCallId"],
            "content": content,
            "is_error": bool(block.get("isError", False)),
        }
    if kind == "refusal":
        return {"type": "text", "text": block["text"]}
    if kind == RAW and isinstance(block.get("block"), dict):
        return dict(block["block"])
    return None


def to_anthropic(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``app.messages(id)`` as Anthropic ``messages`` (plain dicts; pass the system
    prompt as ``system=``). Consecutive messages of one role are merged, tool
    results keep ``is_error`` and images; reasoning without a ``signature`` (not
    from Anthropic) is dropped, since the API refuses unsigned thinking."""
    result: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.get("role") == "assistant" else "user"
        blocks = [
            b
            for b in (
                _block(c) for c in message.get("content", []) if isinstance(c, dict)
            )
            if b is not None
        ]
        if not blocks:
            continue
        if result and result[-1]["role"] == role:
            result[-1]["content"].extend(blocks)
        else:
            result.append({"role": role, "content": blocks})
    return result


def record_message(step: StepBase, message: Any) -> list[ToolCall]:
    """Record an Anthropic ``Message`` (the SDK's object or its JSON) in the step.

    Thinking becomes reasoning with its ``signature``, redacted thinking a
    ``redacted-reasoning`` block, text text, ``tool_use`` tool calls (``input``
    as JSON text); any other block is kept whole as an ``anthropic-block`` and
    sent back as it came. ``stop_reason == "max_tokens"`` marks the turn
    ``max-tokens``. Returns the calls.
    """
    data = as_dict(message)
    blocks: list[dict[str, Any]] = []
    calls: list[tuple[str, str, str]] = []
    for raw in data.get("content", []):
        kind = raw.get("type")
        if kind == "text":
            blocks.append({"type": "text", "text": raw["text"]})
        elif kind == "thinking":
            blocks.append(
                {
                    "type": "reasoning",
                    "text": raw["thinking"],
                    "signature": raw["signature"],
                }
            )
        elif kind == "redacted_thinking":
            blocks.append({"type": "redacted-reasoning", "data": raw["data"]})
        elif kind == "tool_use":
            arguments = json.dumps(raw.get("input", {}), ensure_ascii=False)
            calls.append((raw["id"], raw["name"], arguments))
        else:
            blocks.append({"type": RAW, "block": raw})
    raw_usage = data.get("usage") or {}
    step.assistant(
        content=blocks,
        usage=usage(
            input_tokens=int(raw_usage.get("input_tokens") or 0),
            output_tokens=int(raw_usage.get("output_tokens") or 0),
            cache_read=int(raw_usage.get("cache_read_input_tokens") or 0),
            cache_write=int(raw_usage.get("cache_creation_input_tokens") or 0),
        ),
        model=("anthropic", str(data.get("model", ""))),
        max_tokens=data.get("stop_reason") == "max_tokens",
    )
    return [
        step.tool_call(name, args, call_id=call_id) for call_id, name, args in calls
    ]


__all__ = ["record_message", "to_anthropic"]
