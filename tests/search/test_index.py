"""The search indexes (SQLite FTS5, PostgreSQL tsvector): tracked projections
that agree with the scan."""

from __future__ import annotations

import base64
import json
import random
import re
from collections.abc import Callable, Iterator
from contextlib import closing
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from agentlog.application import Sessions, search_plan
from agentlog.application.query import SessionQuery
from agentlog.application.search_index import (
    IndexedDocument,
    IndexQuery,
    SearchIndex,
    search_index_of,
)
from agentlog.application.search_models import EventFilter, SessionFilter
from agentlog.domain.errors import SessionQueryError
from tests.conftest import postgres_schema_env
from tests.query.support import (
    CountingReader,
    ev,
    header,
    raw_write,
    raw_write_many,
    session,
)
from tests.scenarios.harness import SE, SS, TE, TS, A, Append, Rep, U

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "AI",
    "model",
    "tool",
    "result",
    "x",
    "y",
    "z",
]


SEALED = {
    "AGENTLOG_ENCRYPTION": "per-session",
    "AGENTLOG_MASTER_KEY": base64.b64encode(bytes(range(32))).decode(),
}
"""Per-session encryption: the index holds keyed hashes of the tokens, and
every test of this module checks that it answers as the scan does (so as the
plaintext index does)."""


@pytest.fixture(params=["sqlite", "postgres", "sqlite-sealed", "postgres-sealed"])
def app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Sessions]:
    """A store with a search index: SQLite (FTS5) or PostgreSQL (GIN), with
    per-session encryption (``-sealed``: tokens hashed) or without."""
    sealed = request.param.endswith("-sealed")
    if request.param.startswith("sqlite"):
        envs: Iterator[dict[str, str]] = iter(
            [
                {
                    "PERSISTENCE_MODULE": "eventsourcing.sqlite",
                    "SQLITE_DBNAME": str(tmp_path / "agentlog.db"),
                }
            ]
        )
    else:
        envs = postgres_schema_env()
    for env in envs:
        if sealed:
            env = {**env, **SEALED}
            if "POSTGRES_SCHEMA" in env:  # a file every process shares
                env["AGENTLOG_KEYSTORE"] = f"sqlite:///{tmp_path / 'keys.db'}"
        app = Sessions(env=env)
        try:
            yield app
        finally:
            app.close()


def index_of(app: Sessions) -> SearchIndex:
    index = search_index_of(app)
    assert index is not None
    return index


def snapshot(index: SearchIndex) -> tuple[list[IndexedDocument], list[Any]]:
    view = index.search.view
    return view.documents(), view.select_all()


def corpus(app: Sessions, sessions: int = 12, seed: int = 7) -> None:
    rng = random.Random(seed)
    for number in range(sessions):
        texts = [" ".join(rng.choices(WORDS, k=rng.randint(1, 9))) for _ in range(4)]
        session(
            app,
            f"s{number:02}",
            TS(1),
            U(texts[0]),
            SS(1, 1),
            A(texts[1]),
            A(texts[2]),
            SE(1, 1),
            TE(1),
            created_at=number,
            cwd=f"/w{number % 3}",
        )


def pages(call: Callable[..., Any], **options: Any) -> list[Any]:
    out: list[Any] = []
    page = call(limit=3, **options)
    out += [item.to_json() for item in page.items]
    while page.next_cursor is not None:
        page = call(limit=3, cursor=page.next_cursor, **options)
        out += [item.to_json() for item in page.items]
    return out


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


CJK_TEXTS = [
    "每个turn输出随机一个包的文件结构",
    "文件 结构",
    "请看文件",
    "日本語の文章を読む",
    "カタカナのテスト",
    "한국어 검색 테스트",
    "第3章 mixed 文",
]
CJK_QUERIES = {
    "文件结构": 1,
    "文件": 3,  # at a run's start, inside it, at its end
    "件": 3,
    "构": 2,
    "turn输出": 1,
    "个turn": 1,
    "每turn": 0,
    "文件 结构": 1,
    "结构": 2,
    "語の文": 1,
    "テスト": 1,
    "검색": 1,
    "국": 1,
    "3章": 1,
    "文": 5,
    "章 mixed 文": 1,
}


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


def test_crash_mid_catch_up_loses_and_doubles_nothing(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus(app, sessions=6)
    index = index_of(app)
    index.PAGE_SIZE = 7
    view = index.search.view
    real = type(view)._write  # type: ignore[attr-defined]
    calls = {"n": 0}

    def crash(self: Any, c: Any, changes: Any, *rest: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("killed")
        real(self, c, changes, *rest)

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


PATHS = ("walk", "ids", "join", "walk-then-join")


@pytest.fixture(params=["text", "pairs", "pairs-early"])
def pairs(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """With ``pairs``, the SQLite index chooses its common words after forty
    documents (``pairs-early``: two), so later documents are found by their
    word pairs."""
    from agentlog.infrastructure.backends.sqlite import search as sqlite_search

    after = {"pairs": 40, "pairs-early": 2}.get(request.param)
    if after is not None:
        monkeypatch.setattr(sqlite_search, "PAIRS_AFTER", after)
    return str(request.param)


def force(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """Force the common-phrase walk (no phrase is rare) or the sorted ids;
    ``join`` gives the views' walk no budget (every match read sorted) and
    ``walk-then-join`` a budget of a few documents.

    The SQLite view reads a band of few matches sorted by their ids (``ids``:
    every band), else joins it in SQL (``walk-then-join``: the bands of at
    most two matches) or walks it (``walk``, ``join``: every band;
    ``walk-then-join``: the others)."""
    from agentlog.infrastructure.backends.postgres import search as postgres_search
    from agentlog.infrastructure.backends.sqlite import search as sqlite_search

    cap = 10**9 if path == "ids" else 0
    monkeypatch.setattr(search_plan, "RARE_CAP", cap)
    budget = {"join": 0, "walk-then-join": 3}.get(path, 10**9)
    for view in (sqlite_search, postgres_search):
        monkeypatch.setattr(view, "WALK_BUDGET", budget)
    band_sort = {"ids": 10**9, "walk-then-join": 2}.get(path, 0)
    monkeypatch.setattr(sqlite_search, "BAND_SORT", band_sort)
    monkeypatch.setattr(sqlite_search, "SORT_RATIO", 0)
    monkeypatch.setattr(sqlite_search, "GATHER", 10**9 if path == "ids" else 0)


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


def append_raw(app: Sessions, session_id: str, seq: int, event: Any) -> None:
    """Store one more event of a stored session, as another writer would."""
    from eventsourcing.persistence import StoredEvent

    from agentlog.domain.json import dumps

    encode = app.mapper.encode_state  # type: ignore[attr-defined]
    row = StoredEvent(session_id, seq + 2, str(event["type"]), encode(dumps(event)))
    app.recorder.insert_events([row])


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


def sqlite_only(app: Sessions) -> Any:
    view: Any = index_of(app).search.view
    if not hasattr(view, "fts_rows"):
        pytest.skip("FTS5 rows are SQLite's")
    return view


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
