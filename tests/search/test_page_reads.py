"""A search page reads its hits' events in one read (``StoredLog.events_at``).

Each hit's snippet is cut from its event, read from the log. One read per hit
cost PostgreSQL one round trip each, most of a first page's time
(docs/search-figures.md); the page now reads them in one statement, and every
place reads as a read of that one event would.
"""

from __future__ import annotations

import re
import sqlite3
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pytest

from agentlog.application.query import SessionQuery
from agentlog.application.stored_log import VERSION_MAX, PlacedEvents
from agentlog.domain.errors import SessionNotFoundError, SessionQueryError
from tests.query.support import ev, header, raw_write
from tests.scenarios.harness import U

if TYPE_CHECKING:
    from collections.abc import Iterator

    from agentlog.application import Sessions
    from agentlog.application.stored_log import Place

HOSTILE_IDS = ["plain", "quo'te\"s\\", "tab\tnl\n\x01", "astral 🙂", "ünï €"]
"""Storable ids a statement must carry exactly (quotes, controls, astral)."""
UNSTORABLE_IDS = ["nul\x00id", "lone \ud83d", "\udc00"]
"""Ids no store can hold: they read as never stored, and break no batch."""
TEXTS = ["needle one", "needle \ud83d lone \udc00 high", "needle \x00 nul", "🙂 needle"]


def write_logs(app: Sessions) -> None:
    for number, session_id in enumerate(HOSTILE_IDS):
        events = [ev(seq, U(text), 1000 + seq) for seq, text in enumerate(TEXTS)]
        raw_write(app, header(session_id, created_at=number + 1), events)


def every_place() -> list[Place]:
    places: list[Place] = [
        (session_id, seq) for session_id in HOSTILE_IDS for seq in range(-1, 6)
    ]
    places += [(session_id, 0) for session_id in UNSTORABLE_IDS]
    places += [("never-stored", 0), ("plain", VERSION_MAX - 2), ("plain", VERSION_MAX)]
    return places


def single(app: Sessions, place: Place) -> list[Any]:
    """What one read of this one event gives."""
    session_id, seq = place
    if seq < 0 or seq > VERSION_MAX - 2:
        return []
    return app.stored_log.events(session_id, seq, seq)


def test_a_batch_reads_what_single_reads_read(app: Sessions) -> None:
    write_logs(app)
    read = app.stored_log.events_at(every_place())
    assert isinstance(read, PlacedEvents)
    assert len(read.found) == len(HOSTILE_IDS) * len(TEXTS)
    assert not read.failed
    for place in every_place():
        if place[0] in UNSTORABLE_IDS:
            assert read.event(place) is None  # as an id never stored
            continue
        event = read.event(place)
        assert ([] if event is None else [event]) == single(app, place), place
    assert read.event(("astral 🙂", 1))["data"]["content"][0]["text"] == TEXTS[1]
    assert app.stored_log.events_at([]) == PlacedEvents()


def test_unstorable_ids_alone_read_nothing(app: Sessions) -> None:
    write_logs(app)
    read = app.stored_log.events_at([(key, 0) for key in UNSTORABLE_IDS])
    assert read == PlacedEvents()
    for key in UNSTORABLE_IDS:
        with pytest.raises(SessionNotFoundError):
            app.read_events(key)


def test_an_erased_session_in_the_batch_reads_as_not_stored(app: Sessions) -> None:
    write_logs(app)
    app.erase("plain", reason="test")
    # The tombstone sits one version above the last event.
    tombstone = ("plain", len(TEXTS))
    places = [place for place in every_place() if place != tombstone]
    read = app.stored_log.events_at(places)
    for place in places:
        if place[0] == "plain":
            assert read.event(place) is None
            assert single(app, place) == []
    assert len(read.found) == (len(HOSTILE_IDS) - 1) * len(TEXTS)
    assert not read.failed
    # The tombstone's own place fails alone, as reading that seq alone does.
    read = app.stored_log.events_at([tombstone, ("astral 🙂", 0)])
    with pytest.raises(SessionNotFoundError):
        read.event(tombstone)
    with pytest.raises(SessionNotFoundError):
        single(app, tombstone)
    assert read.event(("astral 🙂", 0)) == single(app, ("astral 🙂", 0))[0]


def test_a_corrupt_row_fails_its_place_only(app: Sessions) -> None:
    write_logs(app)
    other = ev(0, U("needle"), 1000)
    raw_write(app, header("corrupt"), [{**other, "seq": 7}])  # row 0 claims seq 7
    read = app.stored_log.events_at([("corrupt", 0), ("plain", 0)])
    with pytest.raises(Exception, match="does not match its row") as caught:
        read.event(("corrupt", 0))
    with pytest.raises(type(caught.value)):
        single(app, ("corrupt", 0))
    assert read.event(("plain", 0)) == single(app, ("plain", 0))[0]


# ------------------------------------------------------------ statements


