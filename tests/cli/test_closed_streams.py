"""A command started with stdin or stdout closed (``<&-``, ``>&-``): no
traceback. Output to a closed stdout is discarded, as for every other line the
command line prints; a closed stdin reads as empty. The descriptor is opened on
the null device first, so a database opened next can never land on it.

Was: ``agentlog gc --older-than 0s --json >&-`` erased, then failed with
``AttributeError: 'NoneType' object has no attribute 'flush'`` (exit 1), and
``agentlog import - <&-`` with ``... has no attribute 'buffer'``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import agentlog_program, cli_env

pytestmark = pytest.mark.slow  # every test runs the agentlog command in a process


def run_closed(fd: int, *args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*agentlog_program(), *args],
        cwd=cwd,
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=120,
        check=False,
        preexec_fn=lambda: os.close(fd),
    )


def test_closed_stdout_and_stdin_are_no_traceback(tmp_path: Path) -> None:
    store = ["--store", f"sqlite:///{tmp_path / 'agentlog.db'}"]
    assert run_closed(1, *store, "demo", cwd=tmp_path).returncode == 0
    for command in (["ls", "--json"], ["erasures", "--json"], ["search", "health"]):
        result = run_closed(1, *store, *command, cwd=tmp_path)
        assert (result.returncode, result.stderr) == (0, b""), command
    gc = run_closed(1, *store, "gc", "--older-than", "0s", "--json", cwd=tmp_path)
    assert (gc.returncode, gc.stderr) == (0, b"")
    imported = run_closed(0, *store, "import", "-", cwd=tmp_path)
    assert imported.returncode == 1
    assert b"Traceback" not in imported.stderr
    assert len(imported.stderr.splitlines()) == 1
