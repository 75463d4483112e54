"""A step's model output as content blocks: text, tool calls, streamed chunks.

Pure helpers of the turn writer (docs/agents.md): they turn what a loop hands over
(plain text, a tool's arguments, a provider's stream chunks) into the content
blocks of docs/vocabulary.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentlog.domain.errors import NonJsonDataError
from agentlog.domain.json import NotJsonError, snapshot_json

Content = str | Sequence[Mapping[str, Any]]
"""A message's content: plain text, or content blocks (docs/vocabulary.md)."""


def content_blocks(content: Content) -> list[Any]:
    """Text as one text block; blocks as a list of them (checked on append)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content)


def arguments_text(arguments: object) -> str:
    """A tool call's arguments as the model's JSON text (text is kept verbatim)."""
    if isinstance(arguments, str):
        return arguments
    try:
        return json.dumps(
            snapshot_json(arguments), ensure_ascii=False, separators=(",", ":")
        )
    except NotJsonError:
        msg = 'session event "tool/call" carries non-JSON-serializable data'
        raise NonJsonDataError(msg) from None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the model made in a step; pass it to :meth:`Step.tool_result`."""

    id: str
    name: str
    arguments: str
    """The model's raw JSON text."""

    def parsed_arguments(self) -> Any:
        """The arguments decoded from JSON (raises ``ValueError`` if they are not)."""
        return json.loads(self.arguments)


def assemble_chunks(chunks: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The content blocks a step's stream chunks add up to, in index order.

    A ``block-end`` chunk carries its finished block, which wins; otherwise text
    and reasoning deltas are joined and tool-call deltas give a tool-call block.
    """
    blocks: dict[int, dict[str, Any]] = {}
    finished: dict[int, Any] = {}
    for chunk in chunks:
        kind = chunk.get("type")
        index = chunk.get("index")
        if type(index) is not int:
            continue
        if kind == "block-end":
            finished[index] = chunk.get("block")
        elif kind == "block-start":
            blocks.setdefault(index, {"type": chunk.get("blockType")})
        elif kind in ("text-delta", "reasoning-delta"):
            block = blocks.setdefault(index, {"type": kind.removesuffix("-delta")})
            block["text"] = block.get("text", "") + str(chunk.get("text", ""))
        elif kind == "tool-call-delta":
            block = blocks.setdefault(index, {"type": "tool-call"})
            block["type"] = "tool-call"
            block["id"] = chunk.get("id", block.get("id"))
            if "name" in chunk:
                block["name"] = chunk["name"]
            delta = str(chunk.get("argumentsDelta", ""))
            block["arguments"] = block.get("arguments", "") + delta
    assembled = {**blocks, **finished}
    result: list[Any] = []
    for index in sorted(assembled):
        block = assembled[index]
        if isinstance(block, dict) and block.get("type") in ("text", "reasoning"):
            block.setdefault("text", "")
        if isinstance(block, dict) and block.get("type") == "tool-call":
            block.setdefault("name", "")
            block.setdefault("arguments", "")
        result.append(block)
    return result
