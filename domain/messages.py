"""Derived LLM messages: the surface mapped to ``{role, content}``.

See docs/surface.md#derived-messages.

Derivation is a pure function of the log. :class:`MessageCache` keeps it current
incrementally and still hands out fresh copies equal to a fold from scratch.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from agentlog.domain.json import Envelope, Json, copy_json
from agentlog.domain.json import copy_json as _copy_json
from agentlog.domain.surface import Surface, fold_step, fold_surface

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

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


def _copy_message(message: DerivedMessage) -> DerivedMessage:
    return {"role": message["role"], "content": copy_json(message["content"])}


class MessageCache:
    """Derived messages kept current as events arrive.

    Holds the surface and one derived message per current node, so extending by k
    events costs O(k) (plus O(n) per replace) instead of a refold. Events pass the
    same strict fold as :func:`derive_messages`; a failing event raises and leaves
    the cache at the event before it.
    """

    __slots__ = ("_by_seq", "_next_seq", "_surface")

    def __init__(self) -> None:
        self._surface = Surface()
        self._by_seq: dict[int, DerivedMessage] = {}
        self._next_seq = 0

    @property
    def seq(self) -> int:
        """The seq the next event must carry (the number of events folded)."""
        return self._next_seq

    @property
    def generation(self) -> int:
        """Replaces folded so far; with :attr:`seq` it identifies the cache state."""
        return self._surface.generation

    def extend(self, events: Iterable[Envelope]) -> None:
        """Fold the events that follow the ones already seen."""
        for event in events:
            for gone in fold_step(self._surface, event, self._next_seq):
                self._by_seq.pop(gone, None)
            seq = self._next_seq
            self._next_seq += 1
            if seq in self._surface:
                message = derive_message(event)
                if message is not None:
                    self._by_seq[seq] = message

    update = extend

    def messages(self) -> list[DerivedMessage]:
        """Fresh copies of the current messages, equal to :func:`derive_messages`."""
        by_seq = self._by_seq
        return [_copy_message(by_seq[seq]) for seq in self._surface if seq in by_seq]
