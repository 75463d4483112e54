"""SIGINT and SIGTERM stop a command cleanly: exit 130, one line, and that line is
exactly what the store holds afterwards (nothing flushed after the signal).

Real signals go to the installed console script. When a signal lands is up to the
scheduler, so no test asserts which side of the commit it hit; each asserts that
the report matches the store, whichever it was. The signal is sent once the process
has the store file open (read from ``/proc``), so the handlers are installed.
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

from tests.cli.conftest import (
    agentlog_program,
    catching_stop_signals,
    cli_env,
    run_cli,
)

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [
    pytest.mark.slow,  # signals to agentlog processes
    pytest.mark.skipif(
        not os.path.isdir("/proc/self/fd"), reason="reads /proc to see the store open"
    ),
]

DELAYS = [0.0, 0.3, 1.0, 2.0]


def run_and_stop(
    args: list[str],
    cwd: Path,
    store_file: Path,
    signum: int,
    delay: float,
    *,
    rows_past: int | None = None,
) -> tuple[int, str, str]:
    """Start ``agentlog``; once it has the store open (and, with ``rows_past``, has
    committed rows beyond that count), wait ``delay`` and signal it."""
    process = subprocess.Popen(
        [*agentlog_program(), *args],
        cwd=cwd,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=catching_stop_signals,
    )
    try:
        wait_until_open(process, store_file)
        if rows_past is not None:
            wait_for_rows(process, store_file, rows_past)
        time.sleep(delay)
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, stdout.decode(), stderr.decode()


def wait_until_open(process: subprocess.Popen[bytes], store_file: Path) -> None:
    target = str(store_file.resolve())
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        fds = f"/proc/{process.pid}/fd"
        try:
            links = {os.readlink(os.path.join(fds, fd)) for fd in os.listdir(fds)}
        except OSError:
            links = set()
        if target in links:
            return
        time.sleep(0.01)


def event_rows(store_file: Path) -> int:
    with contextlib.closing(sqlite3.connect(store_file, timeout=30)) as connection:
        (count,) = connection.execute("SELECT COUNT(*) FROM stored_events").fetchone()
    return int(count)


def wait_for_rows(
    process: subprocess.Popen[bytes], store_file: Path, rows_past: int
) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if event_rows(store_file) > rows_past:
            return
        time.sleep(0.02)


def stored_counts(url: str, cwd: Path) -> dict[str, int]:
    """Each stored session's event count."""
    page = run_cli("--store", url, "ls", "--json", "--limit", "1000", cwd=cwd).json()
    return {item["id"]: item["eventCount"] for item in page["items"]}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("delay", DELAYS)
def test_a_stopped_fork_reports_exactly_what_was_stored(
    big_store: tuple[str, Path], signum: signal.Signals, delay: float
) -> None:
    url, directory = big_store
    child = f"child-{signum.name}-{delay}"
    code, stdout, stderr = run_and_stop(
        ["--store", url, "fork", "big", "--id", child],
        directory,
        directory / "agentlog.db",
        signum,
        delay,
    )
    counts = stored_counts(url, directory)
    stored = child in counts
    if code == 0:  # the fork finished before the signal arrived
        assert stored
        assert stdout == f"{child}\n"
        return
    assert code == 130, stderr
    assert stderr.count("\n") == 1, stderr
    assert "Traceback" not in stderr
    assert "mismatch" not in stderr
    if stored:
        assert stderr == f"interrupted by {signum.name}; stored: {child}\n"
        # What was stored is whole: the child holds every event of the seed.
        assert counts[child] == counts["big"]
    else:
        assert stderr == f"interrupted by {signum.name}; nothing was stored\n"


def test_a_stopped_read_is_one_line_and_exit_130(
    big_store: tuple[str, Path],
) -> None:
    url, directory = big_store
    code, _, stderr = run_and_stop(
        ["--store", url, "export", "big"],
        directory,
        directory / "agentlog.db",
        signal.SIGTERM,
        0.2,
    )
    if code != 0:
        assert (code, stderr) == (130, "interrupted by SIGTERM\n")


@pytest.mark.parametrize(
    ("delay", "mid_store"), [*((delay, False) for delay in DELAYS), (0.0, True)]
)
def test_a_stopped_import_names_the_session_in_progress(
    big_store: tuple[str, Path], tmp_path: Path, delay: float, mid_store: bool
) -> None:
    """``mid_store`` signals once the import has committed its first batch: the
    report must then name the session and the events it holds so far."""
    url, directory = big_store
    store_file = directory / "agentlog.db"
    log = tmp_path / "big.jsonl"
    log.write_bytes(
        run_cli("--store", url, "export", "big", cwd=directory).ok().raw_stdout
    )
    before = stored_counts(url, directory)
    code, stdout, stderr = run_and_stop(
        ["--store", url, "import", "--new-id", str(log)],
        directory,
        store_file,
        signal.SIGINT,
        delay,
        rows_past=event_rows(store_file) if mid_store else None,
    )
    after = stored_counts(url, directory)
    new = {name: count for name, count in after.items() if name not in before}
    if code == 0:
        assert list(new) == [stdout.strip()]
        return
    assert code == 130, stderr
    assert stderr.count("\n") == 1, stderr
    if not new:
        assert not mid_store
        assert stderr == "interrupted by SIGINT; nothing was stored\n"
        return
    ((session_id, count),) = new.items()
    assert stderr == f"interrupted by SIGINT; stored: {session_id} ({count} events)\n"


def test_a_stopped_demo_is_one_line_and_exit_130(tmp_path: Path) -> None:
    """Commands without a store report of their own still stop in one line."""
    store_file = tmp_path / "agentlog.db"
    code, _, stderr = run_and_stop(
        ["--store", f"sqlite:///{store_file}", "demo"],
        tmp_path,
        store_file,
        signal.SIGINT,
        0.0,
    )
    if code != 0:
        assert (code, stderr) == (130, "interrupted by SIGINT\n")


def test_after_a_stop_signal_cleanup_errors_are_logged_not_printed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A signal between a pooled connection's checkout and its block leaves the
    cleanup to garbage collection, after the store closed: CI saw "Exception
    ignored in <generator object SQLiteDatastore.get_connection>" after the line."""
    import sys

    from agentlog.infrastructure.cli import interrupt

    printed: list[object] = []  # what Python's default hook would print
    monkeypatch.setattr(sys, "unraisablehook", printed.append)
    with pytest.raises(interrupt.Interrupted):
        interrupt._raise_interrupted(signal.SIGTERM, None)

    class FailsWhenCollected:
        def __del__(self) -> None:
            raise RuntimeError("Pool is closed")

    FailsWhenCollected()
    assert printed == []
    assert capsys.readouterr().err == ""
