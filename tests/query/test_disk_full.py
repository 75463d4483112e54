"""A full disk does not stop listing and search (issue 21): the views cannot
catch up, so reads answer from what is already indexed; the events stay
readable. Any other catch-up failure still fails the read."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import pytest

from agentlog.application import Sessions
from agentlog.application.catch_up import SessionViews
from agentlog.application.query import SessionQuery
from agentlog.application.search_index import SearchIndex
from agentlog.domain.errors import SessionQueryError, StoreUnavailableError
from tests.builders import TS, U
from tests.query.support import session


def disk_full() -> StoreUnavailableError:
    """SQLite's own SQLITE_FULL, wrapped as the store wraps it."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (x BLOB)")
    db.execute("PRAGMA max_page_count = 2")
    with pytest.raises(sqlite3.OperationalError) as caught:
        db.execute("INSERT INTO t VALUES (zeroblob(100000))")
    assert caught.value.sqlite_errorcode == sqlite3.SQLITE_FULL
    full = StoreUnavailableError("the store is unavailable: disk is full")
    full.__cause__ = caught.value
    return full


def refusing(error: Exception) -> Callable[..., int]:
    def catch_up(self: object, top: int | None = None) -> int:
        raise error

    return catch_up


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_listing_and_search_answer_from_the_index_on_a_full_disk(
    make_app: Callable[..., Sessions], monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app()
    session(app, "indexed", TS(1), U("needle indexed"))
    query = SessionQuery(app)
    assert [r.header["id"] for r in query.list_sessions()] == ["indexed"]
    assert len(query.search_sessions("needle").items) == 1
    session(app, "later", TS(1), U("needle later"))  # stored, never indexed
    monkeypatch.setattr(SessionViews, "catch_up", refusing(disk_full()))
    monkeypatch.setattr(SearchIndex, "catch_up", refusing(disk_full()))
    assert [r.header["id"] for r in query.list_sessions()] == ["indexed"]
    hits = query.search_sessions("needle").items
    assert [hit.session_id for hit in hits] == ["indexed"]
    assert len(app.read_events("later")) == 2  # the events stay readable
    monkeypatch.setattr(
        SessionViews, "catch_up", refusing(StoreUnavailableError("locked"))
    )
    with pytest.raises(SessionQueryError):
        query.list_sessions()
