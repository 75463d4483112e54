"""The materialised views: exactly-once catch-up, restarts, rebuilds, per-view
tracking, a 10,000-session listing served by the view alone, and a worker process."""

from __future__ import annotations

import dataclasses
import multiprocessing
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from eventsourcing.persistence import Tracking

from agentlog.application import Sessions
from agentlog.application.catch_up import SessionViews, views_of
from agentlog.application.projections import (
    BatchTracking,
    decode_notification,
    projected_event,
)
from agentlog.application.query import SessionQuery
from agentlog.application.session_projections import ListingProjection
from agentlog.application.view_rows import ListingRow
from tests.conftest import postgres_schema_env
from tests.query.support import (
    TURN1,
    CountingRecorder,
    ev,
    header,
    raw_write_many,
    session,
)
from tests.scenarios.harness import TE, TS, Append, U

MakeApp = Callable[..., Sessions]


def snapshot(views: SessionViews) -> tuple[list[Any], ...]:
    return tuple(p.view.select_all() for p in views.projections)


def title(value: str, seq: int = 1) -> Append:
    data = {"title": value, "messageSeqs": [seq], "source": {"kind": "fallback"}}
    return Append("session/title", data)


def populate(app: Sessions, rounds: int = 3) -> None:
    """Several sessions written over several flushes, with titles and forks."""
    query = SessionQuery(app)
    for n in range(rounds):
        handle = session(app, f"s{n}", TS(1), U(f"prompt {n}"), close=False)
        title(f"first {n}").to(handle)  # type: ignore[arg-type]
        TE(1).to(handle)  # type: ignore[arg-type]
        app.flush(handle)
        query.list_sessions()
        TS(2).to(handle)  # type: ignore[arg-type]
        U("more").to(handle)  # type: ignore[arg-type]
        title(f"second {n}", 5).to(handle)  # type: ignore[arg-type]
        TE(2).to(handle)  # type: ignore[arg-type]
        app.close(handle)
        query.list_summaries()
        child = app.fork(f"s{n}")
        app.close(child)


def test_flushed_writes_are_read_at_once(app: Sessions) -> None:
    query = SessionQuery(app)
    handle = session(
        app, "s", TS(1), U("  Fix   the\tbuild "), close=False, flush=False
    )
    title("Fixing").to(handle)  # type: ignore[arg-type]
    page = query.list_summaries()
    assert [(i.id, i.live, i.persisted, i.event_count) for i in page.items] == [
        ("s", True, False, 3)
    ]
    app.flush(handle)
    TE(1).to(handle)  # type: ignore[arg-type]
    item = query.list_summaries().items[0]
    assert (item.live, item.persisted, item.event_count) == (True, True, 4)
    assert (item.title, item.first_prompt) == ("Fixing", "Fix the build")
    app.close(handle)
    item = query.list_summaries().items[0]
    assert (item.live, item.persisted, item.event_count) == (False, True, 4)
    assert item.to_json() == {
        "id": "s",
        "createdAt": 1,
        "updatedAt": item.updated_at,
        "eventCount": 4,
        "title": "Fixing",
        "firstPrompt": "Fix the build",
        "cwd": "/w",
        "live": False,
        "persisted": True,
        "header": {"version": 0, "id": "s", "createdAt": 1, "cwd": "/w"},
    }


def test_catch_up_is_exactly_once_and_redelivery_changes_nothing(app: Sessions) -> None:
    populate(app)
    views = views_of(app)
    assert views.catch_up() > 0
    assert views.catch_up() == 0
    before = snapshot(views)
    notifications = app.recorder.select_notifications(None, 10_000)
    events = [e for n in notifications if (e := decode_notification(app.mapper, n))]
    for projection in views.projections:
        for number in (1, notifications[-1].id):
            tracking = Tracking(app.name, number)
            assert projection.process_batch(events, tracking) is False
        # A runner-style delivery of a domain event object, already processed.
        domain_event = app.mapper.to_domain_event(notifications[3])
        assert projected_event(domain_event) is not None
        projection.process_event(domain_event, Tracking(app.name, notifications[3].id))
    assert snapshot(views) == before
    assert views.catch_up() == 0


