"""``agentlog demo``: the newcomer's first run, on every kind of store."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

from agentlog.application.query import SessionQuery
from tests.cli.conftest import run_cli

if TYPE_CHECKING:
    from pathlib import Path

    from tests.cli.conftest import Store


pytestmark = pytest.mark.slow  # every test runs the agentlog command in a process
UUID = re.compile(r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}")
SHORT_ID = re.compile(r"\(fork of [0-9a-f]{8}\)")
TIME = re.compile(r"(?:\d{4}-)?\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2})?Z?")
STORE = re.compile(r"(--)?store \S+")

STORY = [
    # what the script did, stage by stage
    "title “Add a /health endpoint to”",
    "AGENTS.md context, todos, 4 streamed steps, parallel tool calls, steering",
    "compaction replaced 11 surface events (seq 1 to 70) with the checkpoint at seq 77",
    "turn 3: flushed mid-step at seq 153 (one tool still running), then the process crashes",
    "get_session repaired the open turn by appending an interrupted tool/result "
    "for call_8, step/end, turn/end (interrupted)",
    "inherits seqs 0..132 (up to turn 2's end)",
    # the derived history: the checkpoint first, the repaired result last
    "Derived message history of",
    "#1 user\n   This is an automatically generated checkpoint",
    "<compacted-summary>",
    '→ read_file({"path":"api/app.py"})',
    "#12 user\n   ← call_8: Tool call interrupted by a crash; no result was recorded.",
    # the surface with its marks
    "23 message events, current and shadowed (134 log-only events not shown)",
    "shadowed   user/message        Add a /health endpoint",
    "replaced by 77",
    "current    user/message        [compact] This is an automatically generated",
    "current    tool/result         call_8 (error): Tool call interrupted",
    # the listing and the lineage
    "Listing (this demo's sessions)",
    "Add a /health endpoint to (fork of",
    "Lineage",
    "◀ this session",
    "forked with 133 events",
]


def masked(output: str) -> str:
    """The output without what may differ between runs: ids, times, the store."""
    output = SHORT_ID.sub("(fork of <id>)", UUID.sub("<id>", output))
    return STORE.sub("store <url>", TIME.sub("<time>", output))


def test_demo_runs_the_whole_story(demo_store: Store) -> None:
    output = demo_store.demo_output
    for fragment in STORY:
        assert fragment in output, fragment
    main, fork = demo_store.ids["main"], demo_store.ids["fork"]
    assert main in output
    assert fork in output
    assert f" show {main}\n" in output
    assert f" messages {fork}\n" in output
    assert "Traceback" not in output


@pytest.mark.parametrize("store", ["sqlite"], indirect=True)
def test_demo_is_deterministic_apart_from_ids_and_times(store: Store) -> None:
    first = store("demo").ok()
    second = store("demo").ok()
    assert first.stderr == second.stderr == ""
    assert masked(first.stdout) == masked(second.stdout)
    # A second run adds two sessions next to the first two.
    assert len(store("ls", "--json").json()["items"]) == 4


def test_demo_runs_in_memory(tmp_path: Path) -> None:
    result = run_cli("--store", "memory:", "demo", cwd=tmp_path).ok()
    for fragment in STORY:
        assert fragment in result.stdout, fragment
    assert "The memory: store is gone when this process exits." in result.stdout
    assert list(tmp_path.iterdir()) == []


def test_demo_writes_to_agentlog_db_in_the_current_directory(tmp_path: Path) -> None:
    result = run_cli("demo", cwd=tmp_path).ok()
    assert "agentlog demo · store sqlite:///agentlog.db" in result.stdout
    assert (tmp_path / "agentlog.db").is_file()
    assert "  agentlog ls\n" in result.stdout


def test_a_demo_stopped_mid_script_saves_nothing_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop signal in the middle of the script leaves events pending; the
    application that held them must not store them when it is garbage-collected
    (its ``close()`` flushes): CI once saw "Exception ignored in
    Application.__del__" printed after the one line, from such a flush."""
    import gc
    import sys

    from agentlog.application.sessions import Sessions
    from agentlog.infrastructure.cli.demo.script import run_demo
    from agentlog.infrastructure.cli.interrupt import Interrupted
    from agentlog.infrastructure.store import open_sessions

    real_flush = Sessions.flush
    flushes: list[int] = []  # counts only: a handle kept here would keep its app

    def stop_at_second_flush(self: Sessions, handle: object = None) -> None:
        flushes.append(1)
        if len(flushes) == 2:
            raise Interrupted(2)  # SIGINT as turn 2's flush begins
        real_flush(self, handle)  # type: ignore[arg-type]

    unraisable: list[object] = []
    url = f"sqlite:///{tmp_path / 'agentlog.db'}"
    monkeypatch.setattr(Sessions, "flush", stop_at_second_flush)
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    stopped = False
    try:
        run_demo(url, narrate=lambda _: None)
    except Interrupted:
        stopped = True  # the traceback (and the frames holding the app) goes here
    assert stopped
    gc.collect()
    monkeypatch.undo()
    assert unraisable == []
    reader = open_sessions(url)
    try:
        ((session,),) = [[r.header["id"] for r in SessionQuery(reader).list_sessions()]]
        events = reader.read_events(session)
        assert events[-1]["type"] == "turn/end"  # turn 1 only: turn 2 never stored
        assert sum(1 for e in events if e["type"] == "turn/start") == 1
    finally:
        reader.close()
