"""Content search and filters through ``SessionQuery``, on every backend (scan)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agentlog.application import Sessions
from agentlog.application.query import SessionQuery
from agentlog.application.search_models import EventFilter, SessionFilter
from agentlog.domain.errors import SessionQueryError
from tests.query.support import ev, header, raw_write, session
from tests.scenarios.harness import SE, SS, TE, TS, A, Append, Rep, U


def code_of(call: Callable[[], object]) -> str | None:
    with pytest.raises(SessionQueryError) as caught:
        call()
    return caught.value.code


def chat(app: Sessions, session_id: str, *texts: str, **options: object) -> None:
    appends = [TS(1), U(texts[0]), SS(1, 1)]
    appends += [A(value) for value in texts[1:]]
    appends += [SE(1, 1), TE(1)]
    session(app, session_id, *appends, **options)  # type: ignore[arg-type]


def found(page: object) -> list[tuple[str, int]]:
    items = page.items  # type: ignore[attr-defined]
    return [
        (getattr(item, "hit", item).session_id, getattr(item, "hit", item).seq)
        for item in items
    ]


def test_literal_phrase_case_insensitive_two_letter_tokens(app: Sessions) -> None:
    chat(app, "s1", "Ask the AI model", "the model answered")
    chat(app, "s2", "nothing relevant", "ai MODEL again")
    query = SessionQuery(app)
    page = query.search_sessions("  ai\tmodel ")
    assert found(page) == [("s2", 3), ("s1", 1)]
    hit = page.items[1].hit
    assert hit.type == "user/message" and hit.surface == "current"
    start, end = hit.highlights[0]
    assert hit.snippet[start:end] == "AI model"
    assert found(query.search_events("s1", "model")) == [("s1", 3), ("s1", 1)]
    assert found(query.search_sessions("model the")) == []


@pytest.mark.parametrize(
    "query_text",
    [
        "OR",
        "a OR b",
        "NEAR(a b)",
        '"quoted"',
        "pre*",
        "col:umn",
        "a & b",
        "!not",
        "(paren)",
        "^start",
        "-minus",
        "+plus",
        "'",
        '"',
        "*",
        "\ud83d",
        "\u200b",
        "🙂",
    ],
)
def test_operators_are_data(app: Sessions, query_text: str) -> None:
    chat(app, "s1", f"literal {query_text} here", "other text")
    query = SessionQuery(app)
    page = query.search_sessions(query_text)
    hits = found(page)
    assert hits in ([], [("s1", 1)])
    if any(ch.isalnum() for ch in query_text):
        assert hits == [("s1", 1)]


def test_invalid_queries_are_typed(app: Sessions) -> None:
    chat(app, "s1", "hello", "there")
    query = SessionQuery(app)
    invalid = SessionQueryError.INVALID_SEARCH
    assert code_of(lambda: query.search_sessions("")) == invalid
    assert code_of(lambda: query.search_sessions(" \n\t")) == invalid
    assert code_of(lambda: query.search_sessions("a\x00b")) == invalid
    assert code_of(lambda: query.search_sessions(3)) == invalid
    assert code_of(lambda: query.search_sessions("x", limit=0)) == invalid
    assert code_of(lambda: query.search_sessions("x", session_filter={})) == invalid
    assert code_of(lambda: query.search_events("s1", "x", event_filter=1)) == invalid


def test_oversized_queries_are_typed_on_every_backend(app: Sessions) -> None:
    """Bounded in characters and in words, before any index is asked (issue 21)."""
    words = " ".join(f"w{number}" for number in range(256))
    chat(app, "s1", words, "there")
    query = SessionQuery(app)
    assert found(query.search_sessions(words)) == [("s1", 1)]
    invalid = SessionQueryError.INVALID_SEARCH
    for text in (words + " hello", "x" * 10_001, "hello " * 200_000):
        assert code_of(lambda text=text: query.search_sessions(text)) == invalid
        assert code_of(lambda text=text: query.search_events("s1", text)) == invalid
    with pytest.raises(SessionQueryError, match="more than 256 words"):
        query.search_sessions(words + " hello")
    with pytest.raises(SessionQueryError, match="longer than 10,000 characters"):
        query.search_sessions("x" * 10_001)


def test_order_and_ties(app: Sessions) -> None:
    # fewer document tokens, then newer time, session id ascending, higher seq
    raw_write(app, header("long"), [ev(0, U("word in a long document"), 50)])
    raw_write(app, header("old"), [ev(0, U("word x"), 10)])
    raw_write(app, header("new-b"), [ev(0, U("word y"), 20)])
    raw_write(app, header("new-a"), [ev(0, U("word z"), 20), ev(1, U("word q"), 20)])
    raw_write(app, header("many"), [ev(0, U("word word word"), 99)])
    query = SessionQuery(app)
    page = query.search_sessions("word")
    assert found(page) == [
        ("new-a", 1),
        ("new-b", 0),
        ("old", 0),
        ("many", 0),
        ("long", 0),
    ]
    assert [item.hit.matched_tokens for item in page.items] == [1, 1, 1, 3, 1]
    assert found(query.search_events("new-a", "word")) == [("new-a", 1), ("new-a", 0)]
    assert found(query.search_events("many", "word word")) == [("many", 0)]
    assert found(query.search_events("many", "intro word")) == []


def test_cursor_pages_without_duplicates_or_skips(app: Sessions) -> None:
    for index in range(7):
        chat(app, f"s{index}", "needle", "hay " * index)
    query = SessionQuery(app)
    seen: list[str] = []
    page = query.search_sessions("needle", limit=3)
    seen += [item.session_id for item in page.items]
    chat(app, "late", "needle", "x")  # appended between pages
    while page.next_cursor is not None:
        page = query.search_sessions("needle", limit=3, cursor=page.next_cursor)
        seen += [item.session_id for item in page.items]
    expected = {f"s{i}" for i in range(7)}
    assert len(seen) == len(set(seen))
    assert expected <= set(seen)


def test_cursor_of_another_query_is_typed(app: Sessions) -> None:
    for index in range(3):
        chat(app, f"s{index}", "needle thread", "x")
    query = SessionQuery(app)
    cursor = query.search_sessions("needle", limit=1).next_cursor
    assert cursor is not None
    bad = SessionQueryError.INVALID_CURSOR
    assert code_of(lambda: query.search_sessions("thread", cursor=cursor)) == bad
    assert code_of(lambda: query.search_events("s0", "needle", cursor=cursor)) == bad
    assert code_of(lambda: query.search_sessions("needle", cursor="@@")) == bad
    assert code_of(lambda: query.search_sessions("needle", cursor="\ud83d")) == bad
    # A cursor of this query whose numbers no column can hold.
    from agentlog.application.search_match import encode_cursor, fingerprint
    from agentlog.application.search_models import EventFilter as Events
    from agentlog.application.search_models import SessionFilter as Sessions_

    mark = fingerprint(
        "sessions", ("needle",), Sessions_().model_dump(), Events().model_dump()
    )
    for key, snapshot in (((2**70, 0.0, "s0", 0), None), ((1, 0.0, "s0", 0), 2**70)):
        forged = encode_cursor(mark, key, snapshot)
        assert code_of(lambda c=forged: query.search_sessions("needle", cursor=c)) == (
            bad
        )


def test_surface_classes_after_compaction(app: Sessions) -> None:
    session(
        app,
        "c",
        TS(1),
        U("alpha question"),
        SS(1, 1),
        A("alpha answer"),
        Rep(1, 3, [1, 3], "alpha summary"),
        SE(1, 1),
        TE(1),
    )
    query = SessionQuery(app)
    hits = query.search_events("c", "alpha").items
    assert {(hit.seq, hit.surface) for hit in hits} == {
        (1, "shadowed"),
        (3, "shadowed"),
        (4, "current"),
    }
    only = EventFilter(surfaces=("current",))
    assert found(query.search_events("c", "alpha", event_filter=only)) == [("c", 4)]


def test_live_unflushed_events_are_searched_and_marked(app: Sessions) -> None:
    handle = session(app, "live", TS(1), U("stored words"), close=False)
    U("fresh words").to(handle)  # type: ignore[arg-type]
    hits = SessionQuery(app).search_events("live", "words").items
    assert {(hit.seq, hit.live) for hit in hits} == {(1, False), (2, True)}


def test_disabled_search_leaves_other_reads(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat(app, "s1", "hello", "there")
    monkeypatch.setenv("AGENTLOG_SEARCH", "off")
    query = SessionQuery(app)
    disabled = SessionQueryError.SEARCH_DISABLED
    assert code_of(lambda: query.search_sessions("hello")) == disabled
    assert code_of(lambda: query.search_events("s1", "hello")) == disabled
    assert [r.header["id"] for r in query.filter_sessions()] == ["s1"]
    assert len(query.list_events("s1")) == 6


def test_hostile_session_never_breaks_others(app: Sessions) -> None:
    chat(app, "bad", "needle \ud83d\x00 in poison", "x")
    raw_write(app, header("broken"), [ev(0, U("needle")), ev(1, Rep(7, 9, [7]))])
    deep: object = "needle"
    for _ in range(20_000):
        deep = [deep]
    session(app, "deep", TS(1), U("needle deep"), Append("x/deep", {"v": deep}))
    chat(app, "good", "needle fine", "x")
    page = SessionQuery(app).search_sessions("needle")
    assert {item.session_id for item in page.items} == {"bad", "deep", "good"}
    assert page.to_json()
    invalid = SessionQueryError.INVALID_SURFACE
    assert code_of(lambda: SessionQuery(app).search_events("broken", "x")) == invalid


def test_session_filter(app: Sessions) -> None:
    chat(app, "root", "a", "b", created_at=1, cwd="/x")
    chat(app, "child", "a", "b", created_at=5, cwd=None, parent="root")
    chat(app, "other", "a", "b", created_at=9, cwd="/y", close=False)
    query = SessionQuery(app)

    def ids(**fields: object) -> list[str]:
        records = query.filter_sessions(SessionFilter(**fields))  # type: ignore[arg-type]
        return [r.header["id"] for r in records]

    assert ids() == ["other", "child", "root"]
    assert ids(ids=("root", "child")) == ["child", "root"]
    assert ids(cwd=(None, "/y")) == ["other", "child"]
    assert ids(parent=(None,)) == ["other", "root"]
    assert ids(parent=("root",)) == ["child"]
    assert ids(created_from=2, created_to=5) == ["child"]
    assert ids(availability=("live",)) == ["other"]
    assert ids(availability=("persisted",), cwd=("/x", "/y")) == ["other", "root"]


def test_event_filter(app: Sessions) -> None:
    chat(app, "s", "Hello   big\nWORLD", "bye")
    query = SessionQuery(app)

    def seqs(**fields: object) -> list[int]:
        events = query.filter_events("s", EventFilter(**fields))  # type: ignore[arg-type]
        return [e.seq for e in events]

    assert seqs() == [0, 1, 2, 3, 4, 5]
    assert seqs(seq_from=1, seq_to=3) == [1, 2, 3]
    assert seqs(types=("user/message", "assistant/message")) == [1, 3]
    assert seqs(surfaces=("log-only",)) == [0, 2, 4, 5]
    assert seqs(text="hello big world") == [1]
    assert seqs(text="BIG \t world", types=("assistant/message",)) == []
    assert seqs(time_to=-1) == []
