"""Shared helpers of the provider formats: images, text and raw objects.

An image is a content block of a kind the vocabulary leaves open
(docs/providers.md#images): ``{"type": "image", "mediaType": ..., "data": base64}``
or ``{"type": "image", "url": ...}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def as_dict(value: Any) -> dict[str, Any]:
    """A provider object (a pydantic model of its SDK) or mapping, as plain JSON."""
    if isinstance(value, Mapping):
        return dict(value)
    dump = getattr(value, "model_dump", None)
    if dump is None:
        msg = f"expected a mapping or a pydantic model, got {type(value).__name__}"
        raise TypeError(msg)
    dumped: dict[str, Any] = dump(mode="json", exclude_none=True)
    return dumped


def image_url(block: Mapping[str, Any]) -> str:
    """An image block as a URL: its own, or a ``data:`` URL of its bytes."""
    if "url" in block:
        return str(block["url"])
    return f"data:{block.get('mediaType', 'image/png')};base64,{block.get('data', '')}"


def image_from_url(url: str) -> dict[str, Any]:
    """The image block of a URL (a ``data:`` URL keeps its bytes and type)."""
    if url.startswith("data:") and ";base64," in url:
        head, data = url[5:].split(";base64,", 1)
        return {"type": "image", "mediaType": head, "data": data}
    return {"type": "image", "url": url}


def text_of(blocks: Any) -> str:
    """The text of a list of content blocks (text blocks joined, others skipped)."""
    if not isinstance(blocks, list):
        return ""
    return "".join(
        str(b.get("text", ""))
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "text"
    )


def usage(
    *,
    input_tokens: int,
    output_tokens: int,
    cache_read: int = 0,
    cache_write: int = 0,
    reasoning: int = 0,
) -> dict[str, Any]:
    """A ``TokenUsage`` (docs/vocabulary.md): ``inputTokens`` is uncached input only."""
    result: dict[str, Any] = {
        "inputTokens": max(0, input_tokens),
        "outputTokens": output_tokens,
    }
    if cache_read:
        result["cacheReadTokens"] = cache_read
    if cache_write:
        result["cacheWriteTokens"] = cache_write
    if reasoning:
        result["reasoningTokens"] = reasoning
    return result
