"""The index-against-the-scan check shared by the backends' random-corpus tests.

A drawn corpus is a list of sessions, each a list of ``(text, time)`` user
messages; the index must answer every page as the scan does, cursor by cursor.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from agentlog.application.query import SessionQuery
from tests.query.support import CountingReader, ev, header, raw_write_many
from tests.scenarios.harness import U

if TYPE_CHECKING:
    from agentlog.application import Sessions

Corpus = list[list[tuple[str, int]]]


def pages(call: Any, limit: int) -> list[Any]:
    """Every page of a search, followed cursor by cursor, as JSON."""
    out: list[Any] = []
    page = call(limit=limit)
    out += [item.to_json() for item in page.items]
    while page.next_cursor is not None:
        page = call(limit=limit, cursor=page.next_cursor)
        out += [item.to_json() for item in page.items]
    return out


def write_corpus(app: Sessions, logs: Corpus) -> None:
    """Session ``s<n>`` (created at ``n``) for each drawn log, written raw."""
    raw_write_many(
        app,
        [
            (
                header(f"s{number}", created_at=number),
                [ev(seq, U(text), time) for seq, (text, time) in enumerate(events)],
            )
            for number, events in enumerate(logs)
        ],
    )


def assert_index_pages_are_scan_pages(
    app: Sessions, logs: Corpus, phrase: str, limit: int
) -> None:
    """``search_sessions`` and ``search_events`` (of ``s0``) through the index
    page as a scan of the logs does."""
    write_corpus(app, logs)
    indexed = SessionQuery(app)
    scanned = SessionQuery(app, persistence=CountingReader(indexed.store_reader()))
    expected = pages(partial(scanned.search_sessions, phrase), limit)
    assert pages(partial(indexed.search_sessions, phrase), limit) == expected
    one = partial(scanned.search_events, "s0", phrase)
    assert pages(partial(indexed.search_events, "s0", phrase), limit) == pages(
        one, limit
    )
