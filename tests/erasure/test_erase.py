"""``Sessions.erase``: afterwards the session is a missing one, to every reader and
writer, on every backend (docs/erasure.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from agentlog import (
    SessionConflictError,
    SessionErasedError,
    SessionError,
    SessionNotFoundError,
    SessionQuery,
)
from agentlog.application.catch_up import views_of
from agentlog.application.search_index import search_index_of
from agentlog.domain.errors import SessionForkError, SessionQueryError
from tests.erasure.support import (
    REASON,
    append_turn,
    index_everything,
    markers,
    write_marked,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentlog import Sessions

    MakeApp = Callable[..., Sessions]

ERASED = "erased-session-1"
MISSING = "missing-session1"  # same length: messages compare after the id


def outcome(read: Callable[[str], Any], session_id: str) -> tuple[str, str, Any]:
    """An error's class, message (id masked) and code; the read must raise."""
    try:
        read(session_id)
    except Exception as error:
        return (
            type(error).__name__,
            str(error).replace(session_id, "<id>"),
            getattr(error, "code", None),
        )
    pytest.fail(f"reading {session_id!r} did not raise")


def reads(app: Sessions) -> dict[str, Callable[[str], Any]]:
    """Every read of one session id, through the application and the query."""
    query = SessionQuery(app)
    return {
        "get_session": app.get_session,
        "read_events": app.read_events,
        "messages": app.messages,
        "header": app.header,
        "stored_length": app.stored_length,
        "load_aggregate": app.load_aggregate,
        "repair": app.repair,
        "fork": lambda i: app.fork(i),
        "list_events": query.list_events,
        "read_surface": query.read_surface,
        "stream_surface": lambda i: list(query.stream_surface(i)),
        "read_title": query.read_title,
        "read_event": lambda i: query.read_event(i, 0),
        "trace_event": lambda i: query.trace_event(i, 0),
        "trace_session": query.trace_session,
        "search_events": lambda i: query.search_events("remember", session_id=i),
    }


def test_every_read_says_missing_exactly_as_for_an_id_never_stored(
    make_app: MakeApp,
) -> None:
    app = make_app()
    marks = markers()
    write_marked(app, ERASED, marks)
    write_marked(app, "kept", markers())
    index_everything(app, marks)

    erased = app.erase(ERASED, reason=REASON)

    assert [(e.session_id, e.reason) for e in erased] == [(ERASED, REASON)]
    for name, read in reads(app).items():
        assert outcome(read, ERASED) == outcome(read, MISSING), name
    query = SessionQuery(app)
    assert [r.header["id"] for r in query.list_sessions()] == ["kept"]
    assert [s.id for s in query.list_summaries().items] == ["kept"]
    for mark in marks:
        assert query.search_sessions(mark).items == []
    assert not app.is_stored(ERASED)
    assert app.is_erased(ERASED)
    assert app.live_session(ERASED) is None


def test_a_second_erase_is_not_found_and_the_audit_keeps_one_record(
    make_app: MakeApp,
) -> None:
    app = make_app()
    write_marked(app, ERASED, markers())
    app.erase(ERASED, reason="first")
    with pytest.raises(SessionNotFoundError) as caught:
        app.erase(ERASED, reason="second")
    assert str(caught.value) == f'session "{ERASED}" not found'
    with pytest.raises(SessionNotFoundError):
        app.erase(MISSING, reason="never stored")
    (record,) = app.erasures()
    assert (record.session_id, record.reason) == (ERASED, "first")
    assert record.to_json().keys() == {"id", "erasedAt", "reason"}


@pytest.mark.parametrize("reason", ["", None, 7, "x" * 1001])
def test_a_reason_is_required(make_app: MakeApp, reason: Any) -> None:
    app = make_app()
    write_marked(app, ERASED, markers())
    with pytest.raises(SessionError, match="erase reason must be"):
        app.erase(ERASED, reason=reason)
    assert app.is_stored(ERASED)


def test_an_erased_id_is_never_written_again(make_app: MakeApp) -> None:
    app = make_app()
    write_marked(app, ERASED, markers())
    write_marked(app, "parent", markers())
    app.erase(ERASED, reason=REASON)
    message = f'session "{ERASED}" was erased; an erased id cannot be written again'
    with pytest.raises(SessionErasedError) as created:
        app.create_session(session_id=ERASED)
    assert str(created.value) == message
    with pytest.raises(SessionErasedError):
        app.fork("parent", child_session_id=ERASED)
    with pytest.raises(SessionErasedError), app.command(ERASED, create=True):
        pass
    assert app.is_erased(ERASED)
    assert len(app.erasures()) == 1


