"""A closed ``Sessions`` fails typed (issue 21): ``StoreClosedError`` (a
``StoreUnavailableError``) for reads, writes, search and erase, instead of the
library's ``ConnectionPoolClosedError`` or a PostgreSQL pool's error taken for a
lost connection; the query service's listing reports it as its persistence
failure."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agentlog.application import Sessions
from agentlog.application.query import SessionQuery
from agentlog.domain.errors import SessionQueryError, StoreClosedError


@pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)
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
        lambda: app.flush(app.create_session(cwd="/x")),
        lambda: query.search_sessions("x"),
        lambda: app.erase(handle.id, reason="x"),
    ]
    for call in calls:
        with pytest.raises(StoreClosedError, match="the store is closed"):
            call()
    with pytest.raises(SessionQueryError) as caught:
        query.list_sessions()
    assert caught.value.code == SessionQueryError.PERSISTENCE_FAILED


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
