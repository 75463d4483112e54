"""What the search-index tests share: a corpus, paging, the plan's forced paths."""

from __future__ import annotations

import base64
import random
from collections.abc import Callable
from typing import Any

import pytest

from agentlog.application import Sessions, search_plan
from agentlog.application.search_index import (
    IndexedDocument,
    SearchIndex,
    search_index_of,
)
from tests.query.support import session
from tests.scenarios.harness import SE, SS, TE, TS, A, U

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


PATHS = ("walk", "ids", "join", "walk-then-join")


def force(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """Force the common-phrase walk (no phrase is rare) or the sorted ids;
    ``join`` gives the views' walk no budget (every match read sorted) and
    ``walk-then-join`` a budget of a few documents.

    The SQLite view reads a band of few matches sorted by their ids (``ids``:
    every band), else joins it in SQL (``walk-then-join``: the bands of at
    most two matches) or walks it (``walk``, ``join``: every band;
    ``walk-then-join``: the others)."""
    from agentlog.infrastructure.backends.postgres import search as postgres_search
    from agentlog.infrastructure.backends.postgres import search_statistics
    from agentlog.infrastructure.backends.sqlite import search as sqlite_search

    cap = 10**9 if path == "ids" else 0
    monkeypatch.setattr(search_plan, "RARE_CAP", cap)
    if path == "ids":
        # PostgreSQL walks a common word without asking for its ids.
        monkeypatch.setattr(search_statistics, "surely_common", lambda *_: False)
    budget = {"join": 0, "walk-then-join": 3}.get(path, 10**9)
    for view in (sqlite_search, postgres_search):
        monkeypatch.setattr(view, "WALK_BUDGET", budget)
    band_sort = {"ids": 10**9, "walk-then-join": 2}.get(path, 0)
    monkeypatch.setattr(sqlite_search, "BAND_SORT", band_sort)
    monkeypatch.setattr(sqlite_search, "SORT_RATIO", 0)
    monkeypatch.setattr(sqlite_search, "GATHER", 10**9 if path == "ids" else 0)


def append_raw(app: Sessions, session_id: str, seq: int, event: Any) -> None:
    """Store one more event of a stored session, as another writer would."""
    from eventsourcing.persistence import StoredEvent

    from agentlog.domain.json import dumps

    encode = app.mapper.encode_state  # type: ignore[attr-defined]
    row = StoredEvent(session_id, seq + 2, str(event["type"]), encode(dumps(event)))
    app.recorder.insert_events([row])


def sqlite_only(app: Sessions) -> Any:
    view: Any = index_of(app).search.view
    if not hasattr(view, "fts_rows"):
        pytest.skip("FTS5 rows are SQLite's")
    return view