def test_a_stale_writer_elsewhere_gets_a_typed_error_not_a_resurrection(
    make_app: MakeApp,
) -> None:
    first, second = make_app(), make_app()
    write_marked(first, ERASED, markers())
    stale = second.get_session(ERASED)  # another process holds the session
    first.erase(ERASED, reason=REASON)

    append_turn(stale, "still here?")
    with pytest.raises(SessionErasedError):
        second.flush(stale)

    assert stale.stale
    assert not first.is_stored(ERASED)
    assert first.is_erased(ERASED)
    with pytest.raises(SessionNotFoundError):
        second.read_events(ERASED)


def test_a_writer_behind_the_last_version_cannot_fill_the_deleted_rows(
    make_app: MakeApp,
) -> None:
    """Its flush targets a version below the tombstone, where the rows were."""
    first, second = make_app(), make_app()
    write_marked(first, ERASED, markers())
    behind = second.get_session(ERASED)
    with first.command(ERASED) as handle:  # the stream grows past ``behind``
        append_turn(handle)
    first.erase(ERASED, reason=REASON)

    append_turn(behind, "stale")
    with pytest.raises(SessionErasedError):
        second.flush(behind)
    assert not first.is_stored(ERASED)
    assert first.stored_log.recorder.select_events(ERASED)[-1].topic == (
        "session-erased"
    )
    assert len(first.stored_log.recorder.select_events(ERASED)) == 1


def test_erase_drops_this_process_handle_and_its_unflushed_events(
    make_app: MakeApp,
) -> None:
    app = make_app()
    handle = write_marked(app, ERASED, markers())
    append_turn(handle)  # unflushed
    app.erase(ERASED, reason=REASON)
    assert handle.closed
    assert app.live_session(ERASED) is None
    assert app.unflushed_sessions() == []


