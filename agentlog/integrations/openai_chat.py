"""OpenAI Chat Completions: derived messages as ``messages=``, a completion as a step.

See docs/providers.md#openai-chat-completions for what maps to what and what the
format cannot carry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentlog.integrations._blocks import as_dict, image_url, usage

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from agentlog.application.agent_turns import StepBase
    from agentlog.domain.step_output import ToolCall


def _user_parts(blocks: Sequence[Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            parts.append({"type": "text", "text": block["text"]})
        elif kind == "image":
            parts.append({"type": "image_url", "image_url": {"url": image_url(block)}})
    return parts


def _tool_message(block: Mapping[str, Any]) -> dict[str, Any]:
    text = [
        {"type": "text", "text": b["text"]}
        for b in block.get("content", [])
        if isinstance(b, dict) and b.get("type") == "text"
    ]
    return {"role": "tool", "tool_call_id": block["toolCallId"], "content": text}


def _assistant(blocks: Sequence[Any], reasoning_field: str | None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant"}
    texts = [b["text"] for b in blocks if b.get("type") == "text"]
    message["content"] = "".join(texts) if texts else None
    refusal = [b["text"] for b in blocks if b.get("type") == "refusal"]
    if refusal:
        message["refusal"] = "".join(refusal)
    calls = [
        {
            "id": b["id"],
            "type": "function",
            "function": {"name": b["name"], "arguments": b["arguments"]},
        }
        for b in blocks
        if b.get("type") == "tool-call"
    ]
    if calls:
        message["tool_calls"] = calls
    thoughts = [b["text"] for b in blocks if b.get("type") == "reasoning"]
    if reasoning_field is not None and thoughts:
        message[reasoning_field] = "".join(thoughts)
    return message


def to_openai_chat(
    messages: Sequence[Mapping[str, Any]],
    *,
    system: str | None = None,
    reasoning_field: str | None = None,
) -> list[dict[str, Any]]:
    """``app.messages(id)`` as Chat Completions ``messages`` (plain dicts).

    A user message's tool results become ``tool`` messages (before its other
    content); reasoning is dropped unless ``reasoning_field`` names the field an
    OpenAI-compatible server reads it from (``"reasoning_content"``).
    """
    result: list[dict[str, Any]] = []
    if system is not None:
        result.append({"role": "system", "content": system})
    for message in messages:
        blocks = [b for b in message.get("content", []) if isinstance(b, dict)]
        if message.get("role") == "assistant":
            result.append(_assistant(blocks, reasoning_field))
            continue
        if message.get("role") == "system":
            result.append({"role": "system", "content": _user_parts(blocks)})
            continue
        result.extend(
            _tool_message(b) for b in blocks if b.get("type") == "tool-result"
        )
        parts = _user_parts(blocks)
        if parts:
            result.append({"role": "user", "content": parts})
    return result


def record_chat_completion(step: StepBase, completion: Any) -> list[ToolCall]:
    """Record a ``ChatCompletion`` (the SDK's object or its JSON) as the step's output.

    Reasoning from a ``reasoning_content`` field (OpenAI-compatible servers), the
    text, a refusal (a ``refusal`` block) and the tool calls; usage with cached
    input apart; ``finish_reason == "length"`` marks the turn ``max-tokens``.
    Returns the calls, to answer with :meth:`Step.tool_result`.
    """
    data = as_dict(completion)
    choice = data["choices"][0]
    message = choice.get("message", {})
    blocks: list[dict[str, Any]] = []
    for field in ("reasoning_content", "reasoning"):
        if isinstance(message.get(field), str) and message[field]:
            blocks.append({"type": "reasoning", "text": message[field]})
            break
    if message.get("content"):
        blocks.append({"type": "text", "text": message["content"]})
    if message.get("refusal"):
        blocks.append({"type": "refusal", "text": message["refusal"]})
    step.assistant(
        content=blocks,
        usage=_usage(data.get("usage")),
        model=("openai", str(data.get("model", ""))),
        max_tokens=choice.get("finish_reason") == "length",
    )
    return [
        step.tool_call(
            call["function"]["name"], call["function"]["arguments"], call_id=call["id"]
        )
        for call in message.get("tool_calls") or []
        if call.get("type", "function") == "function"
    ]


def _usage(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        return None
    cached = (raw.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    reasoning = (raw.get("completion_tokens_details") or {}).get(
        "reasoning_tokens"
    ) or 0
    return usage(
        input_tokens=int(raw.get("prompt_tokens", 0)) - int(cached),
        output_tokens=int(raw.get("completion_tokens", 0)),
        cache_read=int(cached),
        reasoning=int(reasoning),
    )


__all__ = ["record_chat_completion", "to_openai_chat"]
