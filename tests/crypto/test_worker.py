"""The PostgreSQL view worker (a separate process) on an encrypted store: it opens
each row with its session's key, and skips a session whose key is gone instead of
stopping every view."""

from __future__ import annotations

import multiprocessing
from typing import TYPE_CHECKING, Any

import pytest

from agentlog import SessionQuery
from agentlog.application.catch_up import views_of
from tests.crypto.test_round_trip import write

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentlog.application import Sessions


pytestmark = pytest.mark.slow  # a worker process


def _worker(env: dict[str, str], stop: Any) -> None:
    from agentlog.infrastructure.views import worker

    worker.run(env, stop)


def test_the_worker_keeps_the_views_of_an_encrypted_store(
    crypto_env: dict[str, str], open_app: Callable[..., Sessions]
) -> None:
    if "SQLITE_DBNAME" in crypto_env:
        pytest.skip("SQLite cannot subscribe: its views are kept by catch_up alone")
    app = open_app()
    write(app, "erased")
    app.forget_keys(["erased"])  # its rows stay, sealed under a key that is gone
    write(app, "kept", "kept prompt", "kept answer", "kept output")
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    process = context.Process(target=_worker, args=(dict(crypto_env), stop))
    process.start()
    try:
        views = views_of(app)
        last = app.recorder.max_notification_id()
        assert last is not None
        views.listing.view.wait(app.name, last, timeout=60)
        assert process.is_alive()
        rows = views.listing.view.select_all()
        assert [row.session_id for row in rows] == ["kept"]
        query = SessionQuery(app)
        assert [r.header["id"] for r in query.list_sessions()] == ["kept"]
        # An erase's tombstone is not sealed: the worker follows it after the
        # key is gone and purges the session's rows.
        write(app, "later", "later prompt", "later answer", "later output")
        views.listing.view.wait(
            app.name, app.recorder.max_notification_id(), timeout=60
        )
        assert {row.session_id for row in views.listing.view.select_all()} == {
            "kept",
            "later",
        }
        app.erase("later", reason="test")
        views.listing.view.wait(
            app.name, app.recorder.max_notification_id(), timeout=60
        )
        assert process.is_alive()
        assert [row.session_id for row in views.listing.view.select_all()] == ["kept"]
    finally:
        stop.set()
        process.join(30)
        if process.is_alive():
            process.terminate()
