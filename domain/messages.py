"""Derived LLM messages: the surface mapped to ``{role, content}``.

See docs/surface.md#derived-messages.

Derivation is a pure function of the log; every call returns fresh copies.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from agentlog.domain.json import Envelope, Json
from agentlog.domain.json import copy_json as _copy_json
from agentlog.domain.surface import fold_surface

if TYPE_CHECKING:
    from collections.abc import Sequence

DerivedMessage: TypeAlias = dict[str, Any]

# context/message and steering/message render inside an envelope naming the source.
_ENVELOPE_TAGS: Final = {"context/message": "context", "steering/message": "steering"}


def _same(value: Json) -> Json:
    return value


def _text(text: str) -> Json:
    return {"type": "text", "text": text}


def derive_message(event: Envelope, *, copy: bool = True) -> DerivedMessage | None:
    """The message one surface event contributes, or ``None``.

    An ``assistant/message`` with empty content contributes nothing (it only hosts
    usage); a type that cannot be a node contributes nothing either. With
    ``copy=False`` the message shares the event's content: for an event the caller
    owns (freshly decoded), which saves a deep copy.
    """
    copy_json = _copy_json if copy else _same
    event_type = event.get("type")
    data = event.get("data")
    if type(data) is not dict:
        return None
    if event_type == "user/message":
        return {"role": "user", "content": copy_json(data["content"])}
    if event_type == "assistant/message":
        if not data["content"]:
            return None
        return {"role": "assistant", "content": copy_json(data["content"])}
    if event_type == "tool/result":
        block = {
            "type": "tool-result",
            "toolCallId": data["callId"],
            "content": copy_json(data["content"]),
            "isError": data["isError"],
        }
        return {"role": "user", "content": [block]}
    tag = _ENVELOPE_TAGS.get(event_type) if type(event_type) is str else None
    if tag is not None:
        kind = json.dumps(data["source"]["kind"], ensure_ascii=False)
        return {
            "role": "user",
            "content": [
                _text(f"<{tag} source={kind}>"),
                *copy_json(data["content"]),
                _text(f"</{tag}>"),
            ],
        }
    return None


def derive_messages(events: Sequence[Envelope]) -> list[DerivedMessage]:
    """Strictly fold ``events`` and map the surface to messages (fresh copies)."""
    messages: list[DerivedMessage] = []
    for seq in fold_surface(events).nodes:
        message = derive_message(events[seq])
        if message is not None:
            messages.append(message)
    return messages