class CountingProjection(ListingProjection):
    """Counts the events folded into each row: folding one twice shows (the
    search index's fold is such a fold; the listing's own is idempotent)."""

    def fold(self, row: Any, events: list[Any], session_id: str) -> Any:
        row = row or ListingRow(session_id)
        return dataclasses.replace(row, event_count=row.event_count + len(events))


def test_a_batch_overlapping_another_writers_folds_only_the_rest(
    app: Sessions,
) -> None:
    """Another writer (a worker, another process's catch-up) recorded part of
    a page while this catch-up read it: the part is left out, not folded
    twice, and the rest is folded from where the other writer stopped."""
    populate(app, rounds=2)
    views = views_of(app)
    counting = CountingProjection(views.listing.view)
    counting.view.clear(app.name)  # folded by populate's reads: again
    notifications = app.recorder.select_notifications(None, 10_000)
    decoded = [(n.id, decode_notification(app.mapper, n)) for n in notifications]
    middle = notifications[len(notifications) // 2].id
    last = notifications[-1].id
    early = [e for number, e in decoded if number <= middle and e is not None]
    assert counting.process_batch(early, BatchTracking(app.name, middle, after=0))
    assert views.fold(counting, decoded, 0, last) == last
    folded = Counter(e.session_id for _, e in decoded if e is not None)
    rows = counting.view.select_all()
    assert {row.session_id: row.event_count for row in rows} == folded
    assert counting.view.max_tracking_id(app.name) == last


def test_views_resume_from_their_tracking_position(
    make_app: MakeApp, backend: str
) -> None:
    first = make_app()
    for n in range(3):
        session(first, f"s{n}", *TURN1, created_at=n)
    assert len(SessionQuery(first).list_sessions()) == 3
    # A "restarted" process: a new application over the same store.
    second = make_app()
    session(second, "new", *TURN1, created_at=9)
    views = views_of(second)
    read = views.catch_up()
    if backend == "popo":
        assert read == 4 * 7  # memory views do not survive: everything again
    else:
        assert read == 7  # only the new session: its header and six events
    assert [r.header["id"] for r in SessionQuery(second).list_sessions()] == [
        "new",
        "s2",
        "s1",
        "s0",
    ]


def test_a_rebuilt_view_equals_the_incremental_one(app: Sessions) -> None:
    views = views_of(app)
    views.PAGE_SIZE = 3
    populate(app, rounds=4)
    views.catch_up()
    incremental = snapshot(views)
    assert len(incremental[0]) == 8
    assert sum(row.title is not None for row in incremental[0]) == 8
    assert views.rebuild() > 0
    assert snapshot(views) == incremental
    fresh = SessionViews(app)  # on POPO a new, empty in-memory view
    fresh.rebuild()
    assert snapshot(fresh) == incremental


def test_each_view_tracks_its_own_position(app: Sessions, backend: str) -> None:
    session(app, "s", TS(1), U("hi"), title("T"), TE(1))
    views = views_of(app)
    views.catch_up()
    top = app.recorder.max_notification_id()
    assert all(p.view.max_tracking_id(app.name) == top for p in views.projections)
    listing_before = views.listing.view.select_all()
    views.titles.view.clear(app.name)
    views._positions = {}
    assert views.titles.view.max_tracking_id(app.name) is None
    assert views.listing.view.max_tracking_id(app.name) == top
    assert views.catch_up() == top
    assert views.listing.view.select_all() == listing_before
    assert SessionQuery(app).read_title("s") is not None
    if backend == "sqlite":
        database = app.env["SQLITE_DBNAME"]
        with sqlite3.connect(database) as connection:
            names = {
                r[0]
                for r in connection.execute("SELECT application_name FROM tracking")
            }
        assert {
            "Sessions#listing.v3",
            "Sessions#titles.v2",
            "Sessions#lineage.v2",
        } <= names


@pytest.mark.slow
def test_a_10000_session_listing_reads_only_the_view(app: Sessions) -> None:
    count = 10_000
    logs = []
    for i in range(count):
        events = [ev(0, U(f"prompt {i}"))]
        if i % 10 == 0:
            events.append(ev(1, title(f"title {i}", 0)))
        logs.append((header(f"s{i:05}", i), events))
    raw_write_many(app, logs)
    query = SessionQuery(app)
    views = views_of(app)
    assert views.catch_up() == count * 2 + count // 10
    reads = CountingRecorder(app)
    page_calls: list[int] = []
    view = views.listing.view
    original = view.select_page

    def counted_page(**kwargs: Any) -> Any:
        page_calls.append(kwargs["limit"])
        return original(**kwargs)

    view.select_page = counted_page  # type: ignore[method-assign]
    try:
        page = query.list_summaries(50)
        listed = query.list_sessions()
    finally:
        reads.restore()
        del view.select_page
    assert [item.id for item in page.items] == [
        f"s{i:05}" for i in range(9999, 9949, -1)
    ]
    assert page.items[1].title is None
    assert page.items[9].title == "title 9990"
    assert page.items[0].first_prompt == "prompt 9999"
    assert len(listed) == count
    # No log was read: no select_events and no notifications (views were current).
    assert reads["select_events"] == 0
    assert reads["select_notifications"] == 0
    assert reads["max_notification_id"] == 2
    assert page_calls == [51]
    second = query.list_summaries(50, cursor=page.next_cursor)
    assert second.items[0].id == "s09949"
    assert [i.id for i in second.items] == [
        i.id for i in query.list_summaries(50, offset=50).items
    ]


def test_paging_with_live_sessions_is_exact(app: Sessions) -> None:
    for i in range(7):
        session(app, f"p{i}", *TURN1, created_at=i * 2)
    for i in range(4):
        session(app, f"l{i}", created_at=i * 3 + 1, close=False, flush=False)
    stored_and_live = app.get_session("p3")
    query = SessionQuery(app)
    expected = [r.header["id"] for r in query.list_sessions()]
    assert len(expected) == 11
    seen, cursor = [], None
    while True:
        page = query.list_summaries(3, cursor=cursor)
        seen += [item.id for item in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == expected
    for offset in range(12):
        page = query.list_summaries(2, offset=offset)
        assert [i.id for i in page.items] == expected[offset : offset + 2]
    both = next(i for i in query.list_summaries(20).items if i.id == "p3")
    assert (both.live, both.persisted, both.event_count) == (True, True, 6)
    assert stored_and_live.id == "p3"


def test_summaries_with_an_injected_reader_fold_the_logs(app: Sessions) -> None:
    session(app, "a", *TURN1[:-1], title("A"), TURN1[-1], created_at=1)
    session(app, "b", *TURN1, created_at=2)
    query = SessionQuery(app)
    query.mount(CountingReaderProxy(query.store_reader()))
    page = query.list_summaries(10)
    assert [(i.id, i.title, i.event_count) for i in page.items] == [
        ("b", None, 6),
        ("a", "A", 7),
    ]


class CountingReaderProxy:
    """A plain reader (not the store reader): only ``list`` and ``load``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def list(self) -> Any:
        return self.inner.list()

    def load(self, session_id: str) -> Any:
        return self.inner.load(session_id)


def _worker(env: dict[str, str], stop: Any) -> None:
    from agentlog.infrastructure.views import worker

    worker.run(env, stop)


@pytest.fixture
def pg_env() -> Iterator[dict[str, str]]:
    """A fresh PostgreSQL schema (fails in CI, skips elsewhere, when unreachable)."""
    yield from postgres_schema_env()


@pytest.mark.slow
def test_a_projection_runner_process_keeps_the_views(pg_env: dict[str, str]) -> None:
    """PostgreSQL only: SQLite cannot subscribe, POPO memory is per process."""
    app = Sessions(env=pg_env)
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    process = context.Process(target=_worker, args=(dict(pg_env), stop))
    process.start()
    try:
        populate(app, rounds=2)
        for i in range(5):
            session(
                app, f"x{i}", TS(1), U("x"), title(f"x{i}"), TE(1), created_at=100 + i
            )
        views = views_of(app)
        for projection in views.projections:
            # A runner subscribed with topics tracks the last event it was sent.
            relevant = app.recorder.select_notifications(
                None, 100_000, topics=projection.topics
            )
            projection.view.wait(app.name, relevant[-1].id, timeout=30)
        assert process.is_alive()
        worker_rows = snapshot(views)
        assert len(worker_rows[0]) == 9
        assert SessionQuery(app).read_title("x3") is not None
        views.rebuild()
        assert snapshot(views) == worker_rows
    finally:
        stop.set()
        process.join(30)
        if process.is_alive():
            process.terminate()
        app.close()
    assert process.exitcode == 0
