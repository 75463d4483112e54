"""Core scenarios E (seeds), F (header and store) and G (fork).

E runs on the bare aggregate; F and G run on the ``Sessions`` application on every
backend (``st`` = ``Sessions(invariants=False)``, ``I`` = the default).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from agentlog.application import SessionHandle, Sessions
from agentlog.domain.errors import (
    InvariantError,
    NonJsonDataError,
    SeedError,
    SessionAlreadyExistsError,
    SessionError,
    SessionForkError,
    SurfaceError,
    SurfaceIntentError,
)
from agentlog.domain.messages import derive_messages
from agentlog.domain.session import Session
from tests.scenarios.harness import (
    SE,
    SS,
    TE,
    TS,
    A,
    Acall,
    Append,
    C,
    Rep,
    SessionsScenario,
    U,
    add,
    raises_exactly,
    text,
)

MakeApp = Callable[..., Sessions]


def seed_of(*appends: Append) -> list[dict[str, Any]]:
    return [append.envelope(seq, time=1000 + seq) for seq, append in enumerate(appends)]


def bare(seed: list[dict[str, Any]], *, strict: bool = False) -> Session:
    return Session.create("s", seed=seed, strict=strict, invariants=False)


# ---------------------------------------------------------------- E. seeds


def test_core_062_a_gap_in_a_seed_is_rejected() -> None:
    seed = seed_of(TS(1), TE(1))
    seed[1]["seq"] = 5
    with raises_exactly(
        SeedError,
        "seed event at index 1 has seq 5 (expected 1); seed must be contiguous from 0",
    ):
        bare(seed)


def test_core_063_a_seed_must_start_at_seq_0() -> None:
    seed = seed_of(TS(1))
    seed[0]["seq"] = 1
    with raises_exactly(
        SeedError,
        "seed event at index 0 has seq 1 (expected 0); seed must be contiguous from 0",
    ):
        bare(seed)


def test_core_064_non_json_seed_data_is_rejected() -> None:
    seed = seed_of(U("x"))
    seed[0]["data"]["bad"] = {1, 2}
    with raises_exactly(
        NonJsonDataError,
        'seed event "user/message" (seq 0) carries non-JSON-serializable data',
    ):
        bare(seed)


def test_core_065_an_unmarked_surface_event_in_a_seed_is_rejected() -> None:
    seed = seed_of(TS(1), U("x").with_intent(None), TE(1))
    with raises_exactly(
        SeedError,
        'seed event "user/message" (seq 1) is surface-eligible but carries no '
        "surfaceOp marker",
    ):
        bare(seed)


def test_core_066_seq_is_checked_before_data() -> None:
    seed = seed_of(U("x"))
    seed[0]["seq"] = 3
    seed[0]["data"]["bad"] = object()
    with pytest.raises(SeedError, match="seed must be contiguous from 0"):
        bare(seed)


def test_core_067_the_first_bad_event_is_named() -> None:
    seed = seed_of(TS(1), U("x").with_intent(None), U("y").with_intent(None))
    with pytest.raises(SeedError, match=r'"user/message" \(seq 1\)'):
        bare(seed)


def test_core_068_a_good_seed_is_recorded_with_a_synthesised_header() -> None:
    session = bare(seed_of(TS(1), U("x"), TE(1)))
    assert session.seq == 3
    assert set(session.header) == {"version", "id", "createdAt"}
    assert session.surface.seqs == [1]


def test_core_069_mutating_the_seed_afterwards_changes_nothing() -> None:
    seed = seed_of(TS(1), U("x"), TE(1))
    session = bare(seed)
    seed[1]["data"]["content"][0]["text"] = "changed"
    seed[1]["data"]["extra"] = {1, 2}
    recorded = session.pending_events[2].envelope  # type: ignore[attr-defined]
    assert recorded["data"]["content"][0]["text"] == "x"


def test_core_070_an_unmarked_todo_write_is_a_valid_seed_event() -> None:
    todo = Append("todo/write", {"todos": [{"content": "a", "status": "pending"}]})
    session = bare(seed_of(TS(1), todo, TE(1)))
    assert session.seq == 3


def test_core_071_an_empty_seed_records_nothing() -> None:
    session = bare([])
    assert session.seq == 0
    assert len(session.pending_events) == 1  # the created event only


def test_core_072_an_invalid_replace_in_a_seed_is_rejected_at_seeding() -> None:
    # docs/events.md#the-append-pipeline: the seed accepted it and failed on the first read.
    with raises_exactly(
        SurfaceError, "surface replace: start seq 5 not found in surface"
    ):
        bare(seed_of(U("a"), Rep(5, 0, [0])))


def test_core_073_seeded_events_keep_their_time_and_are_not_published(
    make_app: MakeApp,
) -> None:
    app = make_app(invariants=False)
    published: list[Any] = []
    app.subscribe(event=lambda handle, event: published.append(event))
    handle = app.create_session(seed=seed_of(TS(1), U("x"), TE(1)))
    assert [e["time"] for e in handle.events] == [1000, 1001, 1002]
    assert published == []


def test_core_074_a_marker_on_a_log_only_seed_event_is_rejected() -> None:
    # docs/events.md#the-append-pipeline: rejected at seeding with the marker text.
    with raises_exactly(
        SurfaceIntentError,
        'session event "todo/write" is not surface-eligible and cannot carry surfaceOp',
    ):
        bare(seed_of(TS(1), Append("todo/write", {"todos": []}, surface_op="append")))


# ----------------------------------------------------------- F. header, store


def test_core_075_a_bare_session_synthesises_a_minimal_header() -> None:
    header = Session.create("bare").header
    assert set(header) == {"version", "id", "createdAt"}
    assert header["version"] == 0
    assert header["id"] == "bare"
    assert type(header["createdAt"]) is int


def test_core_076_generated_ids_are_distinct_uuid4_strings(make_app: MakeApp) -> None:
    # docs/events.md#ids: UUID4 strings, not session-<n>.
    app = make_app(invariants=False)
    first, second = app.create_session(), app.create_session()
    assert first.id != second.id
    assert uuid.UUID(first.id).version == 4
    assert uuid.UUID(second.id).version == 4


def test_core_077_a_live_id_cannot_be_created_twice(make_app: MakeApp) -> None:
    app = make_app(invariants=False)
    SessionsScenario(app, "fixed").given().when(
        lambda sessions, sid: sessions.create_session(session_id=sid)
    ).then_raises(SessionAlreadyExistsError, 'session "fixed" already exists')


def test_core_078_header_fields_from_create(make_app: MakeApp) -> None:
    app = make_app(invariants=False)
    handle = app.create_session(cwd="/srv/project", parent_session="parent")
    assert list(handle.header) == ["version", "id", "createdAt", "cwd", "parentSession"]
    assert handle.header["cwd"] == "/srv/project"
    assert handle.header["parentSession"] == "parent"


def test_core_079_a_relative_cwd_is_refused_and_nothing_registered(
    make_app: MakeApp,
) -> None:
    app = make_app(invariants=False)
    with raises_exactly(
        SessionError, 'session cwd must be an absolute path, got "relative/path"'
    ):
        app.create_session(cwd="relative/path", session_id="rel")
    assert app.live_session("rel") is None


def test_core_080_created_at_and_seed_length_are_kept(make_app: MakeApp) -> None:
    app = make_app(invariants=False)
    handle = app.create_session(created_at=123, seed_length=5)
    assert handle.header["createdAt"] == 123
    assert handle.header["seedLength"] == 5


def test_core_081_observers_see_creation_once_and_each_append(
    make_app: MakeApp,
) -> None:
    app = make_app(invariants=False)
    created: list[SessionHandle] = []
    appended: list[tuple[str, int]] = []
    app.subscribe(
        created=created.append, event=lambda h, e: appended.append((h.id, e["seq"]))
    )
    handle = app.create_session()
    TS(1).to(handle.aggregate)  # straight to the aggregate: not published
    handle.append("user/message", U("x").data, surface_op="append")
    assert created == [handle]
    assert appended == [(handle.id, 1)]


def test_core_082_a_raising_observer_is_logged_and_contained(
    make_app: MakeApp, caplog: pytest.LogCaptureFixture
) -> None:
    # Deviation (docs/service.md): observers are fire-and-forget, as in the
    # original's later store; the error is logged, never raised into append.
    app = make_app(invariants=False)
    later: list[Any] = []

    def boom(handle: SessionHandle, event: Any) -> None:
        raise RuntimeError("observer failed")

    app.subscribe(event=boom)
    app.subscribe(event=lambda h, e: later.append(e))
    handle = app.create_session()
    with caplog.at_level("ERROR", logger="agentlog"):
        handle.append("turn/start", TS(1).data)
    assert [e["type"] for e in handle.events] == ["turn/start"]
    assert [e["type"] for e in later] == ["turn/start"]
    assert "observer failed" in caplog.text


def test_core_083_a_closed_handle_is_detached_and_silent(make_app: MakeApp) -> None:
    # Adapted: prepare/enter/announce are one create_session; close() detaches.
    app = make_app(invariants=False)
    seen: list[Any] = []
    app.subscribe(event=lambda h, e: seen.append(e))
    handle = app.create_session()
    handle.append("turn/start", TS(1).data)
    app.close(handle)
    assert app.live_session(handle.id) is None
    assert handle.detached


def test_core_084_a_live_session_is_never_overwritten(make_app: MakeApp) -> None:
    app = make_app(invariants=False)
    live = app.create_session(session_id="racy")
    live.append("turn/start", TS(1).data)
    SessionsScenario(app, "racy").when(
        lambda sessions, sid: sessions.create_session(session_id=sid)
    ).then_raises(SessionAlreadyExistsError, 'session "racy" already exists')
    assert app.live_session("racy") is live
    assert live.seq == 1


def test_core_085_a_raising_created_observer_rolls_back(make_app: MakeApp) -> None:
    app = make_app(invariants=False)
    calls = {"n": 0}

    def once(handle: SessionHandle) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("created failed")

    app.subscribe(created=once)
    with pytest.raises(RuntimeError):
        app.create_session(session_id="again")
    assert app.live_session("again") is None
    handle = app.create_session(session_id="again")
    handle.append("turn/start", TS(1).data)
    assert handle.seq == 1


def test_core_086_lookup_and_listing_of_live_sessions(make_app: MakeApp) -> None:
    app = make_app(invariants=False)
    assert app.live_session("nope") is None
    first = app.create_session(session_id="b")
    second = app.create_session(session_id="a")
    listed = app.live_sessions()
    assert listed == [first, second]
    listed.clear()
    assert app.live_sessions() == [first, second]


def test_core_087_a_session_seeded_with_another_derives_the_same(
    make_app: MakeApp,
) -> None:
    app = make_app(invariants=False)
    source = app.create_session()
    for append in (TS(1), U("hi"), SS(1, 1), A("hello"), SE(1, 1), TE(1)):
        source.append(
            append.type, append.data, append.surface_op, append.source_event_seqs
        )
    copy = app.create_session(session_id="fork", seed=source.events)
    assert app.messages(copy.id) == app.messages(source.id)
    assert derive_messages(copy.events) == app.messages(source.id)


# ------------------------------------------------------------------- G. fork


def test_core_088_forking_an_empty_source(make_app: MakeApp) -> None:
    app = make_app(invariants=False)
    app.create_session(cwd="/workspace", session_id="empty-parent")
    child = app.fork("empty-parent", child_session_id="empty-child")
    assert child.events == []
    header = child.header
    assert header["id"] == "empty-child"
    assert header["cwd"] == "/workspace"
    assert header["parentSession"] == "empty-parent"
    assert header["seedLength"] == 0


def test_core_089_a_fork_copies_every_event(make_app: MakeApp) -> None:
    app = make_app(invariants=False)
    source = app.create_session(session_id="src")
    add(source, TS(1), U("hello"), TE(1))
    child = app.fork("src")
    assert child.events == source.events
    assert child.header["seedLength"] == 3
    child.append("turn/start", TS(2).data)
    assert len(source.events) == 3


def test_core_090_a_fork_at_an_earlier_boundary(make_app: MakeApp) -> None:
    app = make_app(invariants=False)
    source = app.create_session(session_id="src")
    add(source, TS(1), U("first"), TE(1), TS(2), U("second"), TE(2), TS(3))
    child = app.fork("src", boundary=2)
    assert len(child.events) == 3
    assert child.header["seedLength"] == 3
    assert app.messages(child.id) == [{"role": "user", "content": [text("first")]}]


@pytest.mark.parametrize(
    "reason",
    ["completed", "aborted", "error", "disposed", "max-tokens", "interrupted"],
)
def test_core_091_any_turn_end_reason_is_a_boundary(
    make_app: MakeApp, reason: str
) -> None:
    app = make_app(invariants=False)
    source = app.create_session(session_id="src")
    data: dict[str, Any] = {"kind": reason}
    if reason == "error":
        data.update(step=1, message="boom")
    add(source, TS(1), TE(1, data))
    assert app.fork("src").seq == 2


def test_core_092_boundary_0_of_an_empty_source(make_app: MakeApp) -> None:
    app = make_app(invariants=False)
    SessionsScenario(app, "empty").given().when(
        lambda sessions, sid: sessions.fork(sid, boundary=0, child_session_id="never")
    ).then_raises(
        SessionForkError,
        'fork boundary 0 does not exist in session "empty" (last seq: none)',
        code="INVALID_BOUNDARY",
    )
    assert app.live_session("never") is None


@pytest.mark.parametrize(
    ("boundary", "shown"), [(-1, "-1"), (0.5, "0.5"), (2**53, "9007199254740992")]
)
def test_core_093_boundaries_must_be_safe_non_negative_ints(
    make_app: MakeApp, boundary: object, shown: str
) -> None:
    app = make_app(invariants=False)
    SessionsScenario(app, "parent").given(TS(1), U("x"), TE(1)).when(
        lambda sessions, sid: sessions.fork(sid, boundary=boundary)
    ).then_raises(
        SessionForkError,
        'fork boundary for session "parent" must be a non-negative safe integer, '
        f"got {shown}",
        code="INVALID_BOUNDARY",
    )


def test_core_094_a_boundary_past_the_end(make_app: MakeApp) -> None:
    app = make_app(invariants=False)
    SessionsScenario(app, "parent").given(TS(1), U("x"), TE(1)).when(
        lambda sessions, sid: sessions.fork(sid, boundary=3)
    ).then_raises(
        SessionForkError,
        'fork boundary 3 does not exist in session "parent" (last seq: 2)',
    )


def test_core_095_missing_sources(make_app: MakeApp) -> None:
    app = make_app(invariants=False)
    with raises_exactly(SessionForkError, 'session "missing" not found') as caught:
        app.fork("missing")
    assert caught.value.code == "SESSION_NOT_FOUND"
    detached = SessionHandle(app, Session.create("detached"))
    with raises_exactly(SessionForkError, 'session "detached" not found') as caught:
        app.fork(detached)
    assert caught.value.code == "SESSION_NOT_FOUND"


def test_core_096_a_handle_that_is_not_the_live_one(make_app: MakeApp) -> None:
    app = make_app(invariants=False)
    app.create_session(session_id="same-id")
    other = SessionHandle(app, Session.create("same-id"))
    with raises_exactly(
        SessionForkError, 'session "same-id" is not the live store instance'
    ) as caught:
        app.fork(other)
    assert caught.value.code == "SESSION_NOT_LIVE"


@pytest.mark.parametrize(
    ("boundary", "event_type"),
    [
        (0, "turn/start"),
        (1, "step/start"),
        (2, "user/message"),
        (3, "assistant/message"),
        (4, "tool/call"),
    ],
)
def test_core_097_the_boundary_must_be_a_turn_end(
    make_app: MakeApp, boundary: int, event_type: str
) -> None:
    app = make_app(invariants=False)
    source = SessionsScenario(app, "src")
    source.given(TS(1), SS(1, 1), U("x"), Acall("c1"), C("c1")).when(
        lambda sessions, sid: sessions.fork(sid, boundary=boundary)
    ).then_raises(
        SessionForkError,
        f'fork boundary {boundary} in session "src" must be turn/end, got {event_type}',
        code="OPEN_TURN",
    )


def test_core_098_the_default_boundary_is_the_last_event(make_app: MakeApp) -> None:
    app = make_app(invariants=False)
    source = SessionsScenario(app, "src")
    source.given(TS(1), TE(1), Append("todo/write", {"todos": []})).when(
        lambda sessions, sid: sessions.fork(sid)
    ).then_raises(
        SessionForkError,
        'fork boundary 2 in session "src" must be turn/end, got todo/write',
        code="OPEN_TURN",
    )


def test_core_099_a_live_child_id_is_refused_first(make_app: MakeApp) -> None:
    app = make_app(invariants=False)
    app.create_session(session_id="child")
    SessionsScenario(app, "src").given(TS(1)).when(
        lambda sessions, sid: sessions.fork(sid, boundary=99, child_session_id="child")
    ).then_raises(
        SessionForkError,
        'session "child" already exists',
        code="SESSION_ALREADY_EXISTS",
    )


def test_core_100_a_fork_without_child_id_gets_a_uuid_and_is_announced(
    make_app: MakeApp,
) -> None:
    app = make_app(invariants=False)
    created: list[str] = []
    source = app.create_session(session_id="src")
    add(source, TS(1), TE(1))
    app.subscribe(created=lambda h: created.append(h.id))
    child = app.fork("src")
    assert uuid.UUID(child.id).version == 4
    assert created == [child.id]


def test_core_101_with_invariants_a_fork_replays_through_the_checker(
    make_app: MakeApp,
) -> None:
    app = make_app()
    source = app.create_session(session_id="src")
    add(source, TS(1), U("x"), SS(1, 1), A("y"), SE(1, 1), TE(1))
    child = app.fork("src")
    child.append("turn/start", TS(2).data)
    with pytest.raises(InvariantError, match="turn/start 3 while turn 2 is still open"):
        child.append("turn/start", TS(3).data)


def test_core_136_a_strict_seed_runs_the_checker(make_app: MakeApp) -> None:
    # docs/invariants.md#when-they-run: history meets the invariants only when the caller asks.
    app = make_app()
    with raises_exactly(
        InvariantError, "invariant violated: turn/start 2 while turn 1 is still open"
    ):
        app.create_session(session_id="bad", seed=seed_of(TS(1), TS(2)), strict=True)
    assert app.live_session("bad") is None
    first = app.create_session(session_id="a")
    second = app.create_session(session_id="b")
    first.append("turn/start", TS(1).data)
    second.append("turn/start", TS(1).data)
