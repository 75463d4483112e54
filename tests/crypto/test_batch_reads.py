"""``StoredLog.events_at`` on encrypted stores: a batch opens each row with its
own session's key, as single reads do, and a session whose key is forgotten
fails its own places only (docs/encryption.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from agentlog import SessionKeyForgottenError
from agentlog.application import Sessions
from tests.crypto.test_round_trip import assert_sealed, raw_rows, write

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentlog.application.stored_log import Place

IDS = ("erased", "kept 🙂", "quo'te")
EVENTS = 22


def places() -> list[Place]:
    return [(key, seq) for key in IDS for seq in range(EVENTS + 1)]


def test_a_batch_opens_each_row_with_its_session_key(
    open_app: Callable[..., Sessions],
) -> None:
    app = open_app()
    for key in IDS:
        write(app, key)
        assert_sealed(raw_rows(app, key))
    read = app.stored_log.events_at(places())
    assert len(read.found) == len(IDS) * EVENTS and not read.failed
    for session_id, seq in places():
        single = app.stored_log.events(session_id, seq, seq)
        event = read.event((session_id, seq))
        assert ([] if event is None else [event]) == single


def test_a_forgotten_key_fails_only_its_session_places(
    open_app: Callable[..., Sessions],
) -> None:
    app = open_app()
    for key in IDS:
        write(app, key)
    app.forget_keys(["erased"])
    fresh = open_app()  # no data key cached
    read = fresh.stored_log.events_at(places())
    assert len(read.found) == (len(IDS) - 1) * EVENTS
    assert {place[0] for place in read.failed} == {"erased"}
    for session_id, seq in places():
        if session_id == "erased" and seq < EVENTS:
            with pytest.raises(SessionKeyForgottenError):
                read.event((session_id, seq))
            with pytest.raises(SessionKeyForgottenError):
                fresh.stored_log.events(session_id, seq, seq)
        else:
            event = read.event((session_id, seq))
            single = fresh.stored_log.events(session_id, seq, seq)
            assert ([] if event is None else [event]) == single
