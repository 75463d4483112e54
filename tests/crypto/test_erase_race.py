"""The erase race (issue 21): erases while other processes write the same SQLite
store. Before, the scrub after a committed erase hit "database is locked", the
erase raised although the session was gone, and its key was never forgotten.
Now every erase that commits reports the session erased, and every erased
session's key is gone once the erasing process is done (or, for work left
pending, after one ``gc``)."""

from __future__ import annotations

import multiprocessing
import time
from typing import TYPE_CHECKING

import pytest

from agentlog.application import Sessions
from agentlog.domain.errors import SessionConflictError, StoreUnavailableError
from tests.crypto.test_erase import key_exists
from tests.crypto.test_round_trip import turn, write

if TYPE_CHECKING:
    from multiprocessing.synchronize import Event

WRITERS = 3
ERASED = 12


def keep_writing(env: dict[str, str], index: int, stop: Event) -> None:
    app = Sessions(env=env)
    try:
        n = 0
        while not stop.is_set():
            n += 1
            try:
                with app.command(f"w{index}", create=True, cwd="/w") as handle:
                    number = handle.aggregate.turns.next_turn
                    for item in turn(number, f"writer {index} {n}", "ok", "x" * 200):
                        item.to(handle)  # type: ignore[attr-defined]
            except (SessionConflictError, StoreUnavailableError):
                continue
    finally:
        app.close()


@pytest.mark.slow
def test_erases_under_contending_writers_report_erased_and_forget_keys(
    crypto_env: dict[str, str],
) -> None:
    if crypto_env["PERSISTENCE_MODULE"] != "eventsourcing.sqlite":
        pytest.skip("the lock contention is SQLite's")
    app = Sessions(env=crypto_env)
    ids = [f"gone{number}" for number in range(ERASED)]
    for session_id in ids:
        write(app, session_id)
    stop = multiprocessing.get_context("spawn").Event()
    context = multiprocessing.get_context("spawn")
    writers = [
        context.Process(target=keep_writing, args=(crypto_env, index, stop))
        for index in range(WRITERS)
    ]
    for process in writers:
        process.start()
    pending: list[str] = []
    try:
        time.sleep(1.0)  # the writers are running
        for session_id in ids:
            [erasure] = app.erase(session_id, reason="race")  # never raises
            assert erasure.session_id == session_id
            assert app.is_erased(session_id)
            pending += [session_id] if erasure.pending else []
    finally:
        stop.set()
        for process in writers:
            process.join(60)
    report = app.erase_older_than(0, reason="finish")
    assert report.pending == []
    for session_id in ids:
        assert not key_exists(crypto_env, session_id), session_id
    app.close()
