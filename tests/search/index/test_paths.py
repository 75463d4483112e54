"""Every path of the search plan (walks, rare ids, joins, bands) answers as the
scan does, also past budgets and under concurrent appends."""

from __future__ import annotations

import json
import re
from functools import partial
from typing import Any

import pytest

from agentlog.application import Sessions, search_plan
from agentlog.application.query import SessionQuery
from agentlog.application.search_index import IndexQuery
from agentlog.application.search_models import EventFilter, SessionFilter
from agentlog.domain.errors import SessionQueryError
from tests.query.support import (
    CountingReader,
    ev,
    header,
    raw_write,
    raw_write_many,
)
from tests.scenarios.harness import U
from tests.search.index.support import (
    PATHS,
    append_raw,
    corpus,
    force,
    index_of,
    pages,
)


@pytest.mark.parametrize("text", ["alpha", "ai model", "x y z", "nothing here"])
def test_walk_and_rare_paths_return_the_scan_pages(
    app: Sessions, monkeypatch: pytest.MonkeyPatch, text: str, pairs: str
) -> None:
    corpus(app, sessions=16)
    indexed = SessionQuery(app)
    scanned = SessionQuery(app, persistence=CountingReader(indexed.store_reader()))
    cases: list[dict[str, Any]] = [
        {},
        {"session_filter": SessionFilter(cwd=("/w1",))},
        {"event_filter": EventFilter(types=("assistant/message",), seq_from=2)},
        {"event_filter": EventFilter(surfaces=("current",), time_from=0)},
        {"event_filter": EventFilter(text="a")},
    ]
    for options in cases:
        expected = pages(lambda **o: scanned.search_sessions(text, **o), **options)
        for path in PATHS:
            force(monkeypatch, path)
            got = pages(lambda **o: indexed.search_sessions(text, **o), **options)
            assert got == expected, (path, options)
    expected = pages(lambda **o: scanned.search_events("s05", text, **o))
    for path in PATHS:
        force(monkeypatch, path)
        assert pages(lambda **o: indexed.search_events("s05", text, **o)) == expected
    view: Any = index_of(app).search.view
    if pairs == "pairs" and hasattr(view, "fts_rows") and view.hashing is None:
        with view.datastore.transaction(commit=False) as c:
            c.execute("SELECT value FROM agentlog_search_v5_meta WHERE name = 'common'")
            common = json.loads(c.fetchone()[0])
        # The phrases of two and three words are found by their pairs.
        assert {"ai", "model", "x", "y", "z", "gamma", "delta"} <= set(common)


