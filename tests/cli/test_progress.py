"""Long commands show a progress bar on a terminal's stderr, and nothing elsewhere.

The bar appears once a command has run ``AGENTLOG_PROGRESS_AFTER`` seconds (1 by
default); the tests set 0, so they do not depend on how fast this machine forks.
With stderr on a pseudo-terminal the bar appears (its label and the elapsed time);
with stderr on a pipe, stderr holds only the one summary line. Quick commands with
the default never show a bar (their exact output is checked in the other tests).
"""

from __future__ import annotations

import os
import pty
import subprocess
from typing import TYPE_CHECKING

from tests.cli.conftest import agentlog_program, cli_env, run_cli

if TYPE_CHECKING:
    from pathlib import Path


def read_all(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the terminal closed: the process is gone
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def test_a_slow_fork_shows_a_bar_on_a_terminal(big_store: tuple[str, Path]) -> None:
    url, directory = big_store
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [*agentlog_program(), "--store", url, "fork", "big", "--id", "on-a-tty"],
        cwd=directory,
        env=cli_env(TERM="xterm-256color", AGENTLOG_PROGRESS_AFTER="0"),
        stdout=subprocess.PIPE,
        stderr=follower,
    )
    os.close(follower)
    terminal = read_all(leader)
    stdout, _ = process.communicate(timeout=180)
    os.close(leader)
    assert process.returncode == 0
    assert stdout == b"on-a-tty\n"
    assert b"forking big" in terminal
    assert b"0:00:0" in terminal  # the elapsed-time column
    assert b"forked big with" in terminal


def test_a_slow_fork_prints_no_bar_on_a_pipe(big_store: tuple[str, Path]) -> None:
    url, directory = big_store
    result = run_cli(
        "--store",
        url,
        "fork",
        "big",
        "--id",
        "on-a-pipe",
        cwd=directory,
        env=cli_env(AGENTLOG_PROGRESS_AFTER="0"),
    )
    assert result.ok().stdout == "on-a-pipe\n"
    assert result.stderr.startswith("forked big with ")
    assert result.stderr.count("\n") == 1
