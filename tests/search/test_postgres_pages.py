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

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlog.application import Sessions, search_plan
from agentlog.infrastructure.backends.postgres import search as postgres_search
from tests.conftest import postgres_schema_env
from tests.search.scan_pages import assert_index_pages_are_scan_pages

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
            assert_index_pages_are_scan_pages(app, logs, phrase, limit)
        finally:
            app.close()
            schemas.close()


@pytest.mark.parametrize("phrase", ["a", "a b", "b c", "c a b"])
def test_a_common_word_is_walked_without_asking_for_its_ids(
    monkeypatch: pytest.MonkeyPatch, phrase: str
) -> None:
    """``a`` and ``b`` are the index's common words: ``a`` alone is walked at
    once (GIN would build the bitmap of all its documents to return the cap's
    worth of ids), ``a b`` is found by its pair; with ``c``, GIN is asked for
    ``c`` alone. Pages are the scan's either way."""
    from agentlog.application.search_index import search_index_of
    from agentlog.infrastructure.backends.postgres import search_statistics

    logs = [
        [("a b a b a", 3), ("a b", 1), ("b a", 2), ("a c", 2)],
        [("c a b d", 1), ("a", 5)],
        [("a b", 0), ("d d a b c", 4), ("b b", 4)],
    ] * 3
    monkeypatch.setattr(postgres_search, "PAIRS_AFTER", 3)
    monkeypatch.setattr(search_plan, "RARE_CAP", 4)
    schemas = postgres_schema_env()
    app = Sessions(env=next(schemas))
    try:
        asked: list[tuple[str, ...]] = []
        view = type(search_index_of(app).search.view)  # type: ignore[union-attr]
        real = view.select_ids

        def select_ids(self: Any, phrase: Any, *rest: Any) -> list[int]:
            asked.append(tuple(phrase))
            return real(self, phrase, *rest)

        monkeypatch.setattr(view, "select_ids", select_ids)
        assert_index_pages_are_scan_pages(app, logs, phrase, 2)
        assert (tuple(phrase.split()) in asked) == (phrase != "a")
        stats = search_index_of(app).search.view._statistics()  # type: ignore[union-attr]
        assert stats.common == frozenset({"a", "b"})
        assert search_statistics.driving(("c", "a", "b"), stats.common) == ["c"]
    finally:
        app.close()
        schemas.close()
