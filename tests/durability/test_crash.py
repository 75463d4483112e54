"""Crash recovery: a writer killed with SIGKILL at random moments loses nothing it was
told was durable, never leaves half a flush behind, and its open turn is repaired once.

docs/persistence.md#flush (one transaction), docs/repair.md (crash recovery), docs/persistence.md#take-over
("taking over repairs"). A child process takes the session over and appends whole
agent turns in batches of 1–16 events, flushing each batch; it reports ``flush END``
before and ``ack END`` after each flush. The parent kills it after a random delay and
checks, before the next child starts:

* (PostgreSQL) the server has finished with the dead child's connections: a COMMIT
  the child sent just before it died is still applied after the process is gone,
  so the parent waits for the child's server sessions to end before it looks;
* nothing acknowledged is lost: the stored length is at least the last ``ack``;
* no partial batch: the stored length is the last ``ack`` or, when the kill landed
  inside a flush, that flush's whole end — and a batch boundary of the workload;
* the stored events are exactly the workload's (types, payloads, markers), with
  contiguous seqs;
* the next take-over (``get_session``) appends the repair closers of the open turn, and
  a second take-over from a fresh application appends nothing.

Kills, delays and the seed are tunable: ``AGENTLOG_CRASH_KILLS`` (default 50),
``AGENTLOG_CRASH_MAX_DELAY`` (seconds, default 0.06), ``AGENTLOG_CRASH_SEED``.
Run with ``-s`` to see the figures.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentlog.application import Sessions
from agentlog.domain.messages import derive_messages
from agentlog.domain.repair import interrupted_turn_closers
from agentlog.domain.surface import fold_surface
from tests.conftest import pg_params
from tests.durability.workers import (
    agent_events,
    agent_turn,
    append_args,
    batch_ends,
    crash_writer,
    read_report,
)
from tests.invariant_checker import InvariantChecker

if TYPE_CHECKING:
    from multiprocessing.context import ForkServerProcess
    from pathlib import Path

    from agentlog.domain.json import Envelope
    from tests.durability.workers import CrashReport

import pytest

pytestmark = pytest.mark.slow  # kills writer processes

SESSION_ID = "crash-target"
KILLS = int(os.environ.get("AGENTLOG_CRASH_KILLS") or 50)
MAX_DELAY = float(os.environ.get("AGENTLOG_CRASH_MAX_DELAY") or 0.06)
START_TIMEOUT = 60.0

# A fork server imports agentlog once; each child is then a cheap fork of it (a
# fresh interpreter per kill would cost ~0.5 s of imports). Children never inherit
# the parent's database connections: they fork from the server, not from pytest.
_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(
    ["tests.durability.workers", "eventsourcing.sqlite", "eventsourcing.postgres"]
)


@dataclass
class CrashFigures:
    kills: int = 0
    kills_in_flush: int = 0
    late_commits: int = 0
    in_flight_committed: int = 0
    in_flight_rolled_back: int = 0
    flushes_acked: int = 0
    events_acked: int = 0
    events_lost: int = 0
    repairs: int = 0
    closers: int = 0
    synthetic_results: int = 0
    events_total: int = 0
    seconds: float = 0.0

    def line(self, backend: str, seed: int) -> str:
        return (
            f"crash[{backend}] seed={seed} kills={self.kills} "
            f"(in flush {self.kills_in_flush}: committed {self.in_flight_committed}, "
            f"rolled back {self.in_flight_rolled_back}; landed after the kill "
            f"{self.late_commits}) "
            f"flushes acked={self.flushes_acked} events acked={self.events_acked} "
            f"events lost={self.events_lost} repairs={self.repairs} "
            f"closers={self.closers} (synthetic tool results "
            f"{self.synthetic_results}) events stored={self.events_total} "
            f"seconds={self.seconds:.1f}"
        )


def comparable(event: Envelope) -> tuple[Any, ...]:
    """An event as the workload's ``(type, data, surface_op)`` append arguments."""
    return (event["type"], event["data"], event.get("surfaceOp"))


def wait_for_start(process: ForkServerProcess, report_path: Path) -> CrashReport:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        report = read_report(str(report_path))
        if report.start is not None or report.error is not None:
            return report
        if process.exitcode is not None:
            break
        time.sleep(0.0005)
    report = read_report(str(report_path))
    raise AssertionError(f"crash writer did not start: {report.error}")


class ServerSessions:
    """Waits until the server has ended a dead child's sessions (PostgreSQL only).

    A client killed right after sending ``COMMIT`` leaves the server to apply it:
    the commit can land after the process is reaped. The child names its
    connections (``application_name``) so they can be waited for here.
    """

    def __init__(self, backend: str) -> None:
        self.connection: Any = None
        if backend == "postgres":
            import psycopg

            self.connection = psycopg.connect(**pg_params())

    def wait_gone(self, app_name: str) -> None:
        if self.connection is None:
            return
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            row = self.connection.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                (app_name,),
            ).fetchone()
            if row[0] == 0:
                return
            time.sleep(0.001)
        raise AssertionError(f"the server still runs the sessions of {app_name}")

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()


