"""agentlog through PgBouncer in transaction mode (``?pooler=transaction``).

Each test runs on a fresh schema reached through the suite's own PgBouncer
(``tests/pooler/bouncer.py``: four server sessions lent to every client in
turn). The first test shows that the pooler really does lend one server
session to several clients; the others run what a service does: create,
append, flush, read, fork, list, search, erase, encrypt, open a fresh schema
from many processes at once, write from many processes at once, and keep the
views current with ``agentlog worker``.
"""

from __future__ import annotations

import base64
import multiprocessing
import os
import queue
import re
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING

import psycopg
import pytest

from agentlog.application import SessionQuery, Sessions
from agentlog.domain.errors import SessionConflictError
from agentlog.infrastructure.store_url import parse_store_url
from tests.conftest import PG_URL, postgres_schema
from tests.pooler.conftest import pooled
from tests.scenarios.harness import TE, TS, add
from tests.service.requests import check_outcome, serve, stored_requests
from tests.service.workers import Outcome, process_worker, session_ids

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.slow  # a PgBouncer process and PostgreSQL


def bouncer_connection(
    port: int, **kwargs: object
) -> psycopg.Connection[tuple[object, ...]]:
    server = parse_store_url(PG_URL).env
    return psycopg.connect(
        host="127.0.0.1",
        port=port,
        dbname=server["POSTGRES_DBNAME"],
        user=server["POSTGRES_USER"],
        autocommit=True,
        **kwargs,  # type: ignore[arg-type]
    )


def test_the_pooler_lends_a_prepared_statements_session_to_another_client(
    pgbouncer_port: int,
) -> None:
    """What ``?pooler=transaction`` guards against: a statement prepared by one
    client is gone when its next statement runs on another server session
    (PgBouncer reuses the session released last, here taken by a transaction)."""
    first = bouncer_connection(pgbouncer_port, prepare_threshold=0)
    other = bouncer_connection(pgbouncer_port)
    with first, other:
        first.execute("SELECT 1").fetchone()  # prepared as _pg3_0 on session S
        with other.transaction():
            other.execute("SELECT 1").fetchone()  # holds S
            with pytest.raises(psycopg.errors.InvalidSqlStatementName):
                first.execute("SELECT 1").fetchone()  # another session: no _pg3_0


def write_session(app: Sessions, session_id: str, index: int) -> None:
    with app.turn(session_id, user=f"hello {index}", create=True, cwd="/srv") as turn:
        with turn.step() as step:
            call = step.tool_call("grep", {"pattern": "zebra"})
            step.tool_result(call, f"zebra found {index}")
        with turn.step() as step:
            step.assistant(f"the zebra is in file {index}")


def test_a_service_writes_and_reads_through_the_pooler(pooled_url: str) -> None:
    app = Sessions(store=pooled_url)
    other = Sessions(store=pooled_url)
    try:
        for index in range(3):
            write_session(app, f"s{index}", index)
        # Another Sessions (other connections) sees it all.
        assert other.messages("s1") == app.messages("s1")
        assert len(other.read_events("s1")) == len(app.read_events("s1"))
        query = SessionQuery(other)
        listed = [row.id for row in query.list_summaries(limit=10).items]
        assert sorted(listed) == ["s0", "s1", "s2"]
        hits = query.search_sessions("zebra")
        assert sorted(hit.session_id for hit in hits.items) == ["s0", "s1", "s2"]
        events = query.search_events("s2", "file 2")
        assert [hit.seq for hit in events.items]
        # A fork of a stored session copies its rows in the database.
        handle = other.fork("s0", len(app.read_events("s0")) - 1)
        other.flush(handle)
        fork = handle.id
        assert app.messages(fork) == app.messages("s0")
        trace = query.trace_session(fork)
        assert [record.header["id"] for record in trace.ancestors] == ["s0"]
        # A stale writer is refused, not merged.
        mine = app.get_session("s2")
        theirs = other.get_session("s2")
        add(mine, TS(2), TE(2))
        app.flush(mine)
        add(theirs, TS(2), TE(2))
        with pytest.raises(SessionConflictError):
            other.flush(theirs)
        # Erasure: one transaction, every view row.
        app.erase("s1", reason="test")
        assert not other.is_stored("s1")
        assert [row.id for row in SessionQuery(app).list_summaries().items].count(
            "s1"
        ) == 0
    finally:
        app.close()
        other.close()


def test_an_encrypted_store_and_its_key_store_through_the_pooler(
    pgbouncer_port: int, pooled_url: str
) -> None:
    for key_schema in postgres_schema("pgbk_"):
        env = {
            **parse_store_url(pooled_url).env,
            "AGENTLOG_ENCRYPTION": "per-session",
            "AGENTLOG_MASTER_KEY": base64.b64encode(os.urandom(32)).decode(),
            "AGENTLOG_KEYSTORE": pooled(pgbouncer_port, key_schema),
        }
        app = Sessions(env=env)
        reader = Sessions(env=env)
        try:
            for index in range(8):  # more than psycopg's prepare threshold (5)
                serve(app, f"e{index}", f"r{index}", fail=False)
            names = [f"e{index}" for index in range(8)]
            assert stored_requests(reader, names) == {
                f"r{index}": 1 for index in range(8)
            }
            app.erase("e0", reason="test")
            assert not reader.is_stored("e0")
        finally:
            app.close()
            reader.close()


