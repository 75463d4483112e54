"""The unit of work: ``with app.command(id) as s:`` stores all of a block or none."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import pytest

from agentlog.domain.errors import (
    InvariantError,
    SessionBusyError,
    SessionClosedError,
    SessionNotFoundError,
)
from tests.scenarios.harness import TE, TS, U, add
from tests.service.requests import (
    RequestFailedError,
    serve,
    stored_requests,
    write_turn,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentlog.application import Sessions

    MakeApp = Callable[..., Sessions]


def test_a_successful_command_is_stored_when_the_block_ends(make_app: MakeApp) -> None:
    app = make_app()
    with app.command("s", create=True, cwd="/w") as handle:
        write_turn(handle, "r1", fail=False)
        assert not make_app().is_stored("s")
    assert stored_requests(make_app(), ["s"]) == {"r1": 1}
    assert app.header("s")["cwd"] == "/w"


def test_a_command_raising_in_the_callers_code_stores_nothing(
    make_app: MakeApp,
) -> None:
    app = make_app()
    serve(app, "s", "ok", fail=False)
    with pytest.raises(RequestFailedError):
        serve(app, "s", "bad", fail=True)
    handle = app.live_session("s")
    assert handle is not None and handle.unflushed == 0
    assert handle.seq == 6  # the failed turn is gone from the live state too
    serve(app, "s", "after", fail=False)
    assert stored_requests(make_app(), ["s"]) == {"ok": 1, "after": 1}


def test_a_rule_broken_half_way_discards_the_whole_block(make_app: MakeApp) -> None:
    app = make_app()

    def request() -> None:
        with app.command("s", create=True) as handle:
            add(handle, TS(1), U("half"))
            add(handle, TE(2))  # wrong turn number

    with pytest.raises(InvariantError):
        request()
    assert not app.is_stored("s")
    assert app.live_session("s") is None or app.live_session("s").seq == 0  # type: ignore[union-attr]
    serve(app, "s", "next", fail=False)
    assert stored_requests(make_app(), ["s"]) == {"next": 1}


def test_a_new_session_whose_first_command_fails_is_not_created(
    make_app: MakeApp,
) -> None:
    app = make_app()
    with pytest.raises(RequestFailedError):
        serve(app, "fresh", "bad", fail=True)
    assert not make_app().is_stored("fresh")
    with pytest.raises(SessionNotFoundError):
        app.command("missing").__enter__()


def test_a_nested_command_failure_drops_only_its_own_events(
    make_app: MakeApp,
) -> None:
    app = make_app()
    with app.command("s", create=True) as outer:
        add(outer, TS(1), U("outer"))

        def nested() -> None:
            with app.command("s") as inner:
                assert inner is outer
                add(inner, U("inner"))
                raise RequestFailedError("inner")

        with pytest.raises(RequestFailedError):
            nested()
        add(outer, TE(1))
    texts = [
        e["data"]["content"][0]["text"]
        for e in make_app().read_events("s")
        if e["type"] == "user/message"
    ]
    assert texts == ["outer"]


def test_a_session_held_by_another_thread_is_busy_after_the_timeout(
    make_app: MakeApp,
) -> None:
    app = make_app()
    serve(app, "s", "r", fail=False)
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with app.command("s"):
            held.set()
            done.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        held.wait(10)
        with pytest.raises(SessionBusyError, match='session "s" is busy'):
            app.command("s", timeout=0.05).__enter__()
        # Another session is not blocked.
        serve(app, "other", "r2", fail=False)
    finally:
        done.set()
        thread.join()
    serve(app, "s", "r3", fail=False)


def test_appending_to_a_closed_or_discarded_handle_is_refused(
    make_app: MakeApp,
) -> None:
    app = make_app()
    handle = app.create_session(session_id="s")
    add(handle, TS(1), TE(1))
    app.close(handle)
    with pytest.raises(SessionClosedError):
        add(handle, TS(2))
    again = app.get_session("s")
    add(again, TS(2), U("dropped"))
    assert app.discard(again) == 2
    with pytest.raises(SessionClosedError):
        add(again, TE(2))
    app.flush()
    events = make_app().read_events("s")
    assert [e["type"] for e in events] == ["turn/start", "turn/end"]


def test_flushed_idle_handles_are_evicted_least_recently_used_first(
    make_app: MakeApp,
) -> None:
    app = make_app(AGENTLOG_MAX_LIVE="3")
    handles = []
    for index in range(5):
        handle = app.create_session(session_id=f"s{index}")
        add(handle, TS(1), TE(1))
        handles.append(handle)
    # Unflushed handles are never evicted.
    assert len(app.live_sessions()) == 5
    app.flush()
    assert [h.id for h in app.live_sessions()] == ["s2", "s3", "s4"]
    with pytest.raises(SessionClosedError):
        add(handles[0], TS(2))
    reopened = app.get_session("s0")
    add(reopened, TS(2), TE(2))
    app.flush(reopened)
    assert make_app().stored_length("s0") == 4
    assert len(app.live_sessions()) == 3
    assert len(app.unflushed_sessions()) == 0


def test_run_with_retry_reruns_the_whole_block_after_a_conflict(
    make_app: MakeApp,
) -> None:
    app, other = make_app(), make_app()
    serve(app, "s", "first", fail=False)
    runs: list[int] = []

    def request(handle: Any) -> str:
        runs.append(handle.seq)
        if len(runs) == 1:
            serve(other, "s", "competitor", fail=False)  # another process wins
        write_turn(handle, f"mine-{len(runs)}", fail=False)
        return "done"

    assert app.run_with_retry("s", request, wait=0) == "done"
    assert runs == [6, 12]
    assert stored_requests(make_app(), ["s"]) == {
        "first": 1,
        "competitor": 1,
        "mine-2": 1,
    }


def test_a_steering_message_interleaves_between_the_steps_of_a_long_turn(
    make_app: MakeApp,
) -> None:
    # An agent loop writes one command per step; a steering message from another
    # thread is a small command that lands between two steps.
    app = make_app()
    with app.command("s", create=True) as handle:
        add(handle, TS(1), U("task"))
    thread = threading.Thread(target=lambda: _steer(app), name="steering")
    thread.start()
    thread.join()
    with app.command("s") as handle:
        add(handle, TE(1))
    texts = [
        e["data"]["content"][0]["text"]
        for e in make_app().read_events("s")
        if e["type"] == "user/message"
    ]
    assert texts == ["task", "steer"]


def _steer(app: Sessions) -> None:
    with app.command("s") as handle:
        add(handle, U("steer"))


def _reply_lost_once(app: Sessions) -> None:
    """The next insert commits, then reports a lost connection (reply lost)."""
    from eventsourcing.persistence import OperationalError

    original = app.recorder.insert_events
    calls = {"n": 0}

    def insert(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        calls["n"] += 1
        if calls["n"] == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return result

    app.recorder.insert_events = insert  # type: ignore[method-assign]


def test_a_command_whose_commit_reply_is_lost_succeeds_once(
    make_app: MakeApp,
) -> None:
    app = make_app()
    serve(app, "s", "r1", fail=False)
    _reply_lost_once(app)
    serve(app, "s", "r2", fail=False)  # no error: the store has it
    assert stored_requests(make_app(), ["s"]) == {"r1": 1, "r2": 1}


def test_a_flush_whose_commit_reply_is_lost_is_not_written_twice(
    make_app: MakeApp,
) -> None:
    from agentlog.domain.errors import StoreUnavailableError

    app = make_app()
    handle = app.create_session(session_id="s")
    write_turn(handle, "r1", fail=False)
    _reply_lost_once(app)
    with pytest.raises(StoreUnavailableError) as caught:
        app.flush(handle)
    assert caught.value.__cause__ is not None
    assert handle.unflushed == 6
    app.flush(handle)  # finds its own rows: counted as saved, not a conflict
    assert handle.unflushed == 0
    write_turn(handle, "r2", fail=False)
    app.flush(handle)
    assert stored_requests(make_app(), ["s"]) == {"r1": 1, "r2": 1}


def test_a_retried_insert_meeting_its_own_commit_is_not_a_conflict(
    make_app: MakeApp,
) -> None:
    # The PostgreSQL recorder retries an insert after a lost connection; if the
    # first attempt had committed, the retry meets its own rows.
    app = make_app()
    serve(app, "s", "r1", fail=False)
    original = app.recorder.insert_events
    calls = {"n": 0}

    def committed_then_retried(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            original(*args, **kwargs)
            calls["lost"] = 1  # the connection dropped before the reply
        return original(*args, **kwargs)

    app.recorder.insert_events = committed_then_retried  # type: ignore[method-assign]
    app.connection_failures = lambda: calls.get("lost", 0)  # type: ignore[method-assign]
    serve(app, "s", "r2", fail=False)
    assert stored_requests(make_app(), ["s"]) == {"r1": 1, "r2": 1}


def counting_version_reads(app: Sessions) -> list[str]:
    """The session ids whose stored version ``app`` reads from now on."""
    reads: list[str] = []
    original = app.reads.stored_version

    def counting(session_id: str) -> int:
        reads.append(session_id)
        return original(session_id)

    app.reads.stored_version = counting  # type: ignore[method-assign]
    return reads


def test_an_optimistic_command_reads_no_version_and_reruns_on_a_moved_store(
    make_app: MakeApp,
) -> None:
    app, other = make_app(), make_app()
    serve(app, "s", "r1", fail=False)
    reads = counting_version_reads(app)
    starts: list[int] = []

    def request(request_id: str) -> Callable[[Any], None]:
        def block(handle: Any) -> None:
            starts.append(handle.seq)
            write_turn(handle, request_id, fail=False)

        return block

    app.unit_of_work.run_optimistic("s", request("r2"))
    assert reads == [] and starts == [6]
    serve(other, "s", "r3", fail=False)  # another process writes: app's handle is old
    starts.clear()
    app.unit_of_work.run_optimistic("s", request("r4"))
    assert starts == [12, 18]  # on the old state (the flush conflicts), then fresh
    assert stored_requests(make_app(), ["s"]) == {"r1": 1, "r2": 1, "r3": 1, "r4": 1}


def test_an_optimistic_block_failing_on_an_old_state_runs_again_fresh(
    make_app: MakeApp,
) -> None:
    app, other = make_app(), make_app()
    serve(app, "s", "r1", fail=False)
    serve(other, "s", "r2", fail=False)
    starts: list[int] = []

    def block(handle: Any) -> None:
        starts.append(handle.seq)
        if handle.seq == 6:  # the old state: fail as a stale turn number would
            raise InvariantError("stale")
        write_turn(handle, "r3", fail=False)

    app.unit_of_work.run_optimistic("s", block)
    assert starts == [6, 12]
    assert stored_requests(make_app(), ["s"]) == {"r1": 1, "r2": 1, "r3": 1}
    # On a current state the block's error stands, and the block ran once.
    starts.clear()
    with pytest.raises(RequestFailedError):
        app.unit_of_work.run_optimistic(
            "s", lambda handle: (starts.append(handle.seq), serve_fail(handle))
        )
    assert starts == [18]
    assert stored_requests(make_app(), ["s"]) == {"r1": 1, "r2": 1, "r3": 1}


def serve_fail(handle: Any) -> None:
    write_turn(handle, "bad", fail=True)
