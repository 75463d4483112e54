"""Reads a service can trust: committed state only, fresh across processes.

A reader never sees the pending events of another thread's (or task's) open
command; the command's own reads do. A live handle another process has moved past
is read from the store and reloaded by the next command, so a concurrent writer is
a ``SessionConflictError`` that ``run_with_retry`` retries, never an
``InvariantError`` (docs/service.md#isolation).
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlog.application import AsyncSessions, SessionQuery, Sessions
from agentlog.domain.errors import InvariantError, SessionNotFoundError
from tests.builders import SE, SS, TE, TS, A, U

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from agentlog.application import SessionHandle

    MakeApp = Callable[..., Sessions]


class PlannedError(Exception):
    """The failure a test's command raises on purpose."""


def append_turn(handle: SessionHandle, words: str) -> None:
    """One whole turn: the user says ``words``, the assistant echoes them."""
    turn = handle.aggregate.turns.next_turn
    for item in (
        TS(turn),
        U(words),
        SS(turn, 1),
        A(f"echo {words}", turn=turn),
        SE(turn, 1),
        TE(turn),
    ):
        item.to(handle)  # type: ignore[arg-type]


def said(app: Sessions, session_id: str) -> list[str]:
    """What the user said, in order, as ``messages`` derives it."""
    return [
        message["content"][0]["text"]
        for message in app.messages(session_id)
        if message["role"] == "user"
    ]


def committed_reads(app: Sessions, session_id: str) -> tuple[Any, ...]:
    """Every read a service makes of one session, for comparison."""
    query = SessionQuery(app)
    return (
        said(app, session_id),
        app.read_events(session_id),
        [event["seq"] for event in query.read_surface(session_id).events],
        query.read_messages(session_id),
    )


class OpenCommand:
    """A command held open in another thread until told to finish or fail."""

    def __init__(self, app: Sessions, session_id: str, words: list[str]) -> None:
        self.app = app
        self.session_id = session_id
        self.words = words
        self.appended = threading.Event()
        self.finish = threading.Event()
        self.fail = False
        self.own_view: list[str] = []
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run)
        self.thread.start()
        assert self.appended.wait(30), "the command never started"

    def _run(self) -> None:
        try:
            with self.app.command(self.session_id) as handle:
                for words in self.words:
                    append_turn(handle, words)
                # The command's own unit of work sees its pending events.
                self.own_view = said(self.app, self.session_id)
                self.appended.set()
                assert self.finish.wait(30)
                if self.fail:
                    raise PlannedError
        except PlannedError:
            pass
        except BaseException as error:  # pragma: no cover - reported below
            self.error = error
            self.appended.set()

    def end(self, *, fail: bool) -> None:
        self.fail = fail
        self.finish.set()
        self.thread.join(30)
        assert self.error is None, self.error


_counter = iter(range(10**9))


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    requests=st.lists(
        st.tuples(st.integers(min_value=1, max_value=2), st.booleans()),
        min_size=1,
        max_size=4,
    )
)
def test_a_reader_never_sees_another_threads_open_command(
    app: Sessions, requests: list[tuple[int, bool]]
) -> None:
    session_id = f"iso-{next(_counter)}"
    with app.command(session_id, create=True) as handle:
        append_turn(handle, "committed 0")
    expected = ["committed 0"]
    for index, (turns, fails) in enumerate(requests):
        before = committed_reads(app, session_id)
        words = [f"pending {index}.{n}" for n in range(turns)]
        command = OpenCommand(app, session_id, words)
        assert command.own_view == expected + words
        assert committed_reads(app, session_id) == before
        command.end(fail=fails)
        if not fails:
            expected += words
        assert said(app, session_id) == expected


def test_a_session_created_in_another_threads_open_command_does_not_exist_yet(
    app: Sessions,
) -> None:
    appended = threading.Event()
    finish = threading.Event()

    def create() -> None:
        with app.command("new-one", create=True) as handle:
            append_turn(handle, "hello")
            appended.set()
            finish.wait(30)

    thread = threading.Thread(target=create)
    thread.start()
    assert appended.wait(30)
    try:
        with pytest.raises(SessionNotFoundError):
            app.read_events("new-one")
        with pytest.raises(SessionNotFoundError):
            app.messages("new-one")
    finally:
        finish.set()
        thread.join(30)
    assert said(app, "new-one") == ["hello"]


