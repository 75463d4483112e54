"""A projection running in another process (the PostgreSQL view worker) purges an
erased session when the tombstone reaches it, like any other notification."""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

import pytest

from agentlog import SessionQuery, Sessions
from agentlog.application.catch_up import views_of
from agentlog.application.search_index import search_index_of
from agentlog.infrastructure.views.worker import start_runners, view_pairs
from tests.conftest import postgres_schema_env
from tests.erasure.support import REASON, index_everything, markers, write_marked

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def pg_env() -> Iterator[dict[str, str]]:
    yield from postgres_schema_env()


def caught_up(app: Sessions, runners: list[Any], pairs: list[Any]) -> None:
    """Wait for each runner: a runner subscribed with topics tracks the last
    notification it was sent, so each waits for its own last one."""
    for runner, (projection, _) in zip(runners, pairs, strict=True):
        topics = getattr(projection, "topics", ())
        relevant = app.recorder.select_notifications(None, 100_000, topics=topics)
        runner.wait(relevant[-1].id, timeout=30)


def test_the_view_worker_purges_from_the_tombstone(
    pg_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    app = Sessions(env=pg_env)
    pairs = view_pairs(pg_env)
    with ExitStack() as stack:
        stack.callback(app.close)
        marks = markers()
        write_marked(app, "kept", markers())
        app.close(write_marked(app, "secret", marks))
        runners = start_runners(stack, pairs, pg_env, application_class=Sessions)
        caught_up(app, runners, pairs)
        index_everything(app, marks)
        # This erase leaves the views alone, as if they lived elsewhere: only
        # the workers, reaching the tombstone, can purge them.
        views = views_of(app)
        search = search_index_of(app)
        assert search is not None
        for view in [p.view for p in views.projections] + [search.search.view]:
            monkeypatch.setattr(view, "purge", lambda ids, cursor=None: None)
        app.erase("secret", reason=REASON)
        monkeypatch.undo()
        caught_up(app, runners, pairs)

        for projection in views.projections:
            assert projection.view.select_rows(["secret"]) == {}, projection.name
        assert all(d.session_id != "secret" for d in search.search.view.documents())
        query = SessionQuery(app)
        assert [s.id for s in query.list_summaries().items] == ["kept"]
        assert query.search_sessions(marks[0]).items == []
