"""A closed ``Sessions`` fails typed (issue 21): ``StoreClosedError`` (a
``StoreUnavailableError``) for reads, writes, search and erase, instead of the
library's ``ConnectionPoolClosedError`` or a PostgreSQL pool's error taken for a
lost connection, on every backend, the in-memory one included; the query
service's listing reports it as its persistence failure, in the same words."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from agentlog.application import Sessions
from agentlog.application.query import SessionQuery
from agentlog.domain.errors import SessionQueryError, StoreClosedError


@pytest.mark.parametrize("backend", ["popo", "sqlite", "postgres"], indirect=True)
def test_every_call_on_a_closed_store_is_typed(
    make_app: Callable[..., Sessions],
) -> None:
    app = make_app()
    handle = app.create_session(cwd="/w")
    app.flush(handle)
    query = SessionQuery(app)
    app.close()
    calls: list[Callable[[], object]] = [
        lambda: app.read_events(handle.id),
        lambda: app.stored_header(handle.id),
        lambda: app.is_erased(handle.id),
        lambda: app.flush(app.create_session(cwd="/x")),
        lambda: app.erase(handle.id, reason="x"),
    ]
    for call in calls:
        with pytest.raises(StoreClosedError, match="the store is closed"):
            call()
    # A search index first opened now fails opening (SQL backends); a scan (in
    # memory) fails listing what it may scan, the query service's failure.
    with pytest.raises(
        (StoreClosedError, SessionQueryError), match=re.escape(StoreClosedError.MESSAGE)
    ):
        query.search_sessions("x")
    with pytest.raises(SessionQueryError) as caught:
        query.list_sessions()
    assert caught.value.code == SessionQueryError.PERSISTENCE_FAILED
    assert str(caught.value).endswith(StoreClosedError.MESSAGE)


@pytest.mark.parametrize("backend", ["popo", "sqlite", "postgres"], indirect=True)
def test_a_query_used_before_close_reports_the_closed_store(
    make_app: Callable[..., Sessions],
) -> None:
    """Its views and search index are open already: every query names the
    closed store as its persistence failure."""
    app = make_app()
    handle = app.create_session(cwd="/w")
    app.flush(handle)
    query = SessionQuery(app)
    query.list_sessions()
    query.search_sessions("x")
    app.close()
    for call in (
        query.list_sessions,
        lambda: query.search_sessions("x"),
        lambda: query.search_events(handle.id, "x"),
    ):
        with pytest.raises(
            SessionQueryError, match=re.escape(StoreClosedError.MESSAGE)
        ) as caught:
            call()
        assert caught.value.code == SessionQueryError.PERSISTENCE_FAILED


@pytest.mark.parametrize("backend", ["popo"], indirect=True)
def test_closing_one_application_on_a_shared_memory_store_leaves_the_others(
    make_app: Callable[..., Sessions],
) -> None:
    """``make_app`` shares one in-memory store between its applications (as a
    database is shared): each holds its own handle, closed on its own."""
    first = make_app()
    handle = first.create_session(cwd="/w")
    first.flush(handle)
    stored = first.read_events(handle.id)
    second = make_app()
    first.close()
    with pytest.raises(StoreClosedError):
        first.read_events(handle.id)
    assert second.read_events(handle.id) == stored
    later = make_app()
    later.flush(later.create_session(cwd="/x"))
    assert len(SessionQuery(second).list_sessions()) == 2


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_closed_postgres_store_is_refused_without_the_librarys_retries(
    make_app: Callable[..., Sessions], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library retries a lost connection (10 × 0.2 s); a closed pool is not one."""
    app = make_app()
    handle = app.create_session(cwd="/w")
    app.flush(handle)
    app.close()

    def no_wait(seconds: float) -> None:
        raise AssertionError(f"retried: slept {seconds} s")

    monkeypatch.setattr("eventsourcing.utils.sleep", no_wait)
    for call in (
        lambda: app.read_events(handle.id),
        lambda: app.flush(app.create_session(cwd="/x")),
    ):
        with pytest.raises(StoreClosedError, match="the store is closed"):
            call()
