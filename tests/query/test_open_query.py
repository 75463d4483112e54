"""``open_query``: every read of ``SessionQuery`` on a store opened for reading
only (docs/query.md#query-only-opening).

Its answers are those of ``SessionQuery(Sessions(...))`` on the same store, on
every backend; on SQLite a listing page is read through the backend's shortcut
(no application is opened) whenever the views are current and nothing is
pending, and otherwise through the full open, which catches the views up and
finishes a pending erase (docs/erasure.md). Read-only and encrypted stores
answer through it too.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import pytest

import agentlog
from agentlog import open_query
from agentlog.application import Sessions
from agentlog.application.configuration import ConfiguredApplication
from agentlog.application.query import SessionQuery
from agentlog.application.query_store import StoreQuery
from agentlog.domain.errors import (
    SessionQueryError,
    StoreClosedError,
    StoreNotFoundError,
    StoreUnavailableError,
    StoreURLError,
)
from tests.crypto.conftest import new_master_key
from tests.query.support import TURN1, session
from tests.query.test_stored_listing import fill, titled
from tests.scenarios.harness import U
from tests.shared_memory import forget, sharing

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture
def writer(app_env: dict[str, str]) -> Iterator[tuple[Sessions, dict[str, str]]]:
    """A filled store and the environment that opens it again (POPO: shared)."""
    app = Sessions(env=app_env, invariants=False)
    fill(app)
    session(app, "logged", *TURN1, titled("Logged"), created_at=3)
    name = uuid.uuid4().hex
    env = app_env
    if app_env["PERSISTENCE_MODULE"] == "eventsourcing.popo":
        env = {**app_env, **sharing(app, name)}
    yield app, env
    forget(name)
    app.close()


def pages(query: SessionQuery, limit: int) -> list[object]:
    """Every page of the listing, following the cursors."""
    out: list[object] = []
    cursor: str | None = None
    while True:
        page = query.list_summaries(limit, cursor=cursor)
        out.append(page.to_json())
        if page.next_cursor is None:
            return out
        cursor = page.next_cursor


def test_its_reads_are_the_querys(writer: tuple[Sessions, dict[str, str]]) -> None:
    app, env = writer
    reference = SessionQuery(app)
    with open_query(**env) as query:
        assert isinstance(query, SessionQuery)
        for limit in (1, 2, 50):
            assert pages(query, limit) == pages(reference, limit)
        assert query.list_summaries(2, offset=1) == reference.list_summaries(
            2, offset=1
        )
        assert query.read_title("logged") == reference.read_title("logged")
        assert query.list_events("logged") == reference.list_events("logged")
        assert query.read_messages("logged") == reference.read_messages("logged")
        assert query.trace_session("child") == reference.trace_session("child")
        assert [r.to_json() for r in query.list_sessions()] == [
            r.to_json() for r in reference.list_sessions()
        ]
        scoped = query.for_caller("logged").list_summaries(50).to_json()
        assert scoped == reference.for_caller("logged").list_summaries(50).to_json()
        with pytest.raises(SessionQueryError) as missing:
            query.read_event("nobody", 0)
        assert missing.value.code == "SESSION_QUERY_SESSION_NOT_FOUND"


@pytest.mark.parametrize(
    ("limit", "cursor"), [(0, None), (-1, None), (1, "not a cursor"), (1, "WzFd")]
)
def test_a_bad_page_is_the_querys_error(
    writer: tuple[Sessions, dict[str, str]], limit: int, cursor: str | None
) -> None:
    app, env = writer
    with pytest.raises(SessionQueryError) as expected:
        SessionQuery(app).list_summaries(limit, cursor=cursor)
    with open_query(**env) as query, pytest.raises(SessionQueryError) as got:
        query.list_summaries(limit, cursor=cursor)
    assert (got.value.code, str(got.value)) == (
        expected.value.code,
        str(expected.value),
    )


def test_a_closed_query_reads_nothing(writer: tuple[Sessions, dict[str, str]]) -> None:
    _, env = writer
    query = open_query(**env)
    assert query.list_summaries(1).items
    query.close()
    with pytest.raises(StoreClosedError):
        query.list_summaries(1)
    with pytest.raises(StoreClosedError):
        query.read_title("logged")


def test_the_store_environment_is_the_applications(
    writer: tuple[Sessions, dict[str, str]],
) -> None:
    _, env = writer
    other = Sessions(env=env)
    assert ConfiguredApplication.store_environment(env) == other.env
    other.close()


def sqlite_url(tmp_path: Path, query: str = "") -> str:
    return f"sqlite:///{tmp_path / 'agentlog.db'}{query}"


def filled(url: str, **env: str) -> Sessions:
    app = Sessions(env=env or None, store=url, invariants=False)
    fill(app)
    SessionQuery(app).list_summaries(1)  # the views caught up
    return app


def test_sqlite_lists_without_opening_the_application(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    filled(url).close()
    with open_query(url, create=False) as query:
        assert isinstance(query, StoreQuery)
        first = query.list_summaries(2)
        rest = query.list_summaries(50, cursor=first.next_cursor)
        assert query._app is None  # the shortcut answered both
        reference = SessionQuery(Sessions(store=url))
        assert first == reference.list_summaries(2)
        assert rest == reference.list_summaries(50, cursor=first.next_cursor)
        reference.app.close()


def test_sqlite_the_shortcut_reads_the_applications_events_table(
    tmp_path: Path,
) -> None:
    """The shortcut names the library's default events table; a library that
    renames it fails here, not in a user's listing."""
    from agentlog.infrastructure.backends.sqlite.listing_shortcut import EVENTS_TABLE

    app = filled(sqlite_url(tmp_path))
    try:
        assert getattr(app.recorder, "events_table_name", None) == EVENTS_TABLE
    finally:
        app.close()


