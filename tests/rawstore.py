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


def header(session_id: str, **fields: Any) -> dict[str, Any]:
    return {"version": 0, "id": session_id, "createdAt": 1, **fields}
