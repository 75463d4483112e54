"""``StoredLog.envelope`` decodes an event row straight to its envelope when the
mapper can (agentlog's ``decode_envelope``), with the checks of the event path.

docs/persistence.md#corruption: a row that does not match its place is a typed
error naming the session and the seq, however it is read.
"""

from __future__ import annotations

from typing import Any

import pytest
from eventsourcing.persistence import StoredEvent

from agentlog.application import Sessions
from agentlog.application.stored_log import StoredLog
from agentlog.domain.errors import CorruptSessionLogError
from agentlog.domain.json import dumps
from tests.builders import turn1
from tests.rawstore import header, raw_write


class EventPathOnly:
    """A mapper with only the library's ``to_domain_event`` (no shortcut)."""

    def __init__(self, mapper: Any) -> None:
        self.to_domain_event = mapper.to_domain_event


class Reader:
    """What ``StoredLog`` reads from an application: its recorder and mapper."""

    def __init__(self, app: Sessions, mapper: Any) -> None:
        self.recorder = app.recorder
        self.mapper = mapper


def stored(app: Sessions) -> str:
    raw_write(app, header("s"), turn1())
    return "s"


def test_the_shortcut_reads_what_the_event_path_reads(app: Sessions) -> None:
    session_id = stored(app)
    rows = app.recorder.select_events(session_id, gt=1)
    plain: Any = Reader(app, EventPathOnly(app.mapper))
    by_events = StoredLog(plain)
    assert [app.stored_log.envelope(row) for row in rows] == [
        by_events.envelope(row) for row in rows
    ]
    assert app.stored_log.events(session_id) == by_events.events(session_id)
    assert app.messages(session_id)


def row(topic: str, version: int, value: Any) -> StoredEvent:
    return StoredEvent("s", version, topic, dumps(value))


@pytest.mark.parametrize(
    "bad",
    [
        # an envelope stored at another seq, or under another type
        row("user/message", 3, {"type": "user/message", "seq": 5, "data": {}}),
        row("user/message", 3, {"type": "assistant/message", "seq": 1, "data": {}}),
        # a snapshot's state where an event belongs
        row("session-snapshot", 3, {"header": {"id": "s"}, "seq": 1}),
        # not an object
        row("user/message", 3, [1, 2]),
    ],
)
def test_a_row_not_matching_its_place_is_corruption(bad: StoredEvent) -> None:
    app = Sessions()
    with pytest.raises(CorruptSessionLogError, match=r'session "s".* at seq 1'):
        app.stored_log.envelope(bad)
    app.close()
