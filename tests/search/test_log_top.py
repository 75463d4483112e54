"""A search reads the log's top once for every view it reads (the index, then
the page's titles), and still sees every flush made before it began."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from agentlog.application.query import SessionQuery
from tests.query.support import CountingRecorder
from tests.search.test_search import chat

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentlog.application import Sessions


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    """The backends with a search index (in memory, a search scans)."""
    return str(request.param)


def test_a_warm_search_reads_the_log_top_once(
    make_app: Callable[..., Sessions],
) -> None:
    writer = make_app()
    reader = make_app()
    chat(writer, "s1", "a zebra question", "an answer")
    query = SessionQuery(reader)
    assert [item.session_id for item in query.search_sessions("zebra").items] == ["s1"]
    reads = CountingRecorder(reader)
    try:
        page = query.search_sessions("zebra")
    finally:
        reads.restore()
    assert [item.session_id for item in page.items] == ["s1"]
    assert reads["max_notification_id"] == 1
    assert reads["select_notifications"] == 0


def test_a_search_sees_each_flush_of_another_sessions(
    make_app: Callable[..., Sessions],
) -> None:
    writer = make_app()
    reader = make_app()
    query = SessionQuery(reader)
    chat(writer, "s1", "a zebra question", "an answer")
    assert [item.session_id for item in query.search_sessions("zebra").items] == ["s1"]
    for n in range(2, 5):
        chat(writer, f"s{n}", f"zebra number {n}", "an answer")
        page = query.search_sessions("zebra")
        assert {item.session_id for item in page.items} == {
            f"s{k}" for k in range(1, n + 1)
        }
        assert {item.title for item in page.items} == {
            query.read_title(item.session_id) for item in page.items
        }