def test_an_async_command_reads_its_own_pending_events_and_no_other_task_does(
    app: Sessions,
) -> None:
    sessions = AsyncSessions(app)

    async def scenario() -> tuple[list[str], list[str], list[str]]:
        appended = asyncio.Event()
        finish = asyncio.Event()
        own: list[str] = []

        async def writer() -> None:
            async with sessions.command("a1", create=True) as handle:
                append_turn(handle, "mine")
                own.extend(
                    m["content"][0]["text"]
                    for m in await sessions.messages("a1")
                    if m["role"] == "user"
                )
                appended.set()
                await finish.wait()

        task = asyncio.ensure_future(writer())
        await appended.wait()
        with pytest.raises(SessionNotFoundError):
            await sessions.messages("a1")
        finish.set()
        await task
        after = [
            m["content"][0]["text"]
            for m in await sessions.messages("a1")
            if m["role"] == "user"
        ]
        return own, [], after

    own, _, after = asyncio.run(scenario())
    sessions.executor.shutdown(wait=True)
    assert own == ["mine"]
    assert after == ["mine"]


# ------------------------------------------------------------ across processes


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/shared.db"
        return
    from tests.conftest import PG_URL, postgres_schema

    for schema in postgres_schema("iso_"):
        yield f"{PG_URL}?schema={schema}"


def test_a_live_handle_another_writer_moved_past_is_read_and_extended_fresh(
    store_url: str,
) -> None:
    a = Sessions(store=store_url)
    b = Sessions(store=store_url)
    try:
        a.run_with_retry("s1", lambda h: append_turn(h, "from A"), create=True)
        assert a.is_live("s1")
        b.run_with_retry("s1", lambda h: append_turn(h, "from B"))
        assert said(a, "s1") == ["from A", "from B"]
        assert [e["seq"] for e in a.read_events("s1")] == list(range(12))
        with a.command("s1") as handle:  # no InvariantError: it starts fresh
            append_turn(handle, "from A again")
        assert said(b, "s1") == ["from A", "from B", "from A again"]
    finally:
        a.close()
        b.close()


def test_without_the_freshness_check_a_single_writer_reads_its_own_handle(
    store_url: str,
) -> None:
    a = Sessions(store=store_url, freshness_check=False)
    b = Sessions(store=store_url)
    try:
        a.run_with_retry("s1", lambda h: append_turn(h, "from A"), create=True)
        b.run_with_retry("s1", lambda h: append_turn(h, "from B"))
        assert said(a, "s1") == ["from A"]  # the opt-out trusts the live handle
    finally:
        a.close()
        b.close()


SESSION_ROUNDS = 100
"""Rounds per session in :func:`alternate`: 600 events, one snapshot crossed.

Every read is a whole session's, so one session for all rounds made the long
run quadratic (19 minutes for 1,000 rounds under load); a fresh session every
100 rounds keeps each handoff, read and snapshot while the cost stays linear."""


def alternate(store_url: str, rounds: int) -> None:
    """Two ``Sessions`` on one store take turns writing and reading a session,
    and two threads race on another; every read equals the committed log."""
    a = Sessions(store=store_url)
    b = Sessions(store=store_url)
    try:
        truth: dict[str, list[str]] = {}
        for round_ in range(rounds):
            writer, reader = (a, b) if round_ % 2 == 0 else (b, a)
            session_id = f"alt-{round_ // SESSION_ROUNDS}"
            words = f"round {round_}"
            writer.run_with_retry(
                session_id, lambda h, w=words: append_turn(h, w), create=True
            )
            truth.setdefault(session_id, []).append(words)
            assert said(reader, session_id) == truth[session_id]
            assert said(writer, session_id) == truth[session_id]
        errors: list[BaseException] = []

        def race(app: Sessions, name: str) -> None:
            try:
                for n in range(rounds):
                    session_id = f"race-{n // SESSION_ROUNDS}"
                    app.run_with_retry(
                        session_id,
                        lambda h, w=f"{name} {n}": append_turn(h, w),
                        create=True,
                    )
                    said(app, session_id)
            except BaseException as error:  # pragma: no cover - reported below
                errors.append(error)

        threads = [
            threading.Thread(target=race, args=(app, name))
            for app, name in ((a, "a"), (b, "b"))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(600)
        assert not [e for e in errors if isinstance(e, InvariantError)]
        assert errors == []
        for first in range(0, rounds, SESSION_ROUNDS):
            session_id = f"race-{first // SESSION_ROUNDS}"
            stored = said(a, session_id)
            assert sorted(stored) == sorted(
                f"{name} {n}"
                for name in "ab"
                for n in range(first, min(first + SESSION_ROUNDS, rounds))
            )
            assert said(b, session_id) == stored
    finally:
        a.close()
        b.close()


def test_two_sessions_on_one_store_alternate_and_race(store_url: str) -> None:
    alternate(store_url, rounds=15)


@pytest.mark.slow  # 1,000 cross-process handoffs and 2,000 racing commands
def test_two_sessions_on_one_store_for_a_thousand_rounds(store_url: str) -> None:
    alternate(store_url, rounds=1000)
