"""Two writers first-appending to the same new session, each with its own key
store handle: both commands end up stored under one key, readable by anyone."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from agentlog import SessionConflictError
from tests.crypto.test_round_trip import turn

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentlog.application import Sessions


def test_two_writers_creating_one_session_share_its_key(
    open_app: Callable[..., Sessions],
) -> None:
    apps = [open_app(), open_app()]
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def write(index: int) -> None:
        barrier.wait()
        try:
            for _ in range(50):
                try:
                    with apps[index].command("new", create=True, cwd="/w") as handle:
                        n = handle.aggregate.turns.next_turn
                        for item in turn(n, f"writer {index}", "ok", "x"):
                            item.to(handle)  # type: ignore[attr-defined]
                    return
                except SessionConflictError:
                    continue
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    reader = open_app()
    events = reader.read_events("new")
    prompts = sorted(
        e["data"]["content"][0]["text"] for e in events if e["type"] == "user/message"
    )
    assert prompts == ["writer 0", "writer 1"]
