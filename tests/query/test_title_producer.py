"""Persistence scenarios G (82–87): the fallback title producer and the out-of-band append,
on every backend. (The model-backed provider, 91–92, is not part of this build.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentlog.application import Sessions
from agentlog.application.titles import SessionTitles
from agentlog.domain.title import TitleConfig, fold_session_title

MakeApp = Callable[..., Sessions]
USER = {"kind": "user"}
CONFIG = TitleConfig(5, 40, 80)


def prompt(text: str, source: Any = None) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "source": source or USER}


def start(handle: Any, turn: int = 1) -> None:
    handle.append(
        "turn/start", {"turn": turn, "trigger": {"kind": "message", "source": USER}}
    )


def test_pq_082_first_prompt_titles_the_session_inside_its_turn(
    make_app: MakeApp,
) -> None:
    app = make_app()
    SessionTitles(app, CONFIG)
    handle = app.create_session(session_id="t")
    start(handle)
    handle.append(
        "user/message",
        prompt("  Build\nlog-backed session titles please  "),
        surface_op="append",
    )
    events = handle.events
    assert events[2]["type"] == "session/title"
    assert events[2]["data"] == {
        "title": "Build log-backed session titles please",
        "messageSeqs": [1],
        "source": {"kind": "fallback"},
    }
    assert handle.surface.seqs == [1]


def test_pq_083_only_real_prompts_title_and_only_once(make_app: MakeApp) -> None:
    app = make_app()
    SessionTitles(app, CONFIG)
    handle = app.create_session(session_id="t")
    start(handle)
    handle.append(
        "user/message",
        prompt("from a plugin", {"kind": "plugin", "plugin": "x"}),
        surface_op="append",
    )
    handle.append(
        "user/message",
        {"content": [{"type": "reasoning", "text": "thinking"}], "source": USER},
        surface_op="append",
    )
    handle.append("user/message", prompt(" \n\t "), surface_op="append")
    assert fold_session_title(handle.events) is None
    handle.append("user/message", prompt("the real question"), surface_op="append")
    handle.append("user/message", prompt("a later question"), surface_op="append")
    titles = [e for e in handle.events if e["type"] == "session/title"]
    assert len(titles) == 1
    assert titles[0]["data"]["title"] == "the real question"


def test_pq_085_086_outside_a_turn_a_zero_step_turn_and_one_flush(
    make_app: MakeApp,
) -> None:
    app = make_app()
    handle = app.create_session(session_id="t")
    start(handle)
    handle.append("user/message", prompt("hello there"), surface_op="append")
    handle.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    app.flush(handle)
    flushes: list[int] = []
    original = app.flush

    def counting(h: Any = None) -> None:
        flushes.append(1)
        original(h)

    app.flush = counting  # type: ignore[method-assign]
    titles = SessionTitles(app, CONFIG)
    first, second = titles.ensure_fallback("t"), titles.ensure_fallback("t")
    assert first == second
    assert first is not None
    assert first.title == "hello there"
    types = [e["type"] for e in make_app().read_events("t")]
    assert types[-3:] == ["turn/start", "session/title", "turn/end"]
    assert types.count("session/title") == 1
    assert handle.events[-3]["data"]["trigger"] == {"kind": "session-title"}
    assert flushes == [1]


def test_pq_087_titles_survive_a_reload(make_app: MakeApp) -> None:
    app = make_app()
    SessionTitles(app, CONFIG)
    handle = app.create_session(session_id="t")
    start(handle)
    handle.append("user/message", prompt("persist me"), surface_op="append")
    handle.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    app.flush(handle)
    events = make_app().read_events("t")
    assert [e["type"] for e in events] == [
        "turn/start",
        "user/message",
        "session/title",
        "turn/end",
    ]
    title = fold_session_title(events)
    assert title is not None
    assert title.event_seq == 2


def test_pq_088_a_fork_inherits_the_title(make_app: MakeApp) -> None:
    app = make_app()
    titles = SessionTitles(app, CONFIG)
    parent = app.create_session(session_id="parent")
    start(parent)
    parent.append("user/message", prompt("parent question"), surface_op="append")
    parent.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    child = app.fork("parent")
    start(child, 2)
    child.append("user/message", prompt("child question"), surface_op="append")
    assert titles.ensure_fallback(child.id) == titles.ensure_fallback("parent")
    assert [e["type"] for e in child.events].count("session/title") == 1


def test_pq_089_an_empty_fallback_writes_nothing(make_app: MakeApp) -> None:
    app = make_app()
    titles = SessionTitles(app, TitleConfig(5, 1, 1))
    handle = app.create_session(session_id="t")
    start(handle)
    handle.append("user/message", prompt("😀"), surface_op="append")
    assert titles.ensure_fallback("t") is None
    assert "session/title" not in [e["type"] for e in handle.events]


def test_a_nested_out_of_band_append_is_refused(
    make_app: MakeApp, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app()
    handle = app.create_session(session_id="t")

    def nested(h: Any, event: Any) -> None:
        if event["type"] == "session/title":
            app.append_out_of_band(h, "session/title", event["data"])

    app.subscribe(event=nested)
    data = {"title": "x", "messageSeqs": [0], "source": {"kind": "fallback"}}
    # Observers are fire-and-forget: the refusal is logged, not raised.
    with caplog.at_level("ERROR", logger="agentlog"):
        app.append_out_of_band(handle, "session/title", data)
    assert "already has an out-of-band append" in caplog.text
    stored = [e["type"] for e in make_app().read_events("t")]
    assert stored == ["turn/start", "session/title", "turn/end"]
