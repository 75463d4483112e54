"""OpenAI Responses: derived messages as ``input=`` items, a response as a step.

See docs/providers.md#openai-responses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentlog.integrations._blocks import as_dict, image_url, usage

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from agentlog.application.agent_turns import StepBase
    from agentlog.domain.step_output import ToolCall


def _user_content(blocks: Sequence[Any]) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for block in blocks:
        if block.get("type") == "text":
            content.append({"type": "input_text", "text": block["text"]})
        elif block.get("type") == "image":
            content.append(
                {"type": "input_image", "image_url": image_url(block), "detail": "auto"}
            )
    return content


def _output(block: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The output content of one tool result (text and images)."""
    return _user_content([b for b in block.get("content", []) if isinstance(b, dict)])


def _assistant_items(blocks: Sequence[Any]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "reasoning" and "id" in block:
            item: dict[str, Any] = {
                "type": "reasoning",
                "id": block["id"],
                "summary": [{"type": "summary_text", "text": block["text"]}]
                if block["text"]
                else [],
            }
            if "encryptedContent" in block:
                item["encrypted_content"] = block["encryptedContent"]
            items.append(item)
        elif kind == "text" or kind == "refusal":
            items.append({"role": "assistant", "content": block["text"]})
        elif kind == "tool-call":
            items.append(
                {
                    "type": "function_call",
                    "call_id": block["id"],
                    "name": block["name"],
                    "arguments": block["arguments"],
                }
            )
    return items


def to_openai_responses(
    messages: Sequence[Mapping[str, Any]], *, instructions_as_system: str | None = None
) -> list[dict[str, Any]]:
    """``app.messages(id)`` as Responses ``input`` items (plain dicts).

    Reasoning is sent back only when it came from a Responses reasoning item (it
    carries the item's ``id``, and ``encryptedContent`` when the response had it);
    other reasoning is dropped, since the API accepts only its own reasoning items.
    """
    items: list[dict[str, Any]] = []
    if instructions_as_system is not None:
        items.append({"role": "system", "content": instructions_as_system})
    for message in messages:
        blocks = [b for b in message.get("content", []) if isinstance(b, dict)]
        if message.get("role") == "assistant":
            items.extend(_assistant_items(blocks))
            continue
        for block in blocks:
            if block.get("type") == "tool-result":
                output = _output(block)
                text_only = all(part["type"] == "input_text" for part in output)
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": block["toolCallId"],
                        "output": "".join(p["text"] for p in output)
                        if text_only
                        else output,
                    }
                )
        content = _user_content(blocks)
        if content:
            items.append({"role": str(message.get("role", "user")), "content": content})
    return items


def record_response(step: StepBase, response: Any) -> list[ToolCall]:
    """Record a Responses ``Response`` (the SDK's object or its JSON) in the step.

    Reasoning items become reasoning blocks carrying their ``id`` (and
    ``encryptedContent``), output text becomes text, refusals ``refusal``
    blocks, function calls tool calls; an ``incomplete`` response stopped by
    ``max_output_tokens`` marks the turn ``max-tokens``. Returns the calls.
    """
    data = as_dict(response)
    blocks: list[dict[str, Any]] = []
    calls: list[tuple[str, str, str]] = []
    for item in data.get("output", []):
        kind = item.get("type")
        if kind == "reasoning":
            summary = "".join(s.get("text", "") for s in item.get("summary") or [])
            block: dict[str, Any] = {
                "type": "reasoning",
                "text": summary,
                "id": item["id"],
            }
            if item.get("encrypted_content"):
                block["encryptedContent"] = item["encrypted_content"]
            blocks.append(block)
        elif kind == "message":
            for part in item.get("content", []):
                if part.get("type") == "output_text":
                    blocks.append({"type": "text", "text": part["text"]})
                elif part.get("type") == "refusal":
                    blocks.append({"type": "refusal", "text": part["refusal"]})
        elif kind == "function_call":
            calls.append((item["call_id"], item["name"], item["arguments"]))
    details = data.get("incomplete_details") or {}
    step.assistant(
        content=blocks,
        usage=_usage(data.get("usage")),
        model=("openai", str(data.get("model", ""))),
        max_tokens=details.get("reason") == "max_output_tokens",
    )
    return [
        step.tool_call(name, args, call_id=call_id) for call_id, name, args in calls
    ]


def _usage(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        return None
    details = raw.get("input_tokens_details") or {}
    cached = details.get("cached_tokens") or 0
    written = details.get("cache_write_tokens") or 0
    reasoning = (raw.get("output_tokens_details") or {}).get("reasoning_tokens") or 0
    return usage(
        input_tokens=int(raw.get("input_tokens", 0)) - int(cached) - int(written),
        output_tokens=int(raw.get("output_tokens", 0)),
        cache_read=int(cached),
        cache_write=int(written),
        reasoning=int(reasoning),
    )


__all__ = ["record_response", "to_openai_responses"]