def reads_events(app: Sessions, statement: str) -> bool:
    """Whether a statement reads events by stream (not the notification log)."""
    table = re.escape(app.recorder.events_table_name)  # type: ignore[attr-defined]
    return (
        re.search(table + r"\b.*\boriginator_id\s*=", statement, re.DOTALL) is not None
    )


@contextmanager
def sqlite_statements(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[str]]:
    """Every statement the store's SQLite connections run meanwhile."""
    statements: list[str] = []
    pool = app.recorder.datastore.pool  # type: ignore[attr-defined]
    get = pool.get_connection
    traced: list[sqlite3.Connection] = []

    def traced_connection(*args: Any, **kwargs: Any) -> Any:
        connection = get(*args, **kwargs)
        # The library's connection's cursor is a sqlite3 cursor, which knows
        # its sqlite3 connection.
        with connection.cursor() as cursor:
            raw = cursor.connection
        raw.set_trace_callback(statements.append)
        traced.append(raw)
        return connection

    with monkeypatch.context() as patch:
        patch.setattr(pool, "get_connection", traced_connection)
        try:
            yield statements
        finally:
            for raw in traced:
                raw.set_trace_callback(None)


@contextmanager
def postgres_statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every statement psycopg cursors execute meanwhile."""
    import psycopg

    statements: list[str] = []
    execute = psycopg.Cursor.execute

    def traced(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        text = query if isinstance(query, str | bytes) else query.as_string(self)
        statements.append(text.decode() if isinstance(text, bytes) else text)
        return execute(self, query, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(psycopg.Cursor, "execute", traced)
        yield statements


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_page_reads_its_events_in_one_statement(
    app: Sessions, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(30):
        events = [ev(seq, U(f"needle {number} {seq}"), 1000 + seq) for seq in range(3)]
        raw_write(app, header(f"s{number:02}", created_at=number), events)
    query = SessionQuery(app)
    first = query.search_sessions("needle")  # indexes the log, then reads
    assert len(first.items) == 20 and first.next_cursor is not None
    trace = (
        sqlite_statements(app, monkeypatch)
        if backend == "sqlite"
        else postgres_statements(monkeypatch)
    )
    with trace as statements:
        page = query.search_sessions("needle")
        events = query.search_events("s07", "needle")
        later = query.search_sessions("needle", cursor=first.next_cursor)
    reads = [text for text in statements if reads_events(app, text)]
    assert len(reads) == 3, reads  # one per page, for 21 + 3 + 10 hits
    assert page == first
    assert [hit.seq for hit in events.items] == [2, 1, 0]
    assert [hit.snippet for hit in events.items] == [
        "needle 7 2",
        "needle 7 1",
        "needle 7 0",
    ]
    assert len(later.items) == 10


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])  # POPO scans
def test_a_failed_page_read_fails_as_the_first_hit_read_did(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(3):
        raw_write(app, header(f"s{number}"), [ev(0, U("needle"), 1000 + number)])
    query = SessionQuery(app)
    assert [item.session_id for item in query.search_sessions("needle").items] == [
        "s2",
        "s1",
        "s0",
    ]

    def fail(places: object) -> PlacedEvents:
        raise OSError("bad sector")

    monkeypatch.setattr(app.stored_log, "events_at", fail)
    with pytest.raises(SessionQueryError) as caught:
        query.search_sessions("needle")
    assert caught.value.code == SessionQueryError.PERSISTENCE_FAILED
    assert str(caught.value) == 'failed to load session "s2": bad sector'
    with pytest.raises(SessionQueryError) as caught:
        query.search_events("s1", "needle")
    assert str(caught.value) == 'failed to load session "s1": bad sector'


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])  # POPO scans
def test_a_text_clause_reads_its_candidates_in_batches(
    app: Sessions, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``text`` clause needs each candidate's text from the log: 90
    candidates here, of which only the last session's pass. They are read 8,
    32, then 128 at a time (one statement each), not one by one (90), and the
    passing ones are not read again for the page's snippets."""
    from agentlog.application.search_models import EventFilter

    for number in range(30):
        events = [ev(seq, U(f"needle {number} {seq}"), 1000 + seq) for seq in range(3)]
        raw_write(app, header(f"s{number:02}", created_at=number), events)
    query = SessionQuery(app)
    query.search_sessions("needle")  # indexes the log
    only = EventFilter(text="needle 29")
    trace = (
        sqlite_statements(app, monkeypatch)
        if backend == "sqlite"
        else postgres_statements(monkeypatch)
    )
    with trace as statements:
        page = query.search_sessions("needle", event_filter=only)
    reads = [text for text in statements if reads_events(app, text)]
    assert len(reads) == 3, reads
    assert [item.session_id for item in page.items] == ["s29"]
    assert page.items[0].hit.snippet == "needle 29 2"
    events = query.search_events("s29", "needle", event_filter=only)
    assert [hit.seq for hit in events.items] == [2, 1, 0]
