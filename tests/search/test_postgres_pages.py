"""The PostgreSQL index against the scan, over random corpora and knobs.

A page is read from sorted ids, a walk of the order index, or past the walk's
budget band by band of document length, chosen by thresholds
(docs/search.md#how-a-page-is-answered). Hypothesis draws small corpora with
short and long documents, equal and distinct times, repeated words, a query
of one to three words, thresholds that send pages down every path, and when
the common words (whose pairs GIN finds phrases by) are chosen; every page of
``search_sessions`` and ``search_events`` must be the scan's, cursor by cursor.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlog.application import Sessions, search_plan
from agentlog.application.query import SessionQuery
from agentlog.infrastructure.backends.postgres import search as postgres_search
from tests.conftest import postgres_schema_env
from tests.query.support import CountingReader, ev, header, raw_write_many
from tests.scenarios.harness import U

pytestmark = pytest.mark.slow

VOCABULARY = ["a", "b", "c", "d"]

texts = st.one_of(
    st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=6),
    st.lists(st.sampled_from(VOCABULARY), min_size=20, max_size=90),
).map(" ".join)
sessions = st.lists(
    st.lists(st.tuples(texts, st.integers(0, 3)), min_size=1, max_size=5),
    min_size=1,
    max_size=7,
)
knobs = st.fixed_dictionaries(
    {
        "RARE_CAP": st.sampled_from([0, 1, 3, 1000]),
        "WALK_BUDGET": st.integers(0, 4),
        "PAIRS_AFTER": st.integers(1, 12),
        "_FIRST_BAND": st.integers(1, 8),
    }
)
phrases = st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3).map(" ".join)


def pages(call: Any, limit: int) -> list[Any]:
    out: list[Any] = []
    page = call(limit=limit)
    out += [item.to_json() for item in page.items]
    while page.next_cursor is not None:
        page = call(limit=limit, cursor=page.next_cursor)
        out += [item.to_json() for item in page.items]
    return out


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(logs=sessions, settings_=knobs, phrase=phrases, limit=st.integers(1, 3))
def test_postgres_pages_are_the_scan_pages(
    monkeypatch: pytest.MonkeyPatch,
    logs: list[list[tuple[str, int]]],
    settings_: dict[str, int],
    phrase: str,
    limit: int,
) -> None:
    with monkeypatch.context() as patch:
        for name, value in settings_.items():
            patch.setattr(postgres_search, name, value)
        patch.setattr(search_plan, "RARE_CAP", settings_["RARE_CAP"])
        schemas = postgres_schema_env()
        app = Sessions(env=next(schemas))
        try:
            raw_write_many(
                app,
                [
                    (
                        header(f"s{number}", created_at=number),
                        [
                            ev(seq, U(text), time)
                            for seq, (text, time) in enumerate(events)
                        ],
                    )
                    for number, events in enumerate(logs)
                ],
            )
            indexed = SessionQuery(app)
            scanned = SessionQuery(
                app, persistence=CountingReader(indexed.store_reader())
            )
            expected = pages(partial(scanned.search_sessions, phrase), limit)
            assert pages(partial(indexed.search_sessions, phrase), limit) == expected
            one = partial(scanned.search_events, "s0", phrase)
            got = pages(partial(indexed.search_events, "s0", phrase), limit)
            assert got == pages(one, limit)
        finally:
            app.close()
            schemas.close()
