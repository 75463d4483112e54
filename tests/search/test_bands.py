"""The SQLite index's bands against the scan, over random corpora and knobs.

A page reads bands in turn, each sorted by ids, joined in SQL or walked (then
joined past a budget), chosen by thresholds (docs/search.md#how-a-page-is-answered).
Hypothesis draws small corpora whose documents share and split bands, equal and
distinct times, a query of one or two words (Latin, or Han and Hangul runs that
the tokenizer splits into characters and bigrams), thresholds that send bands down
every path (some down different paths within one page), and when the common
words are chosen; every page of ``search_sessions`` and ``search_events`` must
be the scan's, cursor by cursor.
"""

from __future__ import annotations

import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlog.application import Sessions
from agentlog.infrastructure.backends.sqlite import search as sqlite_search
from tests.search.scan_pages import assert_index_pages_are_scan_pages

VOCABULARY = ["a", "b", "c", "d", "文", "文件", "件结", "가"]
"""Latin words and pieces of spaceless runs: joined without spaces, they make
runs that overlap, split at script changes ("每个turn输出")."""
joiners = st.sampled_from([" ", ""])


def joined(words: st.SearchStrategy[list[str]]) -> st.SearchStrategy[str]:
    return st.tuples(words, joiners).map(lambda drawn: drawn[1].join(drawn[0]))


texts = joined(st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=6))
sessions = st.lists(
    st.lists(st.tuples(texts, st.integers(0, 3)), min_size=1, max_size=5),
    min_size=1,
    max_size=7,
)
knobs = st.fixed_dictionaries(
    {
        "GATHER": st.integers(0, 3),
        "BAND_SORT": st.integers(0, 3),
        "SORT_RATIO": st.sampled_from([0, 1, 100]),
        "WALK_BUDGET": st.integers(0, 4),
        "PAIRS_AFTER": st.integers(1, 12),
    }
)
phrases = joined(st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=2))


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    logs=sessions,
    settings_=knobs,
    phrase=phrases,
    limit=st.integers(1, 3),
)
def test_band_pages_are_the_scan_pages(
    monkeypatch: pytest.MonkeyPatch,
    logs: list[list[tuple[str, int]]],
    settings_: dict[str, int],
    phrase: str,
    limit: int,
) -> None:
    with monkeypatch.context() as patch, tempfile.TemporaryDirectory() as directory:
        for name, value in settings_.items():
            patch.setattr(sqlite_search, name, value)
        env = {
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": f"{directory}/agentlog.db",
        }
        app = Sessions(env=env)
        try:
            assert_index_pages_are_scan_pages(app, logs, phrase, limit)
        finally:
            app.close()
