"""A large, valid session log written as a stream (for the scale tests).

Turns of six events — ``turn/start``, ``user/message``, ``step/start``,
``assistant/message``, ``step/end``, ``turn/end`` — with text padded so an event line
is about 440 bytes, the size of the real logs the scale figures were measured on.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from agentlog.domain.json import dumps

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import BinaryIO

PADDING = "lorem ipsum dolor sit amet " * 26


def _turn(turn: int, seq: int) -> list[dict[str, Any]]:
    user = {"kind": "user"}
    text = f"turn {turn}: {PADDING}"
    payloads: list[tuple[str, dict[str, Any], bool]] = [
        (
            "turn/start",
            {"turn": turn, "trigger": {"kind": "message", "source": user}},
            False,
        ),
        (
            "user/message",
            {"content": [{"type": "text", "text": text}], "source": user},
            True,
        ),
        ("step/start", {"turn": turn, "step": 1}, False),
        (
            "assistant/message",
            {"turn": turn, "step": 1, "content": [{"type": "text", "text": text}]},
            True,
        ),
        ("step/end", {"turn": turn, "step": 1}, False),
        ("turn/end", {"turn": turn, "reason": {"kind": "completed"}}, False),
    ]
    events = []
    for offset, (kind, data, surface) in enumerate(payloads):
        event: dict[str, Any] = {
            "type": kind,
            "seq": seq + offset,
            "time": 1_700_000_000_000 + seq + offset,
            "data": data,
        }
        if surface:
            event["surfaceOp"] = "append"
        events.append(event)
    return events


def event_lines(count: int) -> Iterator[bytes]:
    """``count`` event lines (rounded down to whole turns), newline-terminated."""
    seq = 0
    turn = 1
    while seq + 6 <= count:
        yield b"".join(dumps(event) + b"\n" for event in _turn(turn, seq))
        seq += 6
        turn += 1


def write_log(sink: BinaryIO, count: int, *, session_id: str = "scale") -> int:
    """Write the header and about ``count`` events; returns the events written."""
    header = {
        "type": "session",
        "version": 0,
        "id": session_id,
        "createdAt": 1_700_000_000_000,
        "cwd": "/srv/scale",
        "delegationDepth": 0,
    }
    sink.write(dumps(header) + b"\n")
    written = 0
    for piece in event_lines(count):
        sink.write(piece)
        written += 6
    return written


if __name__ == "__main__":
    write_log(sys.stdout.buffer, int(sys.argv[1]))
