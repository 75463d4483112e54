"""The ``owner`` header field (docs/events.md#header): set at creation, checked
like every stored header string, inherited by forks, kept by export and import,
listed by the listing view and filtered by ``SessionFilter.owner``."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from agentlog import AsyncSessions, SessionFilter, SessionQuery, Sessions
from agentlog.domain.errors import CorruptSessionLogError, SessionError
from agentlog.domain.json import dumps
from agentlog.infrastructure.formats.jsonl import export_session, import_log
from agentlog.infrastructure.store import open_sessions
from tests.cli.conftest import Store
from tests.query.support import TURN1, session
from tests.scenarios.harness import add

MakeApp = Callable[..., Sessions]
RULE = "session owner must be a non-empty string without NUL or lone surrogates"


def test_create_session_stores_the_owner_in_the_header(app: Sessions) -> None:
    handle = app.create_session(cwd="/w", session_id="s", owner="tenant-1")
    add(handle, *TURN1)
    app.close(handle)
    assert app.header("s")["owner"] == "tenant-1"
    assert list(app.header("s")) == [
        "version",
        "id",
        "createdAt",
        "cwd",
        "owner",
    ]
    assert "owner" not in session(app, "plain").header


@pytest.mark.parametrize("bad", ["", "a\x00b", "x\udcff", 7, b"t", ["t"]])
def test_a_bad_owner_is_refused_and_nothing_is_created(
    app: Sessions, bad: object
) -> None:
    with pytest.raises(SessionError) as caught:
        app.create_session(session_id="s", owner=bad)  # type: ignore[arg-type]
    assert str(caught.value) == RULE
    assert app.live_session("s") is None
    assert not app.is_stored("s")


def test_command_create_sets_the_owner_and_an_existing_session_keeps_its_own(
    app: Sessions,
) -> None:
    with app.command("c", create=True, cwd="/w", owner="o1") as handle:
        add(handle, *TURN1)
    assert app.header("c")["owner"] == "o1"
    app.close(handle)
    with app.command("c", create=True, owner="o2") as handle:
        assert handle.header["owner"] == "o1"


def test_async_create_and_command_set_the_owner(app: Sessions) -> None:
    async def run() -> None:
        sessions = AsyncSessions(app)
        handle = await sessions.create_session(session_id="a", owner="o1")
        add(handle, *TURN1)
        await sessions.close(handle)
        async with sessions.command("b", create=True, owner="o2") as other:
            add(other, *TURN1)
        sessions.executor.shutdown(wait=True)

    asyncio.run(run())
    assert app.header("a")["owner"] == "o1"
    assert app.header("b")["owner"] == "o2"


def test_forks_inherit_the_owner_live_and_stored(app: Sessions) -> None:
    parent = app.create_session(cwd="/w", session_id="p", owner="o1")
    add(parent, *TURN1)
    live_child = app.fork(parent, boundary=5)
    assert live_child.header["owner"] == "o1"
    app.close(live_child)
    app.close(parent)
    stored_child = app.fork("p", boundary=5)  # the copy path on SQL stores
    assert stored_child.header["owner"] == "o1"
    assert stored_child.header["parentSession"] == "p"
    app.close(stored_child)
    assert app.header(stored_child.id)["owner"] == "o1"


def test_export_and_import_keep_the_owner_exactly(make_app: MakeApp) -> None:
    app = make_app()
    handle = app.create_session(
        cwd="/w", session_id="s", owner="tenant-\u00e9", created_at=5
    )
    add(handle, *TURN1)
    app.close(handle)
    data = export_session(app, "s")
    assert b'"owner":"tenant-\xc3\xa9"' in data.splitlines()[0]
    other = Sessions(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    try:
        result = import_log(other, data)
        assert result.report == []
        assert other.header("s") == {**app.header("s"), "delegationDepth": 0}
        assert export_session(other, "s") == data
    finally:
        other.close()


@pytest.mark.parametrize("bad", ["", 5, None, "a\x00b"])
def test_an_imported_header_with_a_bad_owner_is_corrupt(
    app: Sessions, bad: object
) -> None:
    line = {"type": "session", "version": 0, "id": "s", "createdAt": 1, "owner": bad}
    data = dumps(line).strip() + b"\n"
    with pytest.raises(CorruptSessionLogError):
        import_log(app, data)
    assert not app.is_stored("s")


def test_the_listing_and_the_filters_see_the_owner(app: Sessions) -> None:
    for name, owner in (("a", "o1"), ("b", "o2"), ("c", None)):
        handle = app.create_session(cwd="/w", session_id=name, owner=owner)
        add(handle, *TURN1)
        app.close(handle)
    live = app.create_session(cwd="/w", session_id="d", owner="o1")
    query = SessionQuery(app)
    owners = {item.id: item.owner for item in query.list_summaries().items}
    assert owners == {"a": "o1", "b": "o2", "c": None, "d": "o1"}
    page = query.list_summaries().to_json()
    assert all(("owner" in item) == (item["id"] != "c") for item in page["items"])

    def ids(wanted: SessionFilter) -> set[str]:
        return {str(r.header["id"]) for r in query.filter_sessions(wanted)}

    assert ids(SessionFilter(owner=("o1",))) == {"a", "d"}
    assert ids(SessionFilter(owner=(None,))) == {"c"}
    assert ids(SessionFilter(owner=("o2", None))) == {"b", "c"}
    assert ids(SessionFilter(owner=())) == set()
    hits = query.search_sessions("hello", session_filter=SessionFilter(owner=("o2",)))
    assert [item.session_id for item in hits.items] == ["b"]
    app.close(live)


def test_search_owner_option(tmp_path: Path) -> None:
    store = Store("sqlite", f"sqlite:///{tmp_path / 'agentlog.db'}", tmp_path)
    app = open_sessions(store.url, create=True)
    try:
        for name, owner in (("one", "o1"), ("two", "o2"), ("three", None)):
            handle = app.create_session(session_id=name, cwd="/w", owner=owner)
            add(handle, *TURN1)
            app.close(handle)
    finally:
        app.close()
    found = store("search", "hello", "--owner", "o1", "--json").json()
    assert [item["sessionId"] for item in found["items"]] == ["one"]
    assert store("search", "hello", "--owner", "o3", "--json").json()["items"] == []
    shown = store("show", "two").ok().stdout
    assert "owner" in shown and "o2" in shown


def test_a_store_from_before_the_owner_column_is_listed_again(tmp_path: Path) -> None:
    """Listing v3 added ``owner``: a store whose listing was built by an earlier
    layout (no v3 table, no v3 position) gets the new table on its first read,
    and the log is folded into it once (docs/strings.md)."""
    path = tmp_path / "agentlog.db"
    store = Store("sqlite", f"sqlite:///{path}", tmp_path)
    app = open_sessions(store.url, create=True)
    try:
        for name, owner in (("one", "o1"), ("two", None)):
            handle = app.create_session(session_id=name, cwd="/w", owner=owner)
            add(handle, *TURN1)
            app.close(handle)
        assert len(SessionQuery(app).list_summaries().items) == 2
    finally:
        app.close()
    with sqlite3.connect(path) as connection:
        connection.execute("DROP TABLE agentlog_listing_v3")
        connection.execute(
            "DELETE FROM tracking WHERE application_name = 'Sessions#listing.v3'"
        )
    listed = store("ls", "--json").json()
    rows = listed["items"] if isinstance(listed, dict) else listed
    assert {row["id"]: row.get("owner") for row in rows} == {"one": "o1", "two": None}
    found = store("search", "hello", "--owner", "o1", "--json").json()
    assert [item["sessionId"] for item in found["items"]] == ["one"]