def test_an_append_between_read_and_erase_is_erased_with_it(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The erase's version check fails once; it reads again and erases all."""
    app, writer = make_app(), make_app()
    write_marked(app, ERASED, markers())
    eraser = app.eraser
    read_last = eraser._last_versions
    calls: list[dict[str, int]] = []

    def racing(ids: list[str]) -> dict[str, int]:
        found = read_last(ids)
        if not calls:  # another writer appends right after the read
            with writer.command(ERASED) as handle:
                append_turn(handle, "late")
        calls.append(found)
        return found

    monkeypatch.setattr(eraser, "_last_versions", racing)
    app.erase(ERASED, reason=REASON)
    assert calls[1][ERASED] == calls[0][ERASED] + 3
    records = app.stored_log.recorder.select_events(ERASED)
    assert [(r.originator_version, r.topic) for r in records] == [
        (calls[1][ERASED] + 1, "session-erased")
    ]


def test_appends_that_keep_winning_end_in_a_conflict(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app()
    write_marked(app, ERASED, markers())
    eraser = app.eraser
    read_last = eraser._last_versions
    monkeypatch.setattr(
        eraser,
        "_last_versions",
        lambda ids: {k: v - 1 for k, v in read_last(ids).items()},
    )
    with pytest.raises(SessionConflictError):
        app.erase(ERASED, reason=REASON)
    assert app.is_stored(ERASED)
    assert app.erasures() == []


def test_descendants_go_in_the_same_erase(make_app: MakeApp) -> None:
    app = make_app()
    write_marked(app, "root", markers())
    app.close(app.fork("root", child_session_id="child"))
    app.close(app.fork("child", child_session_id="grandchild"))
    write_marked(app, "other", markers())

    erased = app.erase("root", reason=REASON, descendants=True)

    assert sorted(e.session_id for e in erased) == ["child", "grandchild", "root"]
    assert len({e.erased_at for e in erased}) == 1
    query = SessionQuery(app)
    assert [s.id for s in query.list_summaries().items] == ["other"]
    for gone in ("root", "child", "grandchild"):
        with pytest.raises(SessionQueryError) as caught:
            query.list_events(gone)
        assert caught.value.code == SessionQueryError.SESSION_NOT_FOUND


def test_without_descendants_a_child_stays_and_its_trace_shows_the_parent_missing(
    make_app: MakeApp,
) -> None:
    app = make_app()
    marks = markers()
    write_marked(app, "root", marks)
    app.close(app.fork("root", child_session_id="child"))

    app.erase("root", reason=REASON)

    query = SessionQuery(app)
    trace = query.trace_session("child")
    dumped = trace.model_dump_json()
    assert trace.complete is False
    assert "child" in dumped
    # The child's own copy of the seeded prefix is the child's data; the
    # parent's title never was, and nothing of the parent's own rows is shown.
    assert marks[2] not in dumped
    assert [s.id for s in query.list_summaries().items] == ["child"]
    with pytest.raises(SessionForkError):
        app.fork("root")


def test_a_view_elsewhere_purges_when_it_reaches_the_tombstone(
    make_app: MakeApp,
) -> None:
    """A second application's views (their own rows on POPO, the shared tables
    on SQL stores) drop the session from the notification, not from the erase."""
    first, second = make_app(), make_app()
    marks = markers()
    write_marked(first, ERASED, marks)
    write_marked(first, "kept", markers())
    index_everything(second, marks)

    first.erase(ERASED, reason=REASON)

    query = SessionQuery(second)
    assert [s.id for s in query.list_summaries().items] == ["kept"]
    assert query.search_sessions(marks[0]).items == []
    views = views_of(second)
    for projection in views.projections:
        assert ERASED not in projection.view.select_rows([ERASED])
    index = search_index_of(second)
    if index is not None:
        assert all(d.session_id != ERASED for d in index.search.view.documents())


def test_an_erase_inside_a_running_catch_up_leaves_no_row_after_the_next_one(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The catch-up read the session's events before the erase and writes its
    rows after it; the tombstone, after them in the log, purges them again."""
    app, eraser = make_app(), make_app()
    marks = markers()
    write_marked(app, "kept", markers())
    # Closed: a handle live in a process is that process's own memory, which
    # an erase elsewhere cannot reach (docs/erasure.md#what-an-erase-removes).
    app.close(write_marked(app, ERASED, marks))
    views = views_of(app)
    recorder = app.recorder
    select = recorder.select_notifications
    erased: list[bool] = []

    def interleaved(*args: Any, **kwargs: Any) -> Any:
        page = select(*args, **kwargs)
        if not erased:
            erased.append(True)
            eraser.erase(ERASED, reason=REASON)
        return page

    monkeypatch.setattr(recorder, "select_notifications", interleaved)
    views.catch_up()
    monkeypatch.undo()
    assert erased

    query = SessionQuery(app)  # every read catches up first
    assert [s.id for s in query.list_summaries().items] == ["kept"]
    for projection in views.projections:
        assert projection.view.select_rows([ERASED]) == {}
    with pytest.raises(SessionQueryError):
        query.read_title(ERASED)


@pytest.mark.parametrize("session_id", ["a\x00b", "a\ud800b", "\udfff"])
def test_an_id_no_store_can_hold_is_not_found(
    make_app: MakeApp, session_id: str
) -> None:
    app = make_app()
    with pytest.raises(SessionNotFoundError):
        app.erase(session_id, reason=REASON)


def test_async_sessions_erase(make_app: MakeApp) -> None:
    import asyncio

    from agentlog import AsyncSessions

    app = make_app()
    write_marked(app, ERASED, markers())

    async def run() -> None:
        async_app = AsyncSessions(app)
        try:
            (record,) = await async_app.erase(ERASED, reason=REASON)
            assert record.session_id == ERASED
            assert [e.session_id for e in await async_app.erasures()] == [ERASED]
            report = await async_app.erase_older_than(0, reason="ttl", dry_run=True)
            assert report.candidates == []
        finally:
            async_app.executor.shutdown()

    asyncio.run(run())
    assert not app.is_stored(ERASED)


def test_a_snapshot_stored_after_the_erase_does_not_outlive_it(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer's flush commits, an erase elsewhere commits, then the writer
    stores its snapshot: it sees the tombstone and deletes the snapshot. (On SQLite
    a flush's snapshot commits with its events; elsewhere, and after an import, it
    comes after: that path is forced here.)"""
    writer, eraser = make_app(), make_app()
    write_marked(writer, ERASED, markers())
    assert writer.snapshots is not None
    writer.snapshot_interval = 3
    monkeypatch.setattr(writer.saver, "snapshots_with_events", lambda: False)
    replace = writer.recorder.replace_snapshot  # type: ignore[attr-defined]

    def erase_first(*args: Any) -> Any:
        eraser.erase(ERASED, reason=REASON)
        return replace(*args)

    monkeypatch.setattr(writer.recorder, "replace_snapshot", erase_first)
    with writer.command(ERASED) as handle:
        append_turn(handle)
    monkeypatch.undo()

    snapshots = writer.snapshots.recorder.select_events(ERASED)
    assert snapshots == []
    assert not writer.is_stored(ERASED)
