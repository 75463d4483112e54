"""A search index over time: crashes, runners, broken and erased sessions,
changed extractors and layouts, and no text kept."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from agentlog.application import Sessions
from agentlog.application.query import SessionQuery
from agentlog.application.search_index import SearchIndex
from tests.query.support import (
    ev,
    session,
)
from tests.scenarios.harness import SS, TE, TS, A, Rep, U
from tests.search.index.support import (
    corpus,
    index_of,
    snapshot,
    sqlite_only,
)


def crashing_third_write(view: Any) -> tuple[Any, Any]:
    """The view's ``_write`` and a stand-in that is killed at its third call."""
    real = type(view)._write
    calls = {"n": 0}

    def crash(self: Any, c: Any, changes: Any, *rest: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("killed")
        real(self, c, changes, *rest)

    return real, crash


def test_crash_mid_catch_up_loses_and_doubles_nothing(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus(app, sessions=6)
    index = index_of(app)
    index.PAGE_SIZE = 7
    view = index.search.view
    real, crash = crashing_third_write(view)
    monkeypatch.setattr(type(view), "_write", crash)
    with pytest.raises(RuntimeError):
        index.catch_up()
    monkeypatch.setattr(type(view), "_write", real)
    index._positions = {}
    index.catch_up()
    after_crash = snapshot(index)
    index.rebuild()
    assert snapshot(index) == after_crash
    assert len({(d.session_id, d.seq) for d in after_crash[0]}) == len(after_crash[0])


def test_a_bulk_catch_up_builds_its_indexes_at_the_end_even_after_a_crash(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A catch-up far behind drops the indexes it builds once at its end
    (PostgreSQL: GIN and the order key's); a crash midway still builds them,
    and the index and its pages are those of a catch-up row by row."""
    corpus(app, sessions=6)
    query = SessionQuery(app)
    index = index_of(app)
    index.PAGE_SIZE = 7
    words = ("alpha", "beta gamma")
    pages = {word: query.search_sessions(word, limit=3) for word in words}
    by_rows = snapshot(index)
    view = index.search.view
    monkeypatch.setattr(SearchIndex, "BULK_AFTER", 1)
    real, crash = crashing_third_write(view)
    view.clear(app.name)
    index._positions = {}
    monkeypatch.setattr(type(view), "_write", crash)
    with pytest.raises(RuntimeError):
        index.catch_up()
    assert _postgres_indexes(app) in (None, {"key", "session", "terms"})
    monkeypatch.setattr(type(view), "_write", real)
    index._positions = {}
    assert index.catch_up() > 0
    assert _postgres_indexes(app) in (None, {"key", "session", "terms"})
    assert snapshot(index) == by_rows
    for word, page in pages.items():
        assert query.search_sessions(word, limit=3) == page


def _postgres_indexes(app: Sessions) -> set[str] | None:
    """The PostgreSQL search documents' indexes but the primary key, by suffix
    (``None``: not PostgreSQL)."""
    datastore = app.factory.datastore  # type: ignore[attr-defined]
    schema = getattr(datastore, "schema", None)
    if schema is None:
        return None
    with datastore.transaction(commit=False) as curs:
        curs.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = %s "
            "AND tablename = 'agentlog_search_v3_docs'",
            (schema,),
        )
        names = {row["indexname"] for row in curs.fetchall()}
    prefix = "agentlog_search_v3_"
    return {name.removeprefix(prefix) for name in names if not name.endswith("pkey")}


def test_a_projection_runner_keeps_the_postgres_index(
    app: Sessions, request: pytest.FixtureRequest
) -> None:
    """A library ``ProjectionRunner`` (here in a thread) shares the positions."""
    if "postgres" not in request.node.callspec.id:
        pytest.skip("SQLite cannot subscribe")
    from eventsourcing.projection import ProjectionRunner

    from agentlog.infrastructure.views.worker import search_pair

    env = {
        key: value
        for key, value in app.env.items()
        if key.startswith(("POSTGRES_", "PERSISTENCE_", "AGENTLOG_"))
    }
    [(projection, view)] = search_pair(env)  # the worker's: it hashes if sealed
    with ProjectionRunner(
        application_class=Sessions,
        projection_class=projection,
        view_class=view,
        env=env,
    ) as runner:
        corpus(app, sessions=4)
        runner.wait(app.recorder.max_notification_id(), timeout=30)
    index = index_of(app)
    by_runner = snapshot(index)
    assert len(by_runner[0]) == 4 * 3
    assert index.catch_up() == 0
    index.rebuild()
    assert snapshot(index) == by_runner


def test_a_session_that_breaks_later_leaves_the_index(app: Sessions) -> None:
    from eventsourcing.persistence import StoredEvent

    from agentlog.domain.json import dumps

    session(app, "later", TS(1), U("needle early"), SS(1, 1))
    session(app, "fine", TS(1), U("needle fine"))
    query = SessionQuery(app)
    assert len(query.search_sessions("needle").items) == 2
    bad = ev(3, Rep(7, 9, [7]))
    encode = app.mapper.encode_state  # type: ignore[attr-defined]
    app.recorder.insert_events(
        [StoredEvent("later", 5, str(bad["type"]), encode(dumps(bad)))]
    )
    assert [i.session_id for i in query.search_sessions("needle").items] == ["fine"]
    index = index_of(app)
    assert [d.session_id for d in index.search.view.documents()] == ["fine"]
    kept = snapshot(index)
    index.rebuild()
    assert snapshot(index) == kept
    assert [i.session_id for i in query.search_sessions("needle").items] == ["fine"]


def test_index_keeps_no_text(app: Sessions) -> None:
    corpus(app, sessions=2)
    index = index_of(app)
    index.catch_up()
    view: Any = index.search.view
    with view.datastore.transaction(commit=False) as c:
        if "postgres" in type(view).__name__.lower():
            c.execute(
                "SELECT column_name AS name FROM information_schema.columns "
                "WHERE table_schema = %s AND table_name = 'agentlog_search_v3_docs'",
                (view.datastore.schema,),
            )
            names = {row["name"] for row in c.fetchall()}
        else:
            c.execute("PRAGMA table_info(agentlog_search_v5_docs)")
            names = {row[1] for row in c.fetchall()}
    assert names and not names & {"text", "body"}
    assert {"doc_tokens", "neg_time", "neg_seq"} <= names
    assert names & {"session_id", "label"}


def test_dropped_and_purged_sessions_leave_no_fts_rows(
    app: Sessions, pairs: str
) -> None:
    from eventsourcing.persistence import StoredEvent

    from agentlog.domain.json import dumps

    view = sqlite_only(app)
    session(app, "later", TS(1), U("needle early \x00 \ud800 tail"), SS(1, 1))
    session(app, "gone", TS(1), U("needle gone"), SS(1, 1), A("more words"))
    session(app, "kept", TS(1), U("needle kept"))
    query = SessionQuery(app)
    assert len(query.search_sessions("needle").items) == 3
    assert view.fts_rows() == len(view.documents()) == 4
    bad = ev(3, Rep(7, 9, [7]))
    encode = app.mapper.encode_state  # type: ignore[attr-defined]
    app.recorder.insert_events(
        [StoredEvent("later", 5, str(bad["type"]), encode(dumps(bad)))]
    )
    assert len(query.search_sessions("needle").items) == 2
    view.purge({"gone"})
    assert [i.session_id for i in query.search_sessions("needle").items] == ["kept"]
    view.fts_integrity()
    assert view.fts_rows() == len(view.documents()) == 1
    assert not view.stale()


def test_a_long_session_is_forgotten_reading_its_log_a_window_at_a_time(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    view = sqlite_only(app)
    monkeypatch.setattr(SearchIndex, "TEXTS_WINDOW", 3)
    words = [U(f"needle {n}") for n in range(10)]
    session(app, "long", TS(1), *words, TE(1))
    session(app, "kept", TS(1), U("needle kept"))
    query = SessionQuery(app)
    assert len(query.search_sessions("needle").items) == 2
    view.purge({"long"})  # 10 texts read 3 events at a time, all named
    view.fts_integrity()
    assert not view.stale()
    assert view.fts_rows() == len(view.documents()) == 1


def test_a_changed_extractor_marks_the_index_stale_then_rebuilds(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentlog.domain import search_text

    view = sqlite_only(app)
    session(app, "a", TS(1), U("needle one"))
    session(app, "b", TS(1), U("needle two"))
    query = SessionQuery(app)
    assert len(query.search_sessions("needle").items) == 2
    original = search_text._EXTRACTORS["user/message"]

    def changed(data: Any) -> Any:
        yield "changed"
        yield from original(data)

    monkeypatch.setitem(search_text._EXTRACTORS, "user/message", changed)
    view.purge({"a"})  # cannot name the indexed text: the index goes stale
    assert view.stale()
    assert [d.session_id for d in view.documents()] == ["b"]
    # Its rows left the full-text index all the same (rebuilt from its terms).
    view.fts_integrity()
    assert view.fts_rows() == 1
    # The next search rebuilds from the log ("a"'s events are still stored
    # here) with the new extractor, and no old row is left behind.
    hits = query.search_sessions("changed").items
    assert sorted(i.session_id for i in hits) == ["a", "b"]
    assert not view.stale()
    view.fts_integrity()
    assert view.fts_rows() == len(view.documents()) == 2


def test_earlier_sqlite_layouts_are_dropped_and_indexed_again(tmp_path: Path) -> None:
    """A store written by an earlier layout (v1–v4 tables, their tracking rows)
    opens with the v5 index: the old tables go, every document is indexed again."""
    import sqlite3

    path = tmp_path / "agentlog.db"
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(path)}
    app = Sessions(env=env)
    corpus(app, sessions=3)
    expected = [i.session_id for i in SessionQuery(app).search_sessions("alpha").items]
    app.close()
    old = [
        f"agentlog_search_v{version}{part}"
        for version in (1, 2, 3, 4)
        for part in ("", "_docs", "_meta", "_sessions", "_types")
    ]
    with closing(sqlite3.connect(path)) as db:
        for name in old:
            db.execute(f"CREATE TABLE {name} (x)")
        db.execute("CREATE VIRTUAL TABLE agentlog_search_v4_fts USING fts5(body)")
        for part in ("", "_docs", "_fts", "_meta", "_sessions", "_types"):
            db.execute(f"DROP TABLE agentlog_search_v5{part}")
        db.execute("DELETE FROM tracking WHERE application_name LIKE '%#search.v5'")
        db.execute("INSERT INTO tracking VALUES ('Sessions#search.v4', 99)")
        db.commit()
    app = Sessions(env=env)
    try:
        got = [i.session_id for i in SessionQuery(app).search_sessions("alpha").items]
        assert got == expected and got
    finally:
        app.close()
    with closing(sqlite3.connect(path)) as db:
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        tracked = [
            row[0] for row in db.execute("SELECT application_name FROM tracking")
        ]
    assert not names & {*old, "agentlog_search_v4_fts"}
    assert not [name for name in tracked if "#search.v4" in name]