def _open_and_write(url: str, name: str) -> None:
    app = Sessions(store=url)
    serve(app, name, name, fail=False)
    app.close()


def test_processes_and_threads_open_a_fresh_schema_at_once_through_the_pooler(
    pooled_url: str,
) -> None:
    """Table creation's advisory lock is a transaction's: a session's lock,
    taken on one server session and released on another, would stay held."""
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def opener(index: int) -> None:
        try:
            start.wait()
            _open_and_write(pooled_url, f"t{index}")
        except BaseException as error:
            errors.append(error)

    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(target=_open_and_write, args=(pooled_url, f"p{index}"))
        for index in range(4)
    ]
    for process in processes:
        process.start()
    threads = [
        threading.Thread(target=opener, args=(i,), daemon=True) for i in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(240)
    for process in processes:
        process.join(240)
    assert errors == []
    assert [process.exitcode for process in processes] == [0] * 4
    app = Sessions(store=pooled_url)
    names = [f"t{i}" for i in range(4)] + [f"p{i}" for i in range(4)]
    assert stored_requests(app, names) == dict.fromkeys(names, 1)
    app.close()


def test_processes_writing_at_once_through_the_pooler_store_serial_histories(
    pooled_url: str,
) -> None:
    Sessions(store=pooled_url).close()  # tables first, so the race is on writes
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        outcomes = pool.map(process_worker, [(pooled_url, i, 12, 3) for i in range(4)])
    outcome = Outcome()
    for one in outcomes:
        outcome.merge(one)
    assert outcome.unexpected == []
    app = Sessions(store=pooled_url)
    check_outcome(app, session_ids(3), outcome.succeeded, outcome.failed)
    app.close()


STATUS = re.compile(r"log at (\d+), (current|behind by \d+)")


@pytest.fixture
def worker(pooled_url: str) -> Iterator[queue.Queue[str]]:
    """``agentlog worker`` through the pooler; its status lines, as they come."""
    Sessions(store=pooled_url).close()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentlog",
            "--store",
            pooled_url,
            "worker",
            "--status-every",
            "0.2",
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.put(line.rstrip("\n"))

    threading.Thread(target=read, daemon=True).start()
    try:
        yield lines
    finally:
        process.terminate()
        process.wait(60)


def wait_for_status(lines: queue.Queue[str], test: object, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            continue
        seen.append(line)
        match = STATUS.search(line)
        if match and test(int(match[1]), match[2]):  # type: ignore[operator]
            return line
    raise AssertionError(seen[-5:])


def test_the_worker_folds_events_written_after_it_started(
    pooled_url: str, worker: queue.Queue[str]
) -> None:
    """Behind the pooler its subscription polls: a ``LISTEN`` would hear
    nothing, and the views would stay behind."""
    wait_for_status(worker, lambda head, state: state == "current")
    app = Sessions(store=pooled_url)
    try:
        for index in range(5):
            serve(app, f"w{index}", f"r{index}", fail=False)
        head = app.recorder.max_notification_id()
    finally:
        app.close()
    wait_for_status(worker, lambda at, state: at == head and state == "current")
    with psycopg.connect(**{**_direct(), "autocommit": True}) as direct:
        schema = parse_store_url(pooled_url).schema
        rows = direct.execute(
            f'SELECT count(*) FROM "{schema}".agentlog_listing_v3'
        ).fetchone()
    assert rows == (5,)


def _direct() -> dict[str, object]:
    from tests.conftest import pg_params

    return pg_params()


def test_the_viewers_live_stream_polls_behind_the_pooler(pooled_url: str) -> None:
    """No ``LISTEN`` (it would hear nothing): the stream polls, and a flushed
    event still arrives."""
    import http.client
    from urllib.parse import quote

    from agentlog.infrastructure.cli.demo.agent import ScriptedAgent
    from agentlog.infrastructure.web import live
    from tests.viewer.support import scripted
    from tests.viewer.test_live import serving

    app = Sessions(store=pooled_url)
    try:
        sid = scripted(app, words="pooled")
        signal = live.LiveSignal(app)
        with serving(app, signal) as port:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            connection.request("GET", f"/s/{quote(sid, safe='')}/live")
            stream = connection.getresponse()
            assert stream.read1(4096).startswith(b"retry:")
            handle = app.get_session(sid)
            agent = ScriptedAgent(handle)
            agent.start_turn("still there?")
            agent.end_turn()
            app.flush(handle)
            received = b""
            while b"turn/end" not in received:
                piece = stream.read1(4096)  # the 60 s timeout bounds a hang
                assert piece, received
                received += piece
            connection.close()
            assert not signal.listening
            assert signal.every == live.POLL_SECONDS
    finally:
        app.close()
