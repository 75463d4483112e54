"""Sessions exist when created: stored at the first flush or close, or at the end
of a ``command(..., create=True)`` block, even with no events."""

from __future__ import annotations

import multiprocessing
from typing import TYPE_CHECKING

import pytest

from agentlog.application import AsyncSessions, Sessions
from agentlog.domain.errors import SessionNotFoundError
from tests.service.test_isolation import PlannedError, append_turn, said

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


def test_a_created_session_closed_without_events_exists(app: Sessions) -> None:
    handle = app.create_session(cwd="/work", session_id="empty", owner="team")
    assert not app.is_stored("empty")
    app.close(handle)
    assert app.is_stored("empty")
    assert app.header("empty")["cwd"] == "/work"
    assert app.read_events("empty") == []
    with app.command("empty") as session:
        append_turn(session, "first")
    assert said(app, "empty") == ["first"]


def test_a_created_session_is_stored_at_its_first_flush(app: Sessions) -> None:
    handle = app.create_session(session_id="flushed")
    app.flush(handle)
    assert app.is_stored("flushed")


def test_an_empty_create_command_stores_the_session(app: Sessions) -> None:
    with app.command("made", create=True, cwd="/srv", owner="u1"):
        pass
    assert app.is_stored("made")
    assert app.header("made")["owner"] == "u1"
    with app.command("made") as session:  # the next request finds it
        append_turn(session, "hello")
    assert said(app, "made") == ["hello"]


def test_a_failed_create_command_stores_nothing_even_at_close(
    make_app: ...,  # type: ignore[valid-type]
) -> None:
    app = make_app()
    with pytest.raises(PlannedError), app.command("failed", create=True):
        raise PlannedError
    assert not app.is_live("failed")
    app.flush()
    assert not app.is_stored("failed")
    with pytest.raises(SessionNotFoundError):
        app.read_events("failed")


def test_run_with_retry_creates_with_cwd_and_owner(app: Sessions) -> None:
    app.run_with_retry(
        "r1", lambda h: append_turn(h, "hi"), create=True, cwd="/w", owner="o"
    )
    header = app.header("r1")
    assert (header["cwd"], header["owner"]) == ("/w", "o")
    assert said(app, "r1") == ["hi"]


def test_async_run_with_retry_creates_with_cwd_and_owner(app: Sessions) -> None:
    import asyncio

    sessions = AsyncSessions(app)

    async def first_turn(handle: object) -> None:
        append_turn(handle, "async hi")  # type: ignore[arg-type]

    asyncio.run(
        sessions.run_with_retry("r2", first_turn, create=True, cwd="/a", owner="o2")
    )
    sessions.executor.shutdown(wait=True)
    assert app.header("r2")["owner"] == "o2"
    assert said(app, "r2") == ["async hi"]


# ------------------------------------------------------- several worker processes


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/workers.db"
        return
    from tests.conftest import PG_URL, postgres_schema

    for schema in postgres_schema("wrk_"):
        yield f"{PG_URL}?schema={schema}"


def serve(
    store_url: str, inbox: multiprocessing.Queue, outbox: multiprocessing.Queue
) -> None:  # type: ignore[type-arg]
    """A worker process serving requests the way the README's service does."""
    app = Sessions(store=store_url)
    try:
        while (request := inbox.get()) is not None:
            kind, session_id, words = request
            try:
                if kind == "create":  # POST /sessions
                    with app.command(session_id, create=True, cwd="/svc"):
                        pass
                else:  # POST /sessions/{id}/turns
                    with app.command(session_id) as session:
                        append_turn(session, words)
                outbox.put(("ok", session_id, ""))
            except Exception as error:
                outbox.put(("error", session_id, f"{type(error).__name__}: {error}"))
    finally:
        app.close()


@pytest.mark.slow
def test_two_worker_processes_serve_create_then_append_with_no_errors(
    store_url: str,
) -> None:
    Sessions(store=store_url).close()
    context = multiprocessing.get_context("spawn")
    inboxes = [context.Queue() for _ in range(2)]
    outbox = context.Queue()
    workers = [
        context.Process(target=serve, args=(store_url, inbox, outbox))
        for inbox in inboxes
    ]
    for worker in workers:
        worker.start()
    try:
        clients = [f"client-{n}" for n in range(6)]
        steps = [("create", "")] + [("append", f"turn {n}") for n in range(5)]
        results = []
        for index, (kind, words) in enumerate(steps):
            # Each client's requests go one after another, each to the other
            # worker than its previous one; the clients run side by side.
            for number, client in enumerate(clients):
                inboxes[(index + number) % 2].put((kind, client, words))
            results += [outbox.get(timeout=120) for _ in clients]
        assert [r for r in results if r[0] != "ok"] == []
        check = Sessions(store=store_url)
        try:
            for client in clients:
                assert said(check, client) == [f"turn {n}" for n in range(5)]
        finally:
            check.close()
    finally:
        for inbox in inboxes:
            inbox.put(None)
        for worker in workers:
            worker.join(60)
