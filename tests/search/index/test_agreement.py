"""The search indexes (SQLite FTS5, PostgreSQL GIN) answer every page as the
scan does: words, scripts, folding, hostile and long texts, filters."""

from __future__ import annotations

import re
from functools import partial

import pytest

from agentlog.application import Sessions
from agentlog.application.query import SessionQuery
from agentlog.application.search_models import EventFilter, SessionFilter
from tests.query.support import (
    CountingReader,
    ev,
    header,
    raw_write,
    raw_write_many,
    session,
)
from tests.scenarios.harness import SE, SS, TS, A, Append, Rep, U
from tests.search.index.support import (
    CJK_QUERIES,
    CJK_TEXTS,
    PATHS,
    corpus,
    force,
    index_of,
    pages,
    snapshot,
)


@pytest.mark.parametrize("text", ["alpha", "ai model", "x y z", "gamma delta"])
def test_index_and_scan_return_the_same_pages(app: Sessions, text: str) -> None:
    corpus(app)
    indexed = SessionQuery(app)
    scanned = SessionQuery(app, persistence=CountingReader(indexed.store_reader()))
    for options in (
        {},
        {"session_filter": SessionFilter(cwd=("/w1", "/w2"))},
        {"event_filter": EventFilter(types=("assistant/message",))},
    ):
        expected = pages(lambda **o: scanned.search_sessions(text, **o), **options)
        assert pages(lambda **o: indexed.search_sessions(text, **o), **options) == (
            expected
        )
    one = pages(lambda **o: indexed.search_events("s03", text, **o))
    assert one == pages(lambda **o: scanned.search_events("s03", text, **o))
    assert index_of(app).processed > 0


SPLIT_TEXTS = [
    "cafe\u0301 menu",  # a combining mark: a separator to the tokenizer
    "powerline \ue0b0branch main",  # a private-use glyph: a separator too
    "ΟΔΟΣ street",  # lower() gives a final sigma; FTS5 folds to σ
    "plain cafe menu",
    "is\ue000not none",
    "\u212aappa lambda",  # the Kelvin sign lowers to an ASCII k
    "Ǆ digraph ǁ2 ǂ0 2ǂisnot",  # the index's own escape and pair letters
    "İstanbul 𞤀𞤁 ᏸ",  # a dotted capital; letters newer than FTS5's tables
]
SPLIT_QUERIES = [
    "cafe\u0301",
    "cafe",
    "cafe menu",
    "branch",
    "\ue0b0branch",
    "powerline branch",
    "ΟΔΟΣ",
    "οδος",
    "οδοσ",
    "is not none",
    "is\ue000not",
    "kappa",
    "ǆ",
    "ǁ2",
    "ǂ0",
    "2ǂisnot",
    "i\u0307stanbul",
    "𞤢𞤣",
    "ᏸ",
    "Ᏸ",
]


def test_spaceless_scripts_are_found_as_the_scan_finds_them(app: Sessions) -> None:
    """Chinese, Japanese and Korean words inside runs, single characters and
    runs next to Latin (issue 22): the index's pages are the scan's, and the
    scan finds what a reader would."""
    logs = [
        (header(f"s{n}", created_at=n), [ev(0, U(text), 100 + n)])
        for n, text in enumerate(CJK_TEXTS)
    ]
    raw_write_many(app, logs)
    indexed = SessionQuery(app)
    scanned = SessionQuery(app, persistence=CountingReader(indexed.store_reader()))
    for query, sessions in CJK_QUERIES.items():
        expected = pages(partial(scanned.search_sessions, query))
        assert len(expected) == sessions, query
        assert pages(partial(indexed.search_sessions, query)) == expected, query
        one = partial(indexed.search_events, "s0", query)
        assert pages(one) == pages(partial(scanned.search_events, "s0", query))


