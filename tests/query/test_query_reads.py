"""Query reads on every backend: persistence scenarios 93–107."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pytest

from agentlog.application import Sessions
from agentlog.application.query import SessionQuery, SessionRecord
from agentlog.domain.errors import SessionQueryError
from agentlog.domain.title import TitleConfig, plan_fallback_title
from tests.query.support import (
    TURN1,
    CountingReader,
    CountingRecorder,
    ev,
    header,
    raw_write,
    session,
)
from tests.scenarios.harness import TE, TS, A, Append, Rep, U, chunk

MakeApp = Callable[..., Sessions]


def code_of(call: Callable[[], object]) -> tuple[str | None, str]:
    with pytest.raises(SessionQueryError) as caught:
        call()
    return caught.value.code, str(caught.value)


def title(value: str) -> Append:
    data = {"title": value, "messageSeqs": [1], "source": {"kind": "fallback"}}
    return Append("session/title", data)


def rows(records: list[SessionRecord]) -> list[tuple[str, bool, bool]]:
    return [(r.header["id"], r.live, r.persisted) for r in records]


def test_pq_093_live_sessions_newest_first_as_copies(app: Sessions) -> None:
    for session_id, created in (("older", 1), ("z", 2), ("a", 2)):
        session(app, session_id, created_at=created, close=False, flush=False)
    query = SessionQuery(app)
    listed = query.list_sessions()
    assert rows(listed) == [
        ("a", True, False),
        ("z", True, False),
        ("older", True, False),
    ]
    listed[0].header["cwd"] = "/mutated"
    listed[0].header["createdAt"] = 99
    assert query.list_sessions()[0].header == {
        "version": 0,
        "id": "a",
        "createdAt": 2,
        "cwd": "/w",
    }
    assert app.header("a")["cwd"] == "/w"


def test_pq_094_live_and_persisted_merge_into_one_record(app: Sessions) -> None:
    session(app, "shared", *TURN1, created_at=3, cwd="/same", close=False)
    session(app, "durable", *TURN1, created_at=2)
    listed = SessionQuery(app).list_sessions()
    assert rows(listed) == [("shared", True, True), ("durable", False, True)]


def test_pq_095_conflicting_headers_then_unmount(app: Sessions) -> None:
    session(app, "shared", created_at=3, cwd="/same", close=False, flush=False)
    raw_write(app, header("shared", 3, cwd="/conflict"), [ev(0, TS(1))])
    query = SessionQuery(app)
    code, message = code_of(query.list_sessions)
    assert code == "SESSION_QUERY_SOURCE_CONFLICT"
    assert message == 'live and persisted headers conflict for session "shared"'
    query.unmount()
    assert [r.to_json() for r in query.list_sessions()] == [
        {
            "header": {"version": 0, "id": "shared", "createdAt": 3, "cwd": "/same"},
            "live": True,
            "persisted": False,
        }
    ]
    query.mount()
    assert code_of(query.list_sessions)[0] == "SESSION_QUERY_SOURCE_CONFLICT"
    # The live creation would now be stored at close, and conflict: drop it.
    app.discard(app.live_session("shared"))  # type: ignore[arg-type]


def test_pq_096_delegation_depth_zero_is_not_a_conflict(app: Sessions) -> None:
    session(app, "s", created_at=3, close=False, flush=False)
    raw_write(app, header("s", 3, cwd="/w", delegationDepth=0), [ev(0, TS(1))])
    listed = SessionQuery(app).list_sessions()
    assert rows(listed) == [("s", True, True)]
    assert "delegationDepth" not in listed[0].header
    app.discard(app.live_session("s"))  # type: ignore[arg-type]


def test_pq_097_a_failing_backend_cannot_break_live_reads(app: Sessions) -> None:
    session(app, "live", *TURN1, close=False, flush=False)
    session(app, "stored", *TURN1)
    failing = CountingReader(
        None, fail_list=OSError("disk gone"), fail_load=OSError("disk gone")
    )
    query = SessionQuery(app, persistence=failing)
    assert len(query.list_events("live")) == 6
    assert query.read_event("live", 1).target["type"] == "user/message"
    assert query.read_surface("live").captured_through_seq == 5
    assert failing.calls == 0
    code, message = code_of(query.list_sessions)
    assert code == "SESSION_QUERY_PERSISTENCE_FAILED"
    assert message == "session persistence listing failed: disk gone"
    code, message = code_of(lambda: query.list_events("stored"))
    assert code == "SESSION_QUERY_PERSISTENCE_FAILED"
    loading = CountingReader(query.store_reader(), fail_load=OSError("bad sector"))
    query.mount(loading)
    with pytest.raises(SessionQueryError) as caught:
        query.list_events("stored")
    assert caught.value.code == "SESSION_QUERY_PERSISTENCE_FAILED"
    assert str(caught.value) == 'failed to load session "stored": bad sector'
    assert isinstance(caught.value.cause, OSError)


@pytest.mark.parametrize("mounted", [True, False])
def test_pq_098_unknown_ids_are_not_found(app: Sessions, mounted: bool) -> None:
    query = SessionQuery(app)
    if not mounted:
        query.unmount()
    for read in (
        query.list_events,
        query.read_surface,
        query.read_title,
        query.trace_session,
        lambda i: query.read_event(i, 0),
        lambda i: query.trace_event(i, 0),
    ):
        code, message = code_of(partial(read, "nobody"))
        assert code == "SESSION_QUERY_SESSION_NOT_FOUND"
        assert message == 'session "nobody" not found'


def test_pq_099_a_failure_without_a_message_is_an_unknown_error(app: Sessions) -> None:
    session(app, "stored", *TURN1)
    query = SessionQuery(app)
    failure = RuntimeError()
    query.mount(CountingReader(query.store_reader(), fail_load=failure))
    with pytest.raises(SessionQueryError) as caught:
        query.list_events("stored")
    assert caught.value.code == "SESSION_QUERY_PERSISTENCE_FAILED"
    assert str(caught.value) == 'failed to load session "stored": unknown error'
    assert caught.value.cause is failure


def test_pq_100_a_header_changed_between_list_and_load(app: Sessions) -> None:
    session(app, "stored", *TURN1)
    query = SessionQuery(app)

    def move(head: dict[str, Any]) -> None:
        head["cwd"] = "/elsewhere"

    query.mount(CountingReader(query.store_reader(), alter_loaded=move))
    for read in (query.list_events, query.read_surface, query.read_title):
        code, message = code_of(partial(read, "stored"))
        assert code == "SESSION_QUERY_SOURCE_CONFLICT"
        assert message == 'live and persisted headers conflict for session "stored"'


def test_pq_101_titles_live_first_and_record_keys(make_app: MakeApp) -> None:
    app = make_app(invariants=False)
    raw_write(
        app,
        header("persisted"),
        [
            {
                "type": "session/title",
                "seq": 0,
                "time": 20,
                "data": {
                    "title": "Persisted title",
                    "messageSeqs": [],
                    "source": {"kind": "fallback"},
                },
            }
        ],
    )
    both = session(app, "both", U("hi"), title("Persisted title"), close=False)
    title("Live title").to(both)  # type: ignore[arg-type]
    query = SessionQuery(app)
    live = query.read_title("both")
    assert live is not None
    assert live.title == "Live title"
    stored = query.read_title("persisted")
    assert stored is not None
    assert stored.to_json() == {
        "title": "Persisted title",
        "messageSeqs": [],
        "source": {"kind": "fallback"},
        "eventSeq": 0,
        "updatedAt": 20,
    }
    session(app, "untitled", U("hi"))
    assert query.read_title("untitled") is None
    for record in query.list_sessions():
        assert list(record.to_json()) == ["header", "live", "persisted"]
        assert list(record.model_dump()) == ["header", "live", "persisted"]


def test_pq_102_shadowed_log_only_current(make_app: MakeApp) -> None:
    app = make_app(invariants=False)
    session(app, "s", U("question"), chunk(), Rep(0, 0, [0, 1]), close=False)
    records = SessionQuery(app).list_events("s")
    assert [r.surface for r in records] == ["shadowed", "log-only", "current"]
    assert records[2].to_json() == {
        "sessionId": "s",
        "seq": 2,
        "type": "assistant/message",
        "time": records[2].time,
        "surface": "current",
    }


def surface_log() -> tuple[Append, ...]:
    replace_two_three = Append(
        "user/message",
        {
            "content": [{"type": "text", "text": "compacted"}],
            "source": {"kind": "user"},
        },
        {"op": "replace", "start": 2, "end": 3},
        [2, 3],
    )
    replace_zero = Append(
        "user/message",
        {"content": [{"type": "text", "text": "edited"}], "source": {"kind": "user"}},
        {"op": "replace", "start": 0, "end": 0},
        [0],
    )
    return (U("q"), chunk(), replace_zero, A("a"), replace_two_three, A("done"))


@pytest.mark.parametrize("stored", [False, True])
def test_pq_103_read_surface(make_app: MakeApp, stored: bool) -> None:
    app = make_app(invariants=False)
    handle = session(app, "s", *surface_log(), close=stored, flush=stored)
    query = SessionQuery(app)
    snapshot = query.read_surface("s")
    assert snapshot.captured_through_seq == 5
    assert [(e["seq"], e["type"]) for e in snapshot.events] == [
        (4, "user/message"),
        (5, "assistant/message"),
    ]
    assert snapshot.session["id"] == "s"
    snapshot.events[0]["data"]["content"].clear()
    snapshot.session["id"] = "mutated"
    again = query.read_surface("s")
    assert again.events[0]["data"]["content"] == [{"type": "text", "text": "compacted"}]
    assert again.session["id"] == "s"
    if not stored:
        assert handle.events[4]["data"]["content"][0]["text"] == "compacted"
    session(app, "empty", close=False, flush=False)
    assert query.read_surface("empty").to_json() == {
        "session": {"version": 0, "id": "empty", "createdAt": 1, "cwd": "/w"},
        "capturedThroughSeq": None,
        "events": [],
    }


@pytest.mark.parametrize("stored", [False, True])
def test_pq_104_read_event_windows(make_app: MakeApp, stored: bool) -> None:
    app = make_app(invariants=False)
    session(app, "s", TS(1), U("hi"), A("hello"), TE(1), close=stored, flush=stored)
    query = SessionQuery(app, read_window_max=1)
    window = query.read_event("s", 2, before=1, after=1)
    assert (window.start_seq, window.end_seq) == (1, 3)
    assert window.target["seq"] == 2
    assert [e["seq"] for e in window.events] == [1, 2, 3]
    assert list(window.to_json()) == [
        "session",
        "target",
        "events",
        "startSeq",
        "endSeq",
    ]
    edge = query.read_event("s", 3, after=1)
    assert (edge.start_seq, edge.end_seq, len(edge.events)) == (3, 3, 1)
    code, message = code_of(lambda: query.read_event("s", 9))
    assert code == "SESSION_QUERY_EVENT_NOT_FOUND"
    assert message == 'session "s" has no event at seq 9'
    assert (
        code_of(lambda: query.read_event("s", -1))[0] == "SESSION_QUERY_EVENT_NOT_FOUND"
    )
    for kwargs, name in (
        ({"before": -1}, "before"),
        ({"before": 2}, "before"),
        ({"after": 0.5}, "after"),
        ({"after": True}, "after"),
    ):
        code, message = code_of(partial(query.read_event, "nobody", 0, **kwargs))
        assert code == "SESSION_QUERY_INVALID_WINDOW"
        assert message == f"{name} must be an integer between 0 and 1"


def test_pq_105_a_stored_surface_event_without_surface_op(app: Sessions) -> None:
    bad = {"type": "user/message", "seq": 0, "time": 1, "data": U("hi").data}
    raw_write(app, header("bad"), [bad])
    query = SessionQuery(app)
    with pytest.raises(SessionQueryError) as caught:
        query.list_events("bad")
    assert caught.value.code == "SESSION_QUERY_INVALID_SURFACE"
    assert str(caught.value).startswith("invalid session surface: ")
    assert caught.value.cause is not None
    assert query.read_event("bad", 0).target == bad


@pytest.mark.parametrize("value", [-1, 1.5, "2", None, True])
def test_pq_106_read_window_max_is_validated(app: Sessions, value: object) -> None:
    with pytest.raises(SessionQueryError) as caught:
        SessionQuery(app, read_window_max=value)
    assert caught.value.code == "SESSION_QUERY_INVALID_CONFIG"
    assert str(caught.value) == (
        "session-query: readWindowMax must be a non-negative integer"
    )
    assert SessionQuery(app).read_window_max == 50
    assert SessionQuery(app, read_window_max=0).read_window_max == 0


def test_pq_107_reading_a_crashed_session_never_writes(app: Sessions) -> None:
    session(app, "crashed", *TURN1, TS(2), U("again"))
    before = len(app.recorder.select_events("crashed"))
    query = SessionQuery(app)
    records = query.list_events("crashed")
    assert [r.type for r in records][-2:] == ["turn/start", "user/message"]
    assert query.read_surface("crashed").captured_through_seq == 7
    assert len(app.recorder.select_events("crashed")) == before
    assert query.list_sessions()[0].persisted


def test_persisted_reads_load_through_the_store_not_the_aggregate(
    app: Sessions,
) -> None:
    session(app, "s", *TURN1)
    query = SessionQuery(app)
    reads = CountingRecorder(app)
    try:
        query.read_event("s", 3, before=1, after=1)
    finally:
        reads.restore()
    # The header row and the three window rows: two indexed reads, no full log.
    assert reads["select_events"] == 2


def test_pq_087_titles_round_trip_and_fold_the_same_after_reload(
    make_app: MakeApp,
) -> None:
    first = make_app()
    handle = session(first, "s", TS(1), U("Build the thing"), close=False, flush=False)
    config = TitleConfig(
        fallback_max_words=5, fallback_max_bytes=40, max_title_bytes=80
    )
    planned = plan_fallback_title(handle.events, config)
    assert planned is not None
    Append("session/title", planned).to(handle)  # type: ignore[arg-type]
    TE(1).to(handle)  # type: ignore[arg-type]
    before = SessionQuery(first).read_title("s")
    first.close(handle)
    second = make_app()
    query = SessionQuery(second)
    assert [r.type for r in query.list_events("s")] == [
        "turn/start",
        "user/message",
        "session/title",
        "turn/end",
    ]
    after = query.read_title("s")
    assert after is not None
    assert after == before
    assert after.event_seq == 2
    assert after.title == "Build the thing"
    summary = query.list_summaries().items[0]
    assert (summary.title, summary.first_prompt) == (
        "Build the thing",
        "Build the thing",
    )
