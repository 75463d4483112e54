"""Many callers on one store: threads, processes and tasks (issue "service").

Sizes are modest here; ``python -m tests.service.figures`` runs the full loads
(8 threads × 200 requests, 4 processes, 200 tasks) and prints the figures.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from typing import TYPE_CHECKING

import pytest

from agentlog.application import AsyncSessions, Sessions
from tests.service.requests import check_outcome
from tests.service.workers import (
    Outcome,
    async_load,
    process_worker,
    session_ids,
    threaded_load,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    MakeApp = Callable[..., Sessions]

REQUESTS = int(os.environ.get("AGENTLOG_SERVICE_REQUESTS", "25"))


def test_threads_sharing_one_sessions_store_serial_histories(
    make_app: MakeApp,
) -> None:
    app = make_app()
    outcome = threaded_load(app, threads=8, requests=REQUESTS, sessions=6)
    assert outcome.unexpected == []
    assert outcome.failed, "the load must include failing requests"
    check_outcome(make_app(), session_ids(6), outcome.succeeded, outcome.failed)


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/service.db"
        return
    from tests.conftest import PG_URL, postgres_schema

    for schema in postgres_schema("svc_"):
        yield f"{PG_URL}?schema={schema}"


@pytest.mark.slow
def test_processes_with_retries_store_serial_histories(store_url: str) -> None:
    Sessions(store=store_url).close()  # tables first, so the race is on writes
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        outcomes = pool.map(
            process_worker, [(store_url, i, REQUESTS // 2, 3) for i in range(4)]
        )
    outcome = Outcome()
    for one in outcomes:
        outcome.merge(one)
    assert outcome.unexpected == []
    app = Sessions(store=store_url)
    check_outcome(app, session_ids(3), outcome.succeeded, outcome.failed)
    app.close()


def test_async_sessions_under_many_tasks(store_url: str) -> None:
    app = AsyncSessions(store=store_url)

    async def main() -> Outcome:
        try:
            return await async_load(app, tasks=50, requests=2, sessions=6)
        finally:
            await app.close()

    outcome = asyncio.run(main())
    print(f"longest event-loop stall: {outcome.max_stall * 1000:.1f} ms")
    assert outcome.unexpected == []
    reader = Sessions(store=store_url)
    check_outcome(reader, session_ids(6), outcome.succeeded, outcome.failed)
    reader.close()
