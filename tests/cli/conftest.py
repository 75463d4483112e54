"""Stores and a runner for the command-line tests: every command runs in a real process.

Each test gets a fresh store (a SQLite file in its temporary directory, or its own
PostgreSQL schema given through the store URL's ``?schema=``, dropped afterwards).
The read-only tests share one store per backend that ``agentlog demo`` filled.
With ``CI=true`` an unreachable PostgreSQL fails the test instead of skipping it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agentlog.infrastructure.cli.demo.agent import ScriptedAgent
from agentlog.infrastructure.store import open_sessions
from tests.conftest import PG_URL, postgres_schema

if TYPE_CHECKING:
    from collections.abc import Iterator

REPO_ROOT = Path(__file__).resolve().parents[2]
CONSOLE_SCRIPT = Path(sys.executable).with_name("agentlog")
"""The installed ``agentlog`` beside this interpreter (a venv's ``bin``)."""
CLI_BACKENDS = ["sqlite", "postgres"]
TIMEOUT = 180


@dataclass(frozen=True)
class Result:
    """What one ``agentlog`` process did."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    raw_stdout: bytes = b""

    def json(self) -> Any:
        assert self.returncode == 0, self
        return json.loads(self.stdout)

    def ok(self) -> Result:
        assert self.returncode == 0, self
        assert "Traceback" not in self.stderr, self.stderr
        return self


def cli_env(**extra: str) -> dict[str, str]:
    """The test process's environment, without a store choice, wide output."""
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOG_STORE"}
    env.update(COLUMNS="200", PYTHONIOENCODING="utf-8")
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])
    )
    env.update(extra)
    return env


def run_cli(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    program: list[str] | None = None,
) -> Result:
    """Run the command line in a new process: the installed console script, as a
    user runs it (``python -m agentlog.infrastructure.cli`` where none is installed)."""
    command = program or agentlog_program()
    process = subprocess.run(
        [*command, *args],
        cwd=cwd,
        env=env or cli_env(),
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    return Result(
        args=tuple(args),
        returncode=process.returncode,
        stdout=process.stdout.decode("utf-8", "replace"),
        stderr=process.stderr.decode("utf-8", "replace"),
        raw_stdout=process.stdout,
    )


def agentlog_program() -> list[str]:
    if CONSOLE_SCRIPT.exists():
        return [str(CONSOLE_SCRIPT)]
    return [sys.executable, "-m", "agentlog.infrastructure.cli"]


def catching_stop_signals() -> None:
    """``preexec_fn`` for a process a test stops with SIGINT: SIGINT and SIGTERM
    at their defaults, as in a terminal. A test run started in the background
    (``pytest ... &`` from a script) has SIGINT ignored, every child inherits
    that, and ``agentlog`` keeps a signal ignored at start ignored: the test would
    see the command finish instead of stop."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)


@dataclass
class Store:
    """A store URL and a working directory to run ``agentlog`` against it."""

    backend: str
    url: str
    cwd: Path
    ids: dict[str, str] = field(default_factory=dict)
    demo_output: str = ""

    def __call__(self, *args: str, env: dict[str, str] | None = None) -> Result:
        return run_cli("--store", self.url, *args, cwd=self.cwd, env=env)


def postgres_schema_url() -> Iterator[str]:
    """A store URL for a fresh schema on the test server; dropped afterwards."""
    for schema in postgres_schema("cli_"):
        separator = "&" if "?" in PG_URL else "?"
        yield f"{PG_URL}{separator}schema={schema}"


def make_store(backend: str, directory: Path) -> Iterator[Store]:
    if backend == "sqlite":
        yield Store(backend, f"sqlite:///{directory / 'agentlog.db'}", directory)
    else:
        for url in postgres_schema_url():
            yield Store(backend, url, directory)


@pytest.fixture(params=CLI_BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A fresh, empty store for one test."""
    yield from make_store(str(request.param), tmp_path)


@pytest.fixture(scope="session", params=CLI_BACKENDS)
def demo_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    """A store ``agentlog demo`` wrote once, for the read-only tests to share."""
    directory = tmp_path_factory.mktemp(f"demo-{request.param}")
    for shared in make_store(str(request.param), directory):
        demo = shared("demo").ok()
        shared.demo_output = demo.stdout
        items = shared("ls", "--json").json()["items"]
        (fork,) = [item for item in items if "parentSession" in item]
        shared.ids = {"main": fork["parentSession"], "fork": fork["id"]}
        yield shared


TURNS = 600
"""About 32,000 events: a fork copying them runs for a few seconds."""


@pytest.fixture(scope="session")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """A SQLite store holding one long session, ``big``, for slow commands."""
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