def test_an_index_built_under_an_older_token_rule_is_rebuilt(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Documents split by another rule are not the query's tokens: the index
    says it is stale and the next catch-up rebuilds it."""
    from agentlog.domain import search_text
    from agentlog.infrastructure.backends.postgres import search as postgres_search
    from agentlog.infrastructure.backends.postgres import search_terms
    from agentlog.infrastructure.backends.sqlite import search as sqlite_search
    from agentlog.infrastructure.backends.sqlite import search_index_writes

    def old_rule(text: str) -> list[str]:
        return [token.lower() for token in re.findall(r"[^\W_]+", text)]

    with monkeypatch.context() as patch:
        for module in (sqlite_search, postgres_search):
            patch.setattr(module, "TOKEN_RULE", 1)
        for module in (search_index_writes, search_terms):
            patch.setattr(module, "tokens", old_rule)
        patch.setattr(search_text, "token_count", lambda text: len(old_rule(text)))
        raw_write(app, header("s1"), [ev(0, U("请看文件结构"), 100)])
        assert SessionQuery(app).search_sessions("文件").items == []
    index = index_of(app)
    assert index.search.view.stale()
    found = SessionQuery(app).search_sessions("文件").items
    assert [item.to_json()["sessionId"] for item in found] == ["s1"]
    assert not index.search.view.stale()


@pytest.mark.parametrize("after", [3, 10**9], ids=["pairs-after-3", "no-pairs"])
def test_words_are_split_and_folded_as_the_scan_splits_them(
    app: Sessions, monkeypatch: pytest.MonkeyPatch, after: int
) -> None:
    """The index matches the tokens the scan matches, whatever FTS5's own
    tables say of a character: the stored words themselves are found, and on
    both sides of the document after which the common words were chosen."""
    from agentlog.infrastructure.backends.sqlite import search as sqlite_search

    monkeypatch.setattr(sqlite_search, "PAIRS_AFTER", after)
    logs = [
        (header(f"s{n}", created_at=n), [ev(0, U(text), 100 + n)])
        for n, text in enumerate(SPLIT_TEXTS * 2)
    ]
    raw_write_many(app, logs)
    indexed = SessionQuery(app)
    scanned = SessionQuery(app, persistence=CountingReader(indexed.store_reader()))
    for query in SPLIT_QUERIES:
        expected = pages(partial(scanned.search_sessions, query))
        assert pages(partial(indexed.search_sessions, query)) == expected, query
    assert len(pages(partial(indexed.search_sessions, "is not none"))) == 2


def test_rebuild_equals_incremental(app: Sessions, pairs: str) -> None:
    index = index_of(app)
    handle = session(app, "c", TS(1), U("alpha one"), SS(1, 1), close=False)
    index.catch_up()
    A("alpha two").to(handle)  # type: ignore[arg-type]
    app.flush(handle)
    index.catch_up()
    Rep(1, 3, [1, 3], "alpha summary").to(handle)  # type: ignore[arg-type]
    SE(1, 1).to(handle)  # type: ignore[arg-type]
    app.close(handle)
    corpus(app, sessions=4)
    index.catch_up()
    incremental = snapshot(index)
    surfaces = {(d.session_id, d.seq): d.surface for d in incremental[0]}
    assert surfaces[("c", 1)] == surfaces[("c", 3)] == "shadowed"
    assert surfaces[("c", 4)] == "current"
    index.rebuild()
    assert snapshot(index) == incremental


def test_hostile_strings_are_indexed_and_isolated(app: Sessions) -> None:
    session(app, "poison", TS(1), U("needle \x00 \ud83d tail\ud800"), SS(1, 1))
    raw_write(app, header("broken"), [ev(0, U("needle")), ev(1, Rep(7, 9, [7]))])
    deep: object = "needle"
    for _ in range(20_000):
        deep = [deep]
    session(app, "deep", TS(1), U("needle deep"), Append("x/deep", {"v": deep}))
    session(app, "good", TS(1), U("needle good"))
    query = SessionQuery(app)
    page = query.search_sessions("needle")
    assert {item.session_id for item in page.items} == {"poison", "deep", "good"}
    hit = next(item.hit for item in page.items if item.session_id == "poison")
    assert "\x00" in hit.snippet.replace(" ", "\x00") and "\ud83d" in hit.snippet
    assert [item.session_id for item in query.search_sessions("tail").items] == [
        "poison"
    ]
    states = {s.session_id: s.broken for s in index_of(app).search.view.select_all()}
    assert states["broken"] is True and states["good"] is False


def test_unflushed_live_tail_overlays_the_index(app: Sessions) -> None:
    handle = session(app, "live", TS(1), U("stored needle"), close=False)
    U("fresh needle").to(handle)  # type: ignore[arg-type]
    query = SessionQuery(app)
    hits = query.search_events("live", "needle").items
    assert {(hit.seq, hit.live) for hit in hits} == {(1, False), (2, True)}
    (item,) = query.search_sessions("fresh").items
    assert item.session_id == "live" and item.hit.live
    app.flush(handle)
    (item,) = query.search_sessions("fresh").items
    assert not item.hit.live


def test_long_documents_and_long_words_are_found(app: Sessions) -> None:
    late = "pad " * 17_000 + "rare phrase"
    word = "w" * 3_000
    session(app, "long", TS(1), U(late), SS(1, 1), A(f"{word} tail"))
    session(app, "short", TS(1), U("rare phrase"))
    query = SessionQuery(app)
    hits = query.search_sessions("rare phrase").items
    assert [item.session_id for item in hits] == ["short", "long"]
    (hit,) = query.search_events("long", f"{word} tail").items
    assert hit.seq == 3
    # A word said more than 256 times: a tsvector keeps 256 of its positions.
    session(app, "chatty", TS(1), U("again " * 300 + "again and again"))
    hits = query.search_sessions("again and").items
    assert [item.session_id for item in hits] == ["chatty"]


@pytest.mark.parametrize("path", PATHS)
def test_filter_bounds_past_64_bits_answer_as_the_scan(
    app: Sessions, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """A seq or time bound no database integer holds filters as the scan does
    (was 'session persistence listing failed: Python int too large to convert to
    SQLite INTEGER' from `agentlog search --since 99999999999999999999999999`)."""
    corpus(app, sessions=4)
    indexed = SessionQuery(app)
    scanned = SessionQuery(app, persistence=CountingReader(indexed.store_reader()))
    force(monkeypatch, path)
    huge = 10**30
    for wanted in (
        EventFilter(time_from=huge),
        EventFilter(time_to=huge),
        EventFilter(time_from=-huge),
        EventFilter(time_to=-(10**400)),
        EventFilter(seq_from=huge),
        EventFilter(seq_from=-huge),
        EventFilter(seq_to=huge),
        EventFilter(seq_to=-huge),
    ):
        expected = pages(
            lambda **o: scanned.search_sessions("alpha", **o), event_filter=wanted
        )
        got = pages(
            lambda **o: indexed.search_sessions("alpha", **o), event_filter=wanted
        )
        assert got == expected, wanted
        expected = pages(
            lambda **o: scanned.search_events("s01", "alpha", **o), event_filter=wanted
        )
        got = pages(
            lambda **o: indexed.search_events("s01", "alpha", **o), event_filter=wanted
        )
        assert got == expected, wanted
