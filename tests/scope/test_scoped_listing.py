"""A scoped listing reads the scope's rows, not the store's (docs/scope.md#enforced-in-the-query).

10,000 stored sessions, 50 of them in the scope. The listing view is asked for
the page and the headers with the scope in its query: the rows it returns are
counted, and on SQLite and PostgreSQL the database's own plan shows the scope's
index being searched (PostgreSQL's ``EXPLAIN ANALYZE`` counts every row read).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from psycopg.sql import SQL

from agentlog import Scope, SessionQuery, Sessions
from agentlog.application.catch_up import views_of
from tests.query.support import CountingRecorder, ev, header, raw_write_many
from tests.scenarios.harness import U

COUNT, IN_SCOPE = 10_000, 50
SCOPE = Scope(cwd="/ws/in", owner="o1")


def place(i: int) -> dict[str, Any]:
    """Header fields of session ``i``: 50 in scope, the rest near it or elsewhere."""
    if i % (COUNT // IN_SCOPE) == 7:
        return {"cwd": "/ws/in", "owner": "o1"}
    if i % 3 == 0:
        return {"cwd": "/ws/in", "owner": "o2"}  # same workspace, other owner
    if i % 3 == 1:
        return {"cwd": "/ws/other", "owner": "o1"}  # same owner, other workspace
    return {"cwd": "/ws/in"}  # same workspace, no owner


def store(app: Sessions) -> list[str]:
    logs = []
    expected = []
    for i in range(COUNT):
        fields = place(i)
        if fields == {"cwd": "/ws/in", "owner": "o1"}:
            expected.append(f"s{i:05}")
        logs.append((header(f"s{i:05}", i, **fields), [ev(0, U(f"prompt {i}"))]))
    raw_write_many(app, logs)
    views_of(app).catch_up()
    return sorted(expected, reverse=True)


class Counted:
    """Counts the rows a view method returns."""

    def __init__(self, view: Any, name: str) -> None:
        self.rows = 0
        self.calls = 0
        original = getattr(view, name)

        def counted(**kwargs: Any) -> Any:
            self.calls += 1
            result = original(**kwargs)
            self.rows += len(result)
            return result

        setattr(view, name, counted)


@pytest.mark.slow
def test_a_scoped_listing_reads_only_the_scopes_rows(
    app: Sessions, backend: str
) -> None:
    expected = store(app)
    assert len(expected) == IN_SCOPE
    view = views_of(app).listing.view
    page_rows, header_rows = (
        Counted(view, "select_page"),
        Counted(view, "select_headers"),
    )
    reads = CountingRecorder(app)
    try:
        query = SessionQuery(app).scoped(SCOPE)
        page = query.list_summaries(100)
        listed = query.list_sessions()
        first = query.list_summaries(20)
        second = query.list_summaries(20, cursor=first.next_cursor)
    finally:
        reads.restore()
        del view.select_page
        del view.select_headers
    assert [item.id for item in page.items] == expected
    assert sorted((str(r.header["id"]) for r in listed), reverse=True) == expected
    assert [i.id for i in first.items + second.items] == expected[:40]
    assert reads["select_events"] == 0  # no log was read
    # Three pages (100, 20 and 20 after a cursor) and one header list: the view
    # returned 50 + 21 + 21 page rows and 50 headers, never the other 9,950.
    assert (page_rows.calls, page_rows.rows) == (3, IN_SCOPE + 21 + 21)
    assert (header_rows.calls, header_rows.rows) == (1, IN_SCOPE)
    if backend == "sqlite":
        assert_sqlite_searches_the_scope_index(app)
    elif backend == "postgres":
        assert_postgres_reads_the_scopes_rows(app)


def assert_sqlite_searches_the_scope_index(app: Sessions) -> None:
    view: Any = views_of(app).listing.view
    sql, params = view.page_query(limit=101, scope=SCOPE)
    with view.datastore.transaction(commit=False) as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
        plan = [str(row[3]) for row in cursor.fetchall()]
    # One index search on both equalities, in index order: no table scan, no sort.
    assert plan == [
        f"SEARCH {view.table_name} USING INDEX {view.table_name}_scope"
        " (cwd=? AND owner=?)"
    ], plan


def assert_postgres_reads_the_scopes_rows(app: Sessions) -> None:
    view: Any = views_of(app).listing.view
    sql, params = view.page_query(limit=101, scope=SCOPE)
    with view.datastore.transaction(commit=True) as cursor:
        # A live database has statistics (autovacuum analyses a table that grew);
        # a table created a moment ago gets them here.
        cursor.execute(SQL("ANALYZE {0}").format(view._table))
        cursor.execute(SQL("EXPLAIN (ANALYZE, FORMAT JSON) ") + sql, params)
        row = cursor.fetchone()
    value = row["QUERY PLAN"] if isinstance(row, dict) else row[0]
    plan = (json.loads(value) if isinstance(value, str) else value)[0]["Plan"]
    scans, read = [], 0
    stack = [plan]
    while stack:
        node = stack.pop()
        stack.extend(node.get("Plans", ()))
        if "Scan" in node["Node Type"]:
            scans.append(node["Node Type"])
            read += node["Actual Rows"] * node["Actual Loops"]
            read += node.get("Rows Removed by Filter", 0)
            read += node.get("Rows Removed by Index Recheck", 0)
    assert "Seq Scan" not in scans, plan
    assert read == IN_SCOPE, plan


@pytest.mark.slow  # a benchmark script's smoke test
def test_the_scope_figures_script_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``bench/scope_figures.py`` at a tiny size (no timing checked)."""
    from bench import scope_figures

    argv = ["scope_figures", "--sessions", "120", "--in-scope", "6", "--repeat", "1"]
    monkeypatch.setattr("sys.argv", argv)
    scope_figures.main()
    out = capsys.readouterr().out
    assert "scoped list_sessions:" in out
    assert "filtering in Python / scoped in the query:" in out
