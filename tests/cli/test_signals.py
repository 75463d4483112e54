"""SIGINT and SIGTERM stop a command cleanly: exit 130, one line, and that line is
exactly what the store holds afterwards (nothing flushed after the signal).

Real signals go to the installed console script. When a signal lands is up to the
scheduler, so no test asserts which side of the commit it hit; each asserts that
the report matches the store, whichever it was. The signal is sent once the process
has the store file open (read from ``/proc``), so the handlers are installed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import TYPE_CHECKING

import pytest

from agentlog.infrastructure.cli.demo.agent import ScriptedAgent
from agentlog.infrastructure.store import open_sessions
from tests.cli.conftest import agentlog_program, cli_env, run_cli

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.skipif(
    not os.path.isdir("/proc/self/fd"), reason="reads /proc to see the store open"
)

TURNS = 600
"""About 32,000 events: a fork copying them runs for a few seconds."""
DELAYS = [0.0, 0.3, 1.0, 2.0]


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    directory = tmp_path_factory.mktemp("signals")
    url = f"sqlite:///{directory / 'agentlog.db'}"
    app = open_sessions(url)
    handle = app.create_session(session_id="big")
    agent = ScriptedAgent(handle)
    for turn in range(TURNS):
        agent.start_turn(f"prompt {turn}")
        for step in range(5):
            agent.model_step(text=f"answer {turn}.{step} " * 4)
            agent.end_step()
        agent.end_turn()
        if turn % 100 == 0:
            app.flush(handle)
    app.close()
    return url, directory


def run_and_stop(
    args: list[str], cwd: Path, store_file: Path, signum: int, delay: float
) -> tuple[int, str, str]:
    """Start ``agentlog``; once it has the store open, wait ``delay``, signal it."""
    process = subprocess.Popen(
        [*agentlog_program(), *args],
        cwd=cwd,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_until_open(process, store_file)
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