def check_after_kill(
    verifier: Sessions,
    second: Sessions,
    report: CrashReport,
    figures: CrashFigures,
) -> None:
    """Every check of one kill, then the repair the next take-over makes."""
    assert report.error is None, report.error
    assert report.start is not None
    start = report.start
    tail = verifier.read_events(SESSION_ID, after=start - 1)
    stored = start + len(tail)
    assert verifier.stored_length(SESSION_ID) == stored

    # Nothing acknowledged is lost.
    figures.events_lost += max(0, report.durable - stored)
    assert stored >= report.durable, (stored, report.durable)
    figures.flushes_acked += report.flushes_acked
    figures.events_acked += report.durable - start

    # No partial batch: the stored end is the last ack, or the whole in-flight flush.
    if report.in_flight is None:
        assert stored == report.durable, (stored, report.durable)
    else:
        figures.kills_in_flush += 1
        assert stored in (report.durable, report.in_flight), (
            stored,
            report.durable,
            report.in_flight,
        )
        if stored == report.in_flight:
            figures.in_flight_committed += 1
        else:
            figures.in_flight_rolled_back += 1
    assert stored in batch_ends(start, stored), (start, stored)

    # Exactly the workload's events, contiguous.
    assert [event["seq"] for event in tail] == list(range(start, stored))
    expected = agent_events(report.first_turn)
    assert [comparable(event) for event in tail] == [next(expected) for _ in tail]

    # The next take-over appends the closers once; a second one appends nothing.
    closers = interrupted_turn_closers(tail)
    handle = verifier.get_session(SESSION_ID)
    assert handle.seq == stored + len(closers)
    repaired = verifier.read_events(SESSION_ID, after=stored - 1)
    assert repaired == closers
    verifier.close(handle)
    again = second.get_session(SESSION_ID)
    assert again.seq == stored + len(closers)
    assert second.stored_length(SESSION_ID) == stored + len(closers)
    second.close(again)
    if closers:
        figures.repairs += 1
        figures.closers += len(closers)
        figures.synthetic_results += sum(
            1 for closer in closers if closer["type"] == "tool/result"
        )


def check_whole_log(app: Sessions, figures: CrashFigures) -> None:
    """The final log: contiguous, strictly foldable, well nested, nothing open."""
    events = app.read_events(SESSION_ID)
    figures.events_total = len(events)
    assert [event["seq"] for event in events] == list(range(len(events)))
    fold_surface(events)
    checker = InvariantChecker()
    for event in events:
        checker.feed(event)
    assert interrupted_turn_closers(events) == []
    interrupted = [
        event
        for event in events
        if event["type"] == "turn/end"
        and event["data"]["reason"]["kind"] == "interrupted"
    ]
    assert len(interrupted) == figures.repairs
    assert app.messages(SESSION_ID) == derive_messages(events)


def test_sigkill_loses_no_acknowledged_flush(
    store_env: dict[str, str], shared_backend: str, tmp_path: Path
) -> None:
    seed = int(os.environ.get("AGENTLOG_CRASH_SEED") or random.randrange(2**32))
    rng = random.Random(seed)
    env = {**store_env, "AGENTLOG_SNAPSHOT_INTERVAL": "64"}
    figures = CrashFigures()
    began = time.perf_counter()
    verifier = Sessions(env=env)
    second = Sessions(env=env)
    # Children skip the DDL: the parent made the tables (concurrent CREATE TABLE IF
    # NOT EXISTS can race on PostgreSQL).
    child_env = {**env, "CREATE_TABLE": "false"}
    handle = verifier.create_session(session_id=SESSION_ID, cwd="/srv/crash")
    for args in agent_turn(1):
        append_args(handle, args)
    verifier.flush(handle)
    verifier.close(handle)
    server = ServerSessions(shared_backend)
    process: ForkServerProcess | None = None
    try:
        for kill in range(KILLS):
            report_path = tmp_path / f"kill-{kill}.log"
            app_name = f"agentlog-crash-{os.getpid()}-{kill}"
            process = _CONTEXT.Process(
                target=crash_writer,
                args=(child_env, SESSION_ID, str(report_path), app_name),
                daemon=True,
            )
            process.start()
            wait_for_start(process, report_path)
            time.sleep(rng.uniform(0, MAX_DELAY))
            assert process.pid is not None
            os.kill(process.pid, signal.SIGKILL)
            process.join(10)
            assert process.exitcode == -signal.SIGKILL, read_report(str(report_path))
            figures.kills += 1
            seen = verifier.stored_length(SESSION_ID)
            server.wait_gone(app_name)
            if verifier.stored_length(SESSION_ID) != seen:
                figures.late_commits += 1
            check_after_kill(verifier, second, read_report(str(report_path)), figures)
        check_whole_log(verifier, figures)
    finally:
        if process is not None and process.is_alive():
            process.kill()
            process.join()
        figures.seconds = time.perf_counter() - began
        print("\n" + figures.line(shared_backend, seed))
        verifier.close()
        second.close()
        server.close()
    assert figures.kills >= KILLS
    assert figures.events_lost == 0
    # The delays must actually catch flushes in flight, or the test proves little.
    assert figures.kills_in_flush > 0
    assert figures.repairs > 0
