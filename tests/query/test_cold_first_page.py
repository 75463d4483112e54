"""A cold first page (W3): what opening a store and listing reads.

Opening a store checks the tables of the events, the snapshots and the three
views, and whether an erase is pending; the first read catches the views up
from the log's top and their positions. Each used to be a transaction of its
own (eleven on SQLite, docs/performance.md); now the opening reads the
catalog once and the catch-up reads the top and every position together. The
answers must be the ones the separate reads gave.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

import pytest

from agentlog.application import Sessions
from agentlog.application.catch_up import views_of
from agentlog.application.query import SessionQuery
from agentlog.domain.errors import StoreUnavailableError
from tests.conftest import backend_env
from tests.query.support import session
from tests.scenarios.harness import U

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture(params=["sqlite", "postgres"])
def store_env(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[dict[str, str]]:
    yield from backend_env(str(request.param), tmp_path)


def sqlite_env(tmp_path: Path) -> dict[str, str]:
    return next(iter(backend_env("sqlite", tmp_path)))


def fill(app: Sessions, count: int = 3) -> None:
    for k in range(count):
        session(app, f"s{k}", U(f"prompt {k}"), created_at=k + 1)


@pytest.fixture
def traced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every SQL statement run by a SQLite connection opened from now on."""
    statements: list[str] = []
    connect = sqlite3.connect

    def tracing(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection = connect(*args, **kwargs)
        connection.set_trace_callback(statements.append)
        return connection

    monkeypatch.setattr(sqlite3, "connect", tracing)
    return statements


def transactions(statements: list[str]) -> int:
    return sum(1 for s in statements if s.strip().upper().startswith("BEGIN"))


def test_a_cold_first_page_reads_in_three_transactions(
    tmp_path: Path, traced: list[str]
) -> None:
    """One read of the catalog (tables, migration row, pending erasures), one
    of the log's top and the views' positions, one of the page."""
    env = sqlite_env(tmp_path)
    app = Sessions(env=env, invariants=False)
    fill(app)
    expected = SessionQuery(app).list_summaries(50).to_json()
    app.close()
    traced.clear()
    cold = Sessions(env=env)
    try:
        page = SessionQuery(cold).list_summaries(50).to_json()
    finally:
        cold.close()
    assert page == expected
    assert transactions(traced) == 3, traced
    assert not any(s.upper().startswith(("CREATE", "INSERT")) for s in traced)


def test_a_cold_catch_up_reads_top_and_positions_in_one_transaction(
    tmp_path: Path, traced: list[str]
) -> None:
    """Views behind the log: the first read still starts with one read of the
    top and every position, then folds what the views have not seen."""
    env = sqlite_env(tmp_path)
    app = Sessions(env=env, invariants=False)
    fill(app)
    views_of(app).catch_up()
    session(app, "later", U("after the views"), created_at=10)
    app.close()
    cold = Sessions(env=env)
    try:
        traced.clear()
        views = views_of(cold)
        assert views.catch_up() > 0
        first = [s for s in traced if not s.upper().startswith(("BEGIN", "ROLLBACK"))]
        assert first[0].startswith("SELECT MAX(rowid)")
        assert "IN (" in first[1] and "tracking" in first[1]
        ids = [item.id for item in SessionQuery(cold).list_summaries(50).items]
    finally:
        cold.close()
    assert ids == ["later", "s2", "s1", "s0"]


def test_positions_read_together_are_those_read_one_by_one(
    store_env: dict[str, str],
) -> None:
    app = Sessions(env=store_env, invariants=False)
    try:
        views = views_of(app)
        assert views.views[0].read_positions(app.name, views.views, app.recorder) == (
            0,
            [0, 0, 0],
        )
        fill(app)
        views.catch_up()
        session(app, "later", created_at=10)  # the views are now behind
        name = app.name
        together = views.views[0].read_positions(name, views.views, app.recorder)
        one_by_one = (
            app.recorder.max_notification_id(),
            [view.max_tracking_id(name) or 0 for view in views.views],
        )
        assert together == one_by_one
        assert together is not None
        top, positions = together
        assert top > max(positions) > 0
    finally:
        app.close()


def test_a_view_table_missing_at_open_is_created_again(tmp_path: Path) -> None:
    """The opening's one read finds the titles table gone: that view checks
    and creates its tables as before, and the listing is whole again."""
    env = sqlite_env(tmp_path)
    app = Sessions(env=env, invariants=False)
    fill(app)
    expected = SessionQuery(app).list_summaries(50).to_json()
    app.close()
    with sqlite3.connect(env["SQLITE_DBNAME"]) as raw:
        raw.execute("DROP TABLE agentlog_titles_v2")
        raw.execute("DELETE FROM tracking WHERE application_name LIKE '%#titles.v2'")
    cold = Sessions(env=env)
    try:
        assert SessionQuery(cold).list_summaries(50).to_json() == expected
    finally:
        cold.close()
    with sqlite3.connect(env["SQLITE_DBNAME"]) as raw:
        (count,) = raw.execute("SELECT COUNT(*) FROM agentlog_titles_v2").fetchone()
        positions = raw.execute(
            "SELECT notification_id FROM tracking WHERE application_name LIKE '%#%'"
        ).fetchall()
        (top,) = raw.execute("SELECT MAX(rowid) FROM stored_events").fetchone()
    assert count == 0  # no session has a title: the table is there, empty
    assert sorted(positions) == [(top,)] * 3  # caught up again


def test_a_pending_erase_is_still_found_by_the_opening_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The catalog read also says whether an erase left work pending; when one
    did, the open reads the list and finishes it, as before."""
    env = sqlite_env(tmp_path)
    writer = Sessions(env=env, invariants=False)
    fill(writer)

    def locked() -> None:
        raise StoreUnavailableError("the store is unavailable: database is locked")

    with monkeypatch.context() as patch:
        patch.setattr(writer.eraser, "scrub", locked)
        [erasure] = writer.erase("s1", reason="request")
    assert erasure.pending == ("scrub",)
    writer.close()
    cold = Sessions(env=env)
    try:
        assert cold.recorder.erase_pending(10) == []  # type: ignore[attr-defined]
        ids = [item.id for item in SessionQuery(cold).list_summaries(50).items]
    finally:
        cold.close()
    assert ids == ["s2", "s0"]
