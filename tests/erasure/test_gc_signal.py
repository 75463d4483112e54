"""Ctrl-C during ``agentlog gc``: every session is either fully erased or untouched,
and the one line says how many were erased (docs/erasure.md#retention).

Nothing here rests on how fast the machine is. Once the first batch is committed
the process is frozen (SIGSTOP) and the erasures it committed are counted; SIGINT
then lands the moment it runs again, so at most the batch it was in commits
after the count. With two batches or more still to go the stop is mid-run for
certain, and the test says how far it got; frozen later than that (a starved
test process), the same whole-or-gone check runs on whatever the run did.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import time
from typing import TYPE_CHECKING

import pytest

from agentlog import Sessions
from agentlog.application.erasure import GC_BATCH
from agentlog.domain.session import now_ms
from tests.cli.conftest import agentlog_program, catching_stop_signals, cli_env
from tests.erasure.test_retention import generate

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [
    pytest.mark.slow,  # stops an agentlog process mid-run
    pytest.mark.skipif(
        not os.path.isdir("/proc/self"), reason="reads /proc to see the process frozen"
    ),
]

SESSIONS = 20_000
"""10,000 old sessions: 100 batches, so the freeze nearly always finds most to go."""


def erasures_so_far(database: Path, timeout: float = 30) -> int:
    with contextlib.closing(sqlite3.connect(database, timeout=timeout)) as connection:
        (count,) = connection.execute(
            "SELECT count(*) FROM stored_events WHERE topic = 'session-erased'"
        ).fetchone()
    return int(count)


def frozen(process: subprocess.Popen[bytes]) -> bool:
    """SIGSTOP took effect (state T), or the process is already gone."""
    try:
        with open(f"/proc/{process.pid}/stat", encoding="ascii") as stat:
            state = stat.read().rpartition(")")[2].split()[0]
    except OSError:
        return True
    return state in ("T", "t", "Z", "X")


def stop_mid_run(process: subprocess.Popen[bytes], database: Path) -> int | None:
    """Freeze ``process`` after its first committed erasure, count what it has
    committed, then SIGINT and resume it. The count, or None if it ended first."""
    while process.poll() is None and erasures_so_far(database) == 0:
        time.sleep(0.05)
    if process.poll() is not None:
        return None
    process.send_signal(signal.SIGSTOP)
    while not frozen(process):
        time.sleep(0.01)
    if process.poll() is not None:  # it ended before the freeze
        return None
    try:
        # A process frozen inside the final checkpoint may keep readers waiting:
        # then how far it got is unknown, and only the invariants are checked.
        committed = erasures_so_far(database, timeout=5)
    except sqlite3.OperationalError:
        committed = None
    finally:
        process.send_signal(signal.SIGINT)
        process.send_signal(signal.SIGCONT)
    return committed


def test_a_stopped_gc_leaves_each_session_whole_or_gone(tmp_path: Path) -> None:
    database = tmp_path / "agentlog.db"
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(database)}
    app = Sessions(env=env)
    old, new = generate(app, SESSIONS, now_ms())
    app.close()

    process = subprocess.Popen(
        [*agentlog_program(), "--store", f"sqlite:///{database}", "gc"]
        + ["--older-than", "30d", "--reason", "ttl"],
        cwd=tmp_path,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=catching_stop_signals,
    )
    try:
        committed = stop_mid_run(process, database)
        stdout, stderr = process.communicate(timeout=300)  # a bound, not a measure
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)
            process.kill()
            process.wait()

    app = Sessions(env=env)
    try:
        erased = {e.session_id for e in app.erasures()}
        assert erased <= set(old)
        for session_id in old + new:
            if session_id in erased:
                assert not app.is_stored(session_id)
                rows = app.recorder.select_events(session_id)
                assert [row.topic for row in rows] == ["session-erased"]
            else:
                assert [e["seq"] for e in app.read_events(session_id)] == [0, 1, 2]
    finally:
        app.close()
    if committed is not None and committed + GC_BATCH < len(old):
        # Mid-run for certain: the stop cut the run off.
        assert process.returncode == 130, stderr
        assert committed <= len(erased) <= committed + GC_BATCH
        assert 0 < len(erased) < len(old)
    if process.returncode == 130:
        line = (
            f"interrupted by SIGINT; stored: the erasure of {len(erased)} session(s)\n"
        )
        assert stderr.decode() == line
        assert stdout == b""
    else:  # finished before the signal landed: all old ones went
        assert process.returncode == 0, stderr
        assert erased == set(old)