def test_sqlite_views_behind_are_caught_up_by_the_full_open(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    app = filled(url)
    with open_query(url) as query:
        assert len(query.list_summaries(50).items) == 6
        session(app, "newer", U("and again"), created_at=2**41)  # views behind
        page = query.list_summaries(50)
        assert page.items[0].id == "newer"
        assert page.items[0].first_prompt == "and again"
        assert query._app is not None  # the full open caught them up
    app.close()


def test_sqlite_a_pending_erase_is_finished_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = sqlite_url(tmp_path)
    app = filled(url)

    def locked() -> None:
        raise StoreUnavailableError("the store is unavailable: database is locked")

    with monkeypatch.context() as patch:
        patch.setattr(app.eraser, "scrub", locked)
        [erasure] = app.erase("plain", reason="request")
    assert erasure.pending == ("scrub",)
    app.close()
    with open_query(url) as query:
        ids = [item.id for item in query.list_summaries(50).items]
        assert query._app is not None  # the shortcut refused: the full open
        assert query.app.recorder.erase_pending(10) == []  # type: ignore[attr-defined]
    assert "plain" not in ids


def test_sqlite_read_only_stores_list(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    filled(url).close()
    reference = SessionQuery(Sessions(store=url + "?mode=ro"))
    with open_query(url + "?mode=ro") as query:
        assert pages(query, 2) == pages(reference, 2)
        assert query._app is None
        assert query.read_title("titled") == reference.read_title("titled")
    reference.app.close()


def test_sqlite_encrypted_views_are_opened(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    keys = {
        "AGENTLOG_ENCRYPTION": "per-session",
        "AGENTLOG_MASTER_KEY": new_master_key(),
    }
    app = filled(url, **keys)
    with open_query(url, **keys) as query:
        assert pages(query, 2) == pages(SessionQuery(app), 2)
        titles = [item.title for item in query.list_summaries(50).items]
        assert "A title" in titles
    app.close()


def test_sqlite_missing_stores_and_bad_urls(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError):
        open_query(sqlite_url(tmp_path), create=False)
    with pytest.raises(StoreURLError):
        open_query("sqlite://nowhere")
    with open_query(sqlite_url(tmp_path)) as query:  # created, as open_sessions does
        assert query.list_summaries(10).items == []
    assert (tmp_path / "agentlog.db").is_file()


def test_it_is_public() -> None:
    assert agentlog.open_query is open_query
    assert "open_query" in agentlog.__all__
