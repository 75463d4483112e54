"""One service request = one turn written in a unit of work, and its checks.

Each request writes a turn whose user message names the request, so the store
can be checked request by request: every successful request exactly once, no
failed request at all, and every session's log a valid serial history.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from tests.scenarios.harness import SE, SS, TE, TS, A, U, add

if TYPE_CHECKING:
    from collections.abc import Iterable

    from agentlog.application import SessionHandle, Sessions


class RequestFailedError(RuntimeError):
    """The caller's own code failing half-way through a request."""


def write_turn(handle: SessionHandle, request_id: str, *, fail: bool) -> None:
    """Append one whole turn; raise half-way when ``fail``."""
    turn = handle.aggregate.turns.next_turn
    add(handle, TS(turn), U(request_id))
    if fail:
        raise RequestFailedError(request_id)
    add(
        handle,
        SS(turn, 1),
        A(f"reply to {request_id}", turn=turn),
        SE(turn, 1),
        TE(turn),
    )


def serve(app: Sessions, session_id: str, request_id: str, *, fail: bool) -> None:
    """A request as a service writes it: one command per request."""
    with app.command(session_id, create=True) as handle:
        write_turn(handle, request_id, fail=fail)


def stored_requests(app: Sessions, session_ids: Iterable[str]) -> Counter[str]:
    """How often each request id is stored, checking each log is a whole history.

    Loading with invariants on replays every rule; every turn must be closed
    (``completed``) and hold exactly one user message.
    """
    seen: Counter[str] = Counter()
    for session_id in session_ids:
        if not app.is_stored(session_id):
            continue
        events = app.read_events(session_id)
        aggregate = app.load_aggregate(session_id)
        assert not aggregate.is_turn_open, session_id
        assert aggregate.corruption is None
        turns = [e for e in events if e["type"] == "turn/start"]
        ends = [e for e in events if e["type"] == "turn/end"]
        assert len(turns) == len(ends)
        assert all(e["data"]["reason"]["kind"] == "completed" for e in ends)
        assert [e["data"]["turn"] for e in turns] == list(range(1, len(turns) + 1))
        for event in events:
            if event["type"] == "user/message":
                seen[event["data"]["content"][0]["text"]] += 1
    return seen


def check_outcome(
    app: Sessions,
    session_ids: Iterable[str],
    succeeded: Iterable[str],
    failed: Iterable[str],
) -> None:
    """Every successful request stored once; no failed one stored."""
    seen = stored_requests(app, session_ids)
    succeeded = list(succeeded)
    assert all(seen[request] == 1 for request in succeeded), [
        (r, seen[r]) for r in succeeded if seen[r] != 1
    ]
    assert not [request for request in failed if seen[request]]
    assert sum(seen.values()) == len(succeeded)
