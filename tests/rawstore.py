"""Write stored logs straight through the recorder, bypassing every rule.

docs/query.md ("invalid stored logs"): scenarios that need a log our
``append`` would refuse (bad versions, legacy events, invalid surfaces, open turns
from a crashed writer) write it with this raw writer.
"""

from __future__ import annotations

from typing import Any

from eventsourcing.persistence import StoredEvent

from agentlog.application import Sessions
from agentlog.domain.json import dumps


def raw_write(
    app: Sessions,
    header: dict[str, Any],
    events: list[dict[str, Any]],
    *,
    with_header: bool = True,
) -> None:
    """Store a header line and events as rows, exactly as given, in one transaction."""
    assert app.mapper is not None
    mapper: Any = app.mapper
    session_id = header["id"]
    rows = []
    if with_header:
        rows.append(
            StoredEvent(
                originator_id=session_id,
                originator_version=1,
                topic="session",
                state=mapper.encode_state(dumps({"type": "session", **header})),
            )
        )
    for event in events:
        rows.append(
            StoredEvent(
                originator_id=session_id,
                originator_version=event["seq"] + 2,
                topic=event["type"],
                state=mapper.encode_state(dumps(event)),
            )
        )
    app.recorder.insert_events(rows)


def turn1(time: int = 1000) -> list[dict[str, Any]]:
    """The balanced 6-event log of the persistence scenarios."""
    user = {"kind": "user"}
    return [
        {
            "type": "turn/start",
            "seq": 0,
            "time": time,
            "data": {"turn": 1, "trigger": {"kind": "message", "source": user}},
        },
        {
            "type": "user/message",
            "seq": 1,
            "time": time,
            "data": {"content": [{"type": "text", "text": "hi"}], "source": user},
            "surfaceOp": "append",
        },
        {"type": "step/start", "seq": 2, "time": time, "data": {"turn": 1, "step": 1}},
        {
            "type": "assistant/message",
            "seq": 3,
            "time": time,
            "data": {
                "turn": 1,
                "step": 1,
                "content": [{"type": "text", "text": "hello"}],
            },
            "surfaceOp": "append",
        },
        {"type": "step/end", "seq": 4, "time": time, "data": {"turn": 1, "step": 1}},
        {
            "type": "turn/end",
            "seq": 5,
            "time": time,
            "data": {"turn": 1, "reason": {"kind": "completed"}},
        },
    ]


def header(session_id: str, **fields: Any) -> dict[str, Any]:
    return {"version": 0, "id": session_id, "createdAt": 1, **fields}
