"""Core scenarios D (derived messages) through ``Sessions.messages`` on every backend (``st``).

The application derives messages incrementally and reads only surface events
(docs/surface.md#derived-messages); it must equal a fold from scratch, live and after a reload by a
second application, and hand out fresh copies every call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentlog.application import SessionHandle, Sessions
from agentlog.domain.errors import SessionConflictError
from agentlog.domain.messages import derive_messages
from tests.scenarios.harness import TS, Append, Rep, U, text
from tests.scenarios.test_core_surface_messages import (
    CONTEXT_48,
    EXPECTED_46,
    STEERING_49,
    STEP_46,
    derived,
    mutate,
)

MakeApp = Callable[..., Sessions]


def on_backend(make_app: MakeApp, *appends: Append) -> list[dict[str, Any]]:
    """``st.messages`` live, then flushed and read by a second application."""
    writer = make_app(invariants=False)
    handle = writer.create_session(session_id="d")
    for append in appends:
        handle.append(
            append.type, append.data, append.surface_op, append.source_event_seqs
        )
    live = writer.messages("d")
    assert live == derive_messages(handle.events)
    writer.flush(handle)
    reader = make_app(invariants=False)
    assert reader.messages("d") == live
    assert reader.messages("d", last=1) == live[-1:]
    return live


def test_core_046_on_every_backend(make_app: MakeApp) -> None:
    assert on_backend(make_app, *STEP_46) == EXPECTED_46


def test_core_048_049_on_every_backend(make_app: MakeApp) -> None:
    assert on_backend(make_app, TS(1), CONTEXT_48, STEERING_49) == [
        *derived(CONTEXT_48),
        *derived(STEERING_49),
    ]


def test_core_056_on_every_backend(make_app: MakeApp) -> None:
    appends = (U("a"), U("original"), U("z"), Rep(1, 1, [1], value="compacted"))
    assert on_backend(make_app, *appends) == [
        {"role": "user", "content": [text("a")]},
        {"role": "assistant", "content": [text("compacted")]},
        {"role": "user", "content": [text("z")]},
    ]


def test_core_058_059_on_every_backend(make_app: MakeApp) -> None:
    # 59: the incremental cache still hands out fresh, equal copies.
    app = make_app(invariants=False)
    handle = app.create_session(session_id="m")
    for append in STEP_46:
        handle.append(
            append.type, append.data, append.surface_op, append.source_event_seqs
        )
    app.flush(handle)
    events = handle.events
    mutate(app.messages("m"))
    assert handle.events == events
    assert make_app(invariants=False).read_events("m") == events
    second, third = app.messages("m"), app.messages("m")
    assert second == third == EXPECTED_46
    assert second is not third
    assert all(a is not b for a, b in zip(second, third, strict=True))
    assert second[2]["content"][0] is not third[2]["content"][0]


END_1 = Append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})


def closed_turn(app: Sessions, session_id: str) -> None:
    handle = app.create_session(session_id=session_id)
    for append in (TS(1), END_1):
        handle.append(append.type, append.data)
    app.flush(handle)


def test_core_000_4_messages_after_a_lost_conflict_equal_a_fresh_fold(
    make_app: MakeApp,
) -> None:
    first, second = make_app(), make_app()
    closed_turn(first, "race")
    loser = first.get_session("race")
    loser.append("turn/start", TS(2).data)
    loser.append("user/message", U("from the loser").data, "append")
    assert first.messages("race") == [
        {"role": "user", "content": [text("from the loser")]}
    ]
    winner = second.get_session("race")
    winner.append("turn/start", TS(2).data)
    winner.append("user/message", U("from the winner").data, "append")
    winner.append("turn/end", {"turn": 2, "reason": {"kind": "completed"}})
    second.flush(winner)
    with pytest.raises(SessionConflictError):
        first.flush(loser)
    reloaded = first.get_session("race")
    assert reloaded.events == second.read_events("race")
    assert first.messages("race") == derive_messages(reloaded.events)


def test_core_000_4_messages_after_a_discarded_command_equal_a_fresh_fold(
    make_app: MakeApp,
) -> None:
    app = make_app()
    closed_turn(app, "retry")

    def failing(handle: SessionHandle) -> None:
        handle.append("turn/start", TS(2).data)
        handle.append("user/message", U("discarded").data, "append")
        app.messages("retry")
        raise RuntimeError("command failed")

    with pytest.raises(RuntimeError):
        app.run_with_retry("retry", failing)
    app.run_with_retry(
        "retry",
        lambda handle: [
            handle.append("turn/start", TS(2).data),
            handle.append("user/message", U("kept").data, "append"),
        ],
    )
    expected = derive_messages(app.read_events("retry"))
    assert expected == [{"role": "user", "content": [text("kept")]}]
    assert app.messages("retry") == expected
