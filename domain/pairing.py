"""Tool-pairing balance: may the surface be cut here without splitting a call/result?

Compaction (docs/surface.md#compaction) collapses a region only when both of its edges
are balanced cuts (docs/surface.md#tool-pairing-balance).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentlog.domain.errors import SurfaceError
from agentlog.domain.surface import SurfaceNode

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from agentlog.domain.json import Envelope, Json


def _tool_calls(data: Json) -> int:
    """Number of ``tool-call`` blocks in an assistant message's content."""
    content = data.get("content") if type(data) is dict else None
    if type(content) is not list:
        return 0
    return sum(
        1
        for block in content
        if type(block) is dict and block.get("type") == "tool-call"
    )


def is_tool_pairing_balanced(
    nodes: Iterable[SurfaceNode | int],
    events_by_seq: Mapping[int, Envelope] | Sequence[Envelope],
    before_seq: int | None,
) -> bool:
    """Whether every tool call before the cut at ``before_seq`` has its result.

    Walks head to tail counting open calls; the cut sits just before the node
    ``before_seq`` (after the tail when it is ``None`` or not on the surface).
    A result with no open call means the surface itself is corrupt.
    """
    depth = 0
    for node in nodes:
        seq = node.seq if isinstance(node, SurfaceNode) else node
        if seq == before_seq:
            return depth == 0
        event = events_by_seq[seq]
        event_type = event.get("type")
        if event_type == "assistant/message":
            depth += _tool_calls(event.get("data"))
        elif event_type == "tool/result":
            depth -= 1
            if depth < 0:
                msg = (
                    f"tool-pairing balance: tool/result at surface seq {seq} has no "
                    "matching tool-call (corrupt surface)"
                )
                raise SurfaceError(msg)
    return depth == 0
