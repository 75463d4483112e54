"""The plain listing (``stored_page``, what ``agentlog ls`` reads) is the query's.

``agentlog ls`` lists through :func:`~agentlog.application.summaries.stored_page`
on the store opened by :func:`~agentlog.infrastructure.store.open_views`, without
the query service's pydantic models (docs/performance.md). Its pages must be
``SessionQuery.list_summaries``' pages, key for key, with the same cursors and
errors; and opening the views must finish a pending erase as every open does
(docs/erasure.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from agentlog.application import Sessions
from agentlog.application.configuration import ConfiguredApplication
from agentlog.application.query import SessionQuery
from agentlog.application.summaries import stored_page
from agentlog.domain.errors import SessionQueryError, StoreUnavailableError
from agentlog.infrastructure.store import open_views
from tests.query.support import session
from tests.scenarios.harness import Append, U

if TYPE_CHECKING:
    from pathlib import Path

MakeApp = Callable[..., Sessions]


def titled(value: str) -> Append:
    data = {"title": value, "messageSeqs": [0], "source": {"kind": "fallback"}}
    return Append("session/title", data)


def fill(app: Sessions) -> None:
    """Sessions with and without a title, prompt, parent, cwd and owner."""
    session(app, "plain", created_at=5, cwd=None)
    session(app, "prompted", U("Build the thing"), created_at=9)
    session(app, "titled", U("Name me"), titled("A title"), created_at=7)
    session(app, "child", U("Go on"), created_at=8, parent="prompted")
    owned = app.create_session(
        cwd="/srv", session_id="owned", created_at=7, owner="tenant-7"
    )
    app.close(owned)
    session(app, "late \u2603 \x1b[31m", created_at=2**40)


def test_every_page_is_the_querys_page(make_app: MakeApp) -> None:
    app = make_app(invariants=False)
    fill(app)
    query = SessionQuery(app)
    for limit in (1, 2, 3, 50):
        cursor: str | None = None
        while True:
            plain = stored_page(app, limit, cursor=cursor)
            models = query.list_summaries(limit, cursor=cursor)
            assert plain.to_json() == models.to_json()
            assert [row.header for row in plain.items] == [
                item.header for item in models.items
            ]
            if plain.next_cursor is None:
                break
            cursor = plain.next_cursor
    full = stored_page(app, 50).to_json()
    assert isinstance(full, dict)
    keys = {item["id"]: set(item) for item in full["items"]}  # type: ignore[index, union-attr]
    assert "cwd" not in keys["plain"]  # absent optionals are left out
    assert {"title", "firstPrompt"} <= keys["titled"]
    assert "parentSession" in keys["child"]
    assert "owner" in keys["owned"]


@pytest.mark.parametrize(
    ("limit", "cursor"), [(0, None), (-1, None), (1, "not a cursor"), (1, "WzFd")]
)
def test_a_bad_page_is_the_querys_error(
    make_app: MakeApp, limit: int, cursor: str | None
) -> None:
    app = make_app(invariants=False)
    fill(app)
    with pytest.raises(SessionQueryError) as plain:
        stored_page(app, limit, cursor=cursor)
    with pytest.raises(SessionQueryError) as models:
        SessionQuery(app).list_summaries(limit, cursor=cursor)
    assert (plain.value.code, str(plain.value)) == (
        models.value.code,
        str(models.value),
    )


def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'agentlog.db'}"


def test_the_views_open_without_the_session_machinery(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    writer = Sessions(store=url, invariants=False)
    fill(writer)
    writer.close()
    app = open_views(url, create=False)
    try:
        assert type(app) is ConfiguredApplication
        assert app.name == Sessions.name
        ids = [row.id for row in stored_page(app, 50).items]
    finally:
        app.close()
    assert ids[0].startswith("late")
    assert len(ids) == 6


def test_a_pending_erase_is_finished_by_opening_the_views(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = sqlite_url(tmp_path)
    writer = Sessions(store=url, invariants=False)
    fill(writer)

    def locked() -> None:
        raise StoreUnavailableError("the store is unavailable: database is locked")

    with monkeypatch.context() as patch:
        patch.setattr(writer.eraser, "scrub", locked)
        [erasure] = writer.erase("plain", reason="request")
    assert erasure.pending == ("scrub",)
    assert writer.recorder.erase_pending(10) == ["plain"]  # type: ignore[attr-defined]
    writer.close()
    app = open_views(url, create=False)
    try:
        assert isinstance(app, Sessions)  # the full open, which finishes it
        assert app.recorder.erase_pending(10) == []  # type: ignore[attr-defined]
        assert "plain" not in [row.id for row in stored_page(app, 50).items]
    finally:
        app.close()
    again = open_views(url, create=False)  # nothing pending: the light open
    try:
        assert type(again) is ConfiguredApplication
    finally:
        again.close()
