"""Ctrl-C during ``agentlog gc``: every session is either fully erased or untouched,
and the one line says how many were erased (docs/erasure.md#retention)."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import time
from typing import TYPE_CHECKING

from agentlog import Sessions
from agentlog.domain.session import now_ms
from tests.cli.conftest import agentlog_program, cli_env
from tests.erasure.test_retention import generate

if TYPE_CHECKING:
    from pathlib import Path

SESSIONS = 20_000
"""Enough old sessions that gc runs for seconds: the signal lands mid-run."""


def erasures_so_far(database: Path) -> int:
    with sqlite3.connect(database) as connection:
        (count,) = connection.execute(
            "SELECT count(*) FROM stored_events WHERE topic = 'session-erased'"
        ).fetchone()
    return int(count)


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
    )
    while process.poll() is None and erasures_so_far(database) == 0:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)

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
        if process.returncode == 130:  # stopped mid-run, as intended
            assert 0 < len(erased) < len(old)
            line = (
                f"interrupted by SIGINT; stored: the erasure of {len(erased)} "
                "session(s)\n"
            )
            assert stderr.decode() == line
            assert stdout == b""
        else:  # finished before the signal landed: all old ones went
            assert process.returncode == 0, stderr
            assert erased == set(old)
    finally:
        app.close()
