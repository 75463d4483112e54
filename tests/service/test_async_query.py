"""``AsyncSessionQuery`` has the reads of ``SessionQuery`` as coroutines
(docs/service.md), the filters and the content search included: they were
missing ('AsyncSessionQuery' object has no attribute 'search_sessions'), scoped
or not (docs/scope.md)."""

from __future__ import annotations

import asyncio

from agentlog import AsyncSessions, EventFilter, Scope, SessionFilter, SessionQuery
from agentlog.application import Sessions
from tests.scenarios.harness import TE, TS, U


def test_filters_and_search_as_coroutines_scoped_or_not() -> None:
    app = Sessions()
    for name, cwd in (("mine", "/w"), ("other", "/x")):
        handle = app.create_session(cwd=cwd, session_id=name)
        for append in (TS(1), U(f"parser notes of {name}"), TE(1)):
            append.to(handle)  # type: ignore[arg-type]
        app.flush(handle)
    sync = SessionQuery(app)

    async def run() -> None:
        sessions = AsyncSessions(app)
        try:
            reads = sessions.query()
            found = await reads.search_sessions("parser", limit=5)
            assert found == sync.search_sessions("parser", limit=5)
            events = await reads.search_events("mine", "parser")
            assert events == sync.search_events("mine", "parser")
            wanted = SessionFilter(cwd=("/x",))
            assert await reads.filter_sessions(wanted) == sync.filter_sessions(wanted)
            typed = EventFilter(types=("user/message",))
            assert await reads.filter_events("mine", typed) == sync.filter_events(
                "mine", typed
            )
            scoped = reads.scoped(Scope(cwd="/w"))
            hits = await scoped.search_sessions("parser")
            assert [item.session_id for item in hits.items] == ["mine"]
            assert [r.header["id"] for r in await scoped.filter_sessions()] == ["mine"]
        finally:
            sessions.executor.shutdown(wait=True)

    asyncio.run(run())
    app.close()