@pytest.mark.parametrize("path", ["ids", "walk-then-join"])
def test_documents_past_the_last_band_share_it(
    app: Sessions, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """Documents of more tokens than the last band's share it (by default,
    documents of over four million tokens): sorted or walked, the shared band
    gives the scan's pages. A no-op off SQLite."""
    from agentlog.infrastructure.backends.sqlite import search_tokens

    monkeypatch.setattr(search_tokens, "BAND_MAX", 4)  # documents of 4–9 tokens
    corpus(app, sessions=16)
    indexed = SessionQuery(app)
    scanned = SessionQuery(app, persistence=CountingReader(indexed.store_reader()))
    force(monkeypatch, path)
    for text in ("alpha", "x y z"):
        for options in ({}, {"event_filter": EventFilter(seq_from=2)}):
            expected = pages(partial(scanned.search_sessions, text), **options)
            got = pages(partial(indexed.search_sessions, text), **options)
            assert got == expected, (text, options)
    view: Any = index_of(app).search.view
    if getattr(view, "lists_in_order", False):
        ids = view.select_ids(("alpha",), None)
        assert max(ids) >> search_tokens.BAND_SHIFT == 4


def test_a_full_band_refuses_its_next_document(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A band holds 2**28 documents; here two (a shift of one bit). The third
    of one length fails the batch with a typed error that says so, and nothing
    of the batch is written."""
    view: Any = index_of(app).search.view
    if not getattr(view, "lists_in_order", False):
        pytest.skip("the SQLite index's bands")
    from agentlog.infrastructure.backends.sqlite import search_tokens

    monkeypatch.setattr(search_tokens, "BAND_SHIFT", 1)
    logs = [(header(f"s{n}"), [ev(0, U("same length"), n)]) for n in range(3)]
    raw_write_many(app, logs)
    with pytest.raises(SessionQueryError, match=r"holds 2\*\*1 documents of 2 tok"):
        SessionQuery(app).search_sessions("same")
    assert view.documents() == []


def fillers_then_needles(app: Sessions, filler: str) -> None:
    """40 sessions of three newer documents ``filler``, then five sessions of
    one older "a longer needle document"."""
    logs: list[tuple[dict[str, Any], list[Any]]] = [
        (header(f"f{n:02}"), [ev(seq, U(filler), 100 + seq) for seq in range(3)])
        for n in range(40)
    ]
    logs += [
        (header(f"n{n}"), [ev(0, U("a longer needle document"), 50 + n)])
        for n in range(5)
    ]
    raw_write_many(app, logs)


def test_a_walk_past_its_budget_reads_the_rest_sorted(
    app: Sessions, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """Matches only in documents the walk meets late (as long, but older, than
    120 others): it stops testing at its budget (two chunks here, not the three
    that reach them) and reads the remaining matches sorted, giving the scan's
    pages."""
    from tests.search.test_page_reads import postgres_statements, sqlite_statements

    fillers_then_needles(app, "a longer filler document")
    indexed = SessionQuery(app)
    scanned = SessionQuery(app, persistence=CountingReader(indexed.store_reader()))
    expected = pages(lambda **o: scanned.search_sessions("needle", **o))
    assert len(expected) == 5
    force(monkeypatch, "walk")
    for backend in ("sqlite", "postgres"):
        monkeypatch.setattr(
            f"agentlog.infrastructure.backends.{backend}.search.WALK_BUDGET", 40
        )
    indexed.search_sessions("needle")  # indexes the log
    trace = (
        postgres_statements(monkeypatch)
        if "postgres" in request.node.callspec.id
        else sqlite_statements(app, monkeypatch)
    )
    with trace as statements:
        first = indexed.search_sessions("needle", limit=20)
    chunk = r"rowid = w\.id\b|strpos\(w\.terms"  # a chunk's test: SQLite, PostgreSQL
    chunks = [text for text in statements if re.search(chunk, text)]
    assert len(chunks) == 2, chunks  # 21 then 42 documents tested, not 84 more
    assert [item.to_json() for item in first.items] == expected
    assert pages(lambda **o: indexed.search_sessions("needle", **o)) == expected


def test_a_session_walk_past_its_budget_reads_the_rest_sorted(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One session's page of a common phrase whose hits come late in it (older
    than 120 documents of its length): the walk of its documents stops at its
    budget (two chunks) and reads the session's remaining matches sorted. A
    session of 100,000 documents with three such hits took 0.8–2.5 s to walk,
    55 ms now (docs/search-figures.md)."""
    from tests.search.test_page_reads import sqlite_statements

    if not getattr(index_of(app).search.view, "lists_in_order", False):
        pytest.skip("the SQLite session walk's statements")
    filler = [ev(seq, U("a longer filler document"), 500 + seq) for seq in range(120)]
    needles = [ev(120 + n, U("a longer needle document"), 50 + n) for n in range(3)]
    logs = [(header("big"), filler + needles)]
    logs += [(header(f"n{n}"), [ev(0, U("needle"), 1)]) for n in range(5)]
    raw_write_many(app, logs)
    indexed = SessionQuery(app)
    scanned = SessionQuery(app, persistence=CountingReader(indexed.store_reader()))
    expected = pages(partial(scanned.search_events, "big", "needle"))
    assert len(expected) == 3
    force(monkeypatch, "walk")
    monkeypatch.setattr(
        "agentlog.infrastructure.backends.sqlite.search.WALK_BUDGET", 40
    )
    indexed.search_events("big", "needle")  # indexes the log
    with sqlite_statements(app, monkeypatch) as statements:
        first = indexed.search_events("big", "needle", limit=20)
    chunks = [text for text in statements if re.search(r"rowid = w\.id\b", text)]
    assert len(chunks) == 2, chunks  # 21 then 42 documents tested, not 84 more
    assert [item.to_json() for item in first.items] == expected
    assert pages(partial(indexed.search_events, "big", "needle")) == expected


def test_the_sqlite_index_reads_only_the_bands_with_matches(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The full-text ids follow the order's bands (a document's token count):
    a page goes straight to the first band holding a match, and one band of
    few matches is read sorted; no document is tested, none is read twice."""
    from tests.search.test_page_reads import sqlite_statements

    view: Any = index_of(app).search.view
    if not getattr(view, "lists_in_order", False):
        pytest.skip("the SQLite index's own order")
    fillers_then_needles(app, "filler")
    query = SessionQuery(app)
    query.search_sessions("needle")  # indexes the log
    with sqlite_statements(app, monkeypatch) as statements:
        items = query.search_sessions("needle").items
    assert [item.session_id for item in items] == [f"n{n}" for n in range(4, -1, -1)]
    assert not [text for text in statements if "rowid = w.id" in text]
    scans = [text for text in statements if re.search(r"ORDER BY (f\.)?rowid", text)]
    assert len(scans) == 1, scans
    from agentlog.infrastructure.backends.sqlite.search_tokens import BAND_SHIFT

    ids = view.select_ids(("needle",), None)
    assert {doc_id >> BAND_SHIFT for doc_id in ids} == {4}


def test_plan_paths_agree_on_the_view(app: Sessions) -> None:
    corpus(app, sessions=10)
    index = index_of(app)
    index.catch_up()
    view = index.search.view
    query = IndexQuery(("alpha",), EventFilter())
    walk = search_plan.IndexPlan(view, query, strategy="walk")
    ids = search_plan.IndexPlan(view, query, strategy="ids")
    assert walk.ids is None and ids.ids
    first = walk.sessions(None, 3)
    assert first == ids.sessions(None, 3) and len(first) == 4
    after = first[2].key
    assert walk.sessions(after, 3) == ids.sessions(after, 3)
    assert walk.events("s03", None, 50) == ids.events("s03", None, 50)
    keys = [row.key for row in walk.events("s03", None, 50)]
    assert keys == sorted(keys)


@pytest.mark.parametrize("path", PATHS)
def test_cursor_pages_under_concurrent_appends(
    app: Sessions, monkeypatch: pytest.MonkeyPatch, path: str, pairs: str
) -> None:
    force(monkeypatch, path)
    for number in range(9):
        raw_write(app, header(f"s{number}"), [ev(0, U(f"needle {number}"), 100)])
    query = SessionQuery(app)
    page = query.search_sessions("needle", limit=3)
    seen = [item.session_id for item in page.items]
    late = 0
    while page.next_cursor is not None:
        # Between pages: new sessions, and in every first session a new hit
        # that outranks all (shorter and newer): later pages keep the order of
        # the first page's time, so nothing is skipped or listed twice.
        raw_write(app, header(f"late{late}"), [ev(0, U("needle"), 500 + late)])
        for number in range(9):
            append_raw(app, f"s{number}", late + 1, ev(late + 1, U("needle"), 900))
        late += 1
        page = query.search_sessions("needle", limit=3, cursor=page.next_cursor)
        seen += [item.session_id for item in page.items]
    assert seen == [f"s{n}" for n in range(9)]
    # A new first page sees the new hits.
    fresh = query.search_sessions("needle", limit=3).items
    assert [item.hit.time for item in fresh] == [900, 900, 900]
    events = query.search_events("s4", "needle", limit=1)
    assert events.items[0].seq == late and events.next_cursor is not None
    rest = query.search_events("s4", "needle", limit=50, cursor=events.next_cursor)
    assert [hit.seq for hit in rest.items] == list(range(late - 1, -1, -1))
