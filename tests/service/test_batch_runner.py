"""The view worker folds a batch of notifications per transaction: stopped
between batches and started again it resumes where its views stand, and beside
reads that catch the views up themselves it applies no notification twice.

Checked against a rebuild from position 0, on the search index (whose fold is
not idempotent: a notification folded twice adds a document) and the listing.
"""

from __future__ import annotations

import threading
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

import pytest

from agentlog.application import Sessions
from agentlog.application.catch_up import views_of
from agentlog.application.search_index import search_index_of
from agentlog.infrastructure.store import parse_store_url
from agentlog.infrastructure.views.batch_runner import BatchRunner
from agentlog.infrastructure.views.worker import start_runners, view_pairs
from tests.conftest import PG_URL, postgres_schema
from tests.query.support import ev, header, raw_write_many
from tests.scenarios.harness import U
from tests.service.test_worker_command import views_state

if TYPE_CHECKING:
    from collections.abc import Iterator

    from eventsourcing.persistence import Notification

pytestmark = pytest.mark.slow  # PostgreSQL, subscriptions in threads

BATCH = 7


@pytest.fixture
def url() -> Iterator[str]:
    for schema in postgres_schema("wb_"):
        yield f"{PG_URL}?schema={schema}"


def write(app: Sessions, first: int, count: int) -> None:
    logs = [
        (
            header(f"s{n:04}", created_at=n),
            [ev(seq, U(f"note {n} step {seq} alpha"), 100 + seq) for seq in range(8)],
        )
        for n in range(first, first + count)
    ]
    raw_write_many(app, logs)


def head(app: Sessions) -> int:
    return app.recorder.max_notification_id() or 0


def rebuilt_state(url: str) -> tuple[Any, ...]:
    from agentlog.infrastructure.store import rebuild_views

    rebuild_views(url)
    return views_state(url)


def run_until(app: Sessions, env: dict[str, str], stop_after: int | None) -> list[int]:
    """Run a worker's runners (batches of :data:`BATCH`) until every view is at
    the log's head, or stop them once ``stop_after`` batches were folded in
    all; the batch sizes folded."""
    sizes: list[int] = []
    enough = threading.Event()

    class Counting(BatchRunner[Sessions]):
        BATCH = BATCH

        def fold(self, batch: list[Notification]) -> None:
            super().fold(batch)
            sizes.append(len(batch))
            if stop_after is not None and len(sizes) >= stop_after:
                enough.set()

    with ExitStack() as stack:
        runners = start_runners(stack, view_pairs(env), env, runner_class=Counting)
        if stop_after is not None:
            assert enough.wait(timeout=120)
        else:
            for runner in runners:
                topics = runner.projection.topics
                sent = app.recorder.select_notifications(None, 100_000, topics=topics)
                if sent:  # no titles here: that view is sent nothing
                    runner.wait(sent[-1].id, timeout=120)
    return sizes


def test_a_stopped_worker_resumes_from_its_last_batch(url: str) -> None:
    env = dict(parse_store_url(url).env)
    app = Sessions(env=env)
    try:
        write(app, 0, 30)
        total = head(app)
        first = run_until(app, env, stop_after=5)
        search = search_index_of(app)
        assert search is not None
        stopped = search.search.view.max_tracking_id(app.name) or 0
        assert stopped < total  # stopped part way
        second = run_until(app, env, stop_after=None)
        assert sum(second) > 0
        sizes = first + second
        assert all(size <= BATCH for size in sizes)
        assert len(sizes) < sum(sizes)  # batches: fewer transactions than events
    finally:
        app.close()
    kept = views_state(url)
    assert kept == rebuilt_state(url)


def test_a_worker_beside_reads_that_catch_up_applies_nothing_twice(
    url: str,
) -> None:
    env = dict(parse_store_url(url).env)
    app = Sessions(env=env)
    reader = Sessions(env=env)
    try:
        write(app, 0, 10)
        done = threading.Event()

        def catch_up_meanwhile() -> None:
            index = search_index_of(reader)
            assert index is not None
            while not done.is_set():
                views_of(reader).catch_up()
                index.catch_up()

        thread = threading.Thread(target=catch_up_meanwhile)
        thread.start()
        try:
            for start in range(10, 40, 10):
                write(app, start, 10)
            run_until(app, env, stop_after=None)
        finally:
            done.set()
            thread.join()
    finally:
        reader.close()
        app.close()
    kept = views_state(url)
    assert kept == rebuilt_state(url)
