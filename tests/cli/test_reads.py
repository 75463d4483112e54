"""Every read, human and ``--json``, on the sessions ``agentlog demo`` wrote."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from agentlog.infrastructure.cli.demo.agent import COMPACT_PREAMBLE
from tests.cli.conftest import run_cli

if TYPE_CHECKING:
    from pathlib import Path

    from tests.cli.conftest import Store


pytestmark = pytest.mark.slow  # every test runs the agentlog command in a process

MAIN_EVENTS = 157
FORK_EVENTS = 161
CHECKPOINT = 77
SHADOWED = [1, 3, 26, 29, 30, 32, 46, 48, 57, 59, 70]


def test_ls_lists_newest_first_with_titles(demo_store: Store) -> None:
    main, fork = demo_store.ids["main"], demo_store.ids["fork"]
    human = demo_store("ls").ok().stdout
    assert main in human
    assert fork in human
    assert human.index(fork) < human.index(main)
    assert f"Add a /health endpoint to (fork of {main[:8]})" in human

    page = demo_store("ls", "--json").json()
    assert set(page) == {"items", "nextCursor"}
    rows = {item["id"]: item for item in page["items"]}
    assert rows[main]["eventCount"] == MAIN_EVENTS
    assert rows[fork]["eventCount"] == FORK_EVENTS
    assert rows[fork]["parentSession"] == main
    assert rows[main]["title"] == "Add a /health endpoint to"
    assert rows[main]["firstPrompt"].startswith("Add a /health endpoint")
    assert rows[main]["header"]["cwd"] == "/workspace/weather-api"
    assert {"createdAt", "updatedAt", "live", "persisted"} <= set(rows[main])
    assert rows[main]["persisted"] is True
    assert rows[main]["live"] is False


def test_ls_pages_with_a_cursor(demo_store: Store) -> None:
    first = demo_store("ls", "--limit", "1", "--json").json()
    assert len(first["items"]) == 1
    assert first["nextCursor"]
    second = demo_store("ls", "--limit", "1", "--cursor", first["nextCursor"], "--json")
    assert second.json()["items"][0]["id"] != first["items"][0]["id"]
    human = demo_store("ls", "--limit", "1").ok().stdout
    assert "more: agentlog --store " in human  # run as printed: the same store
    assert f" ls --limit 1 --cursor {first['nextCursor']}" in human


def test_show_marks_every_event(demo_store: Store) -> None:
    main = demo_store.ids["main"]
    human = demo_store("show", main).ok().stdout
    assert f"session  {main}" in human
    assert "title    Add a /health endpoint to" in human
    assert "cwd      /workspace/weather-api" in human
    assert f"{MAIN_EVENTS} events" in human
    flat = " ".join(human.split())  # column widths follow the widest row
    assert "1 shadowed user/message" in flat
    assert "replaced by 77" in flat
    assert "0 log-only turn/start turn 1 · message from user" in flat
    assert "156 log-only turn/end turn 3 · interrupted" in flat
    assert "log-only assistant/chunk ×" in flat  # each streamed reply is one row

    shown = demo_store("show", main, "--json").json()
    assert set(shown) == {"session", "title", "events"}
    assert shown["session"]["id"] == main
    assert shown["title"]["title"] == "Add a /health endpoint to"
    assert shown["title"]["messageSeqs"] == [1]
    assert shown["title"]["source"] == {"kind": "fallback"}
    events = shown["events"]
    assert len(events) == MAIN_EVENTS
    assert set(events[1]) == {"sessionId", "seq", "type", "time", "surface"}
    assert events[1]["surface"] == "shadowed"
    assert events[CHECKPOINT]["surface"] == "current"
    assert [e["seq"] for e in events if e["surface"] == "shadowed"] == SHADOWED


def test_messages_are_the_derived_history(demo_store: Store) -> None:
    main = demo_store.ids["main"]
    messages = demo_store("messages", main, "--json").json()
    assert len(messages) == 12
    assert [m["role"] for m in messages[:3]] == ["user", "user", "assistant"]
    assert messages[0]["content"][0]["text"].startswith(COMPACT_PREAMBLE)
    last = messages[-1]["content"][0]
    assert last["type"] == "tool-result"
    assert last["isError"] is True
    assert demo_store("messages", main, "--last", "2", "--json").json() == messages[-2:]

    human = demo_store("messages", main).ok().stdout
    assert "#3 assistant\n   (reasoning) Middleware is registered" in human
    assert "← call_8: Tool call interrupted by a crash" in human

    forked = demo_store("messages", demo_store.ids["fork"], "--json").json()
    assert forked[-1]["content"][0]["text"].startswith("The fast tests pass")


def test_surface_is_in_model_history_order(demo_store: Store) -> None:
    main = demo_store.ids["main"]
    snapshot = demo_store("surface", main, "--json").json()
    assert set(snapshot) == {"session", "capturedThroughSeq", "events"}
    assert snapshot["capturedThroughSeq"] == MAIN_EVENTS - 1
    seqs = [event["seq"] for event in snapshot["events"]]
    assert seqs[:3] == [CHECKPOINT, 74, 100]
    assert snapshot["events"][0]["surfaceOp"] == {
        "op": "replace",
        "start": 1,
        "end": 70,
    }
    human = demo_store("surface", main).ok().stdout
    assert f"12 events · captured through seq {MAIN_EVENTS - 1}" in human
    assert human.index(f"   {CHECKPOINT}   user/message") < human.index("   74   ")


def test_event_shows_a_window_and_the_target(demo_store: Store) -> None:
    main = demo_store.ids["main"]
    window = demo_store(
        "event", main, str(CHECKPOINT), "--before", "2", "--after", "1", "--json"
    ).json()
    assert set(window) == {"session", "target", "events", "startSeq", "endSeq"}
    assert (window["startSeq"], window["endSeq"]) == (75, 78)
    assert window["target"]["seq"] == CHECKPOINT
    assert [e["type"] for e in window["events"]] == [
        "compact/start",
        "compact/summary",
        "user/message",
        "compact/end",
    ]
    human = demo_store("event", main, "76").ok().stdout
    assert "compact/summary   11 events, ~" in human
    assert '"shadowedSeqs": [' in human


def test_trace_shows_the_lineage(demo_store: Store) -> None:
    main, fork = demo_store.ids["main"], demo_store.ids["fork"]
    down = demo_store("trace", main, "--json").json()
    assert down["complete"] is True
    assert down["ancestors"] == []
    assert down["root"]["header"]["id"] == main
    assert [node["session"]["header"]["id"] for node in down["descendants"]] == [fork]

    up = demo_store("trace", fork, "--json").json()
    assert [record["header"]["id"] for record in up["ancestors"]] == [main]
    assert up["target"]["header"]["seedLength"] == 133

    human = demo_store("trace", fork).ok().stdout
    assert human.index(main) < human.index(fork)
    assert f"{fork}  " in human
    assert "forked with 133 events  ◀ this session" in human


def test_trace_event_follows_replacement_and_provenance(demo_store: Store) -> None:
    main = demo_store.ids["main"]
    shadowed = demo_store("trace-event", main, "1", "--json").json()
    assert shadowed["replacedBy"] == CHECKPOINT
    assert shadowed["replacementChain"] == [CHECKPOINT]
    assert shadowed["derivedEventSeqs"] == [CHECKPOINT]
    assert shadowed["target"]["surface"] == "shadowed"

    checkpoint = demo_store("trace-event", main, str(CHECKPOINT), "--json").json()
    assert "replacedBy" not in checkpoint
    assert checkpoint["replacedEventSeqs"] == SHADOWED
    assert checkpoint["sourceEventSeqs"] == [75, 76, *SHADOWED]

    human = demo_store("trace-event", main, "1").ok().stdout
    assert "replaced by        77" in human
    assert "surface            shadowed" in human


READS_OF_A_SESSION = [
    ["show", "missing"],
    ["show", "missing", "--json"],
    ["messages", "missing"],
    ["surface", "missing", "--json"],
    ["event", "missing", "0"],
    ["trace", "missing"],
    ["trace-event", "missing", "0", "--json"],
    ["export", "missing"],
    ["repair", "missing"],
]


ONLY_SQLITE = pytest.mark.parametrize("demo_store", ["sqlite"], indirect=True)
"""For the command line's own logic; the backends get a sample of the same paths."""


@ONLY_SQLITE
def test_a_missing_session_is_one_line_and_exit_1(demo_store: Store) -> None:
    for args in READS_OF_A_SESSION:
        result = demo_store(*args)
        assert result.returncode == 1, result
        assert result.stderr == 'session "missing" not found\n', result
        assert result.stdout == ""


@ONLY_SQLITE
def test_query_errors_print_the_spec_message(demo_store: Store) -> None:
    main = demo_store.ids["main"]
    cases = {
        ("event", main, "9999"): f'session "{main}" has no event at seq 9999',
        ("trace-event", main, "9999"): f'session "{main}" has no event at seq 9999',
        ("fork", "missing"): 'session "missing" not found',
        ("fork", main, "--at", "5"): (
            f'fork boundary 5 in session "{main}" must be turn/end, got step/start'
        ),
        ("ls", "--cursor", "nonsense"): "invalid listing cursor 'nonsense'",
    }
    for args, message in cases.items():
        result = demo_store(*args)
        assert (result.returncode, result.stderr) == (1, message + "\n"), result


def test_errors_are_the_same_on_every_backend(demo_store: Store) -> None:
    main = demo_store.ids["main"]
    cases = {
        ("show", "missing", "--json"): 'session "missing" not found',
        ("messages", "missing"): 'session "missing" not found',
        ("event", main, "9999"): f'session "{main}" has no event at seq 9999',
        ("fork", main, "--at", "0"): (
            f'fork boundary 0 in session "{main}" must be turn/end, got turn/start'
        ),
    }
    for args, message in cases.items():
        result = demo_store(*args)
        assert (result.returncode, result.stderr) == (1, message + "\n"), result


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["import", "--set", "cwd", "file.jsonl"],
        ["bogus"],
        ["event", "some-id", "not-a-number"],
        ["ls", "--limit", "0"],
        ["import"],
        ["show"],
        ["ls", "--nope"],
        ["messages", "x", "--last", "-1"],
        ["event", "x", "3", "--before", "51"],
        ["event", "x", "3", "--after", "-1"],
        ["event", "x", "99999999999999999999999"],
        ["trace-event", "x", "-1"],
        ["fork", "x", "--at", "99999999999999999999999"],
        ["ls", "--limit", "99999999999999999999999"],
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, args: list[str]) -> None:
    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 2, result
    # Without a command the help goes to stdout; every other usage error to stderr.
    assert "Usage:" in (result.stdout if not args else result.stderr)
    assert "Traceback" not in result.stderr


def test_messages_and_surface_at_a_seq_read_the_past(demo_store: Store) -> None:
    main = demo_store.ids["main"]
    before = demo_store("messages", main, "--at", str(CHECKPOINT - 1), "--json").json()
    after = demo_store("messages", main, "--at", str(CHECKPOINT), "--json").json()
    assert len(before) > len(after)  # the compaction shrank what the model sees
    assert after[0]["content"][0]["text"].startswith(COMPACT_PREAMBLE)
    now = demo_store("messages", main, "--json").json()
    last = demo_store("messages", main, "--at", str(MAIN_EVENTS - 1), "--json")
    assert last.json() == now

    snapshot = demo_store("surface", main, "--at", str(CHECKPOINT - 1), "--json")
    surface = snapshot.json()
    assert surface["capturedThroughSeq"] == CHECKPOINT - 1
    seqs = [event["seq"] for event in surface["events"]]
    assert set(SHADOWED) <= set(seqs)
    assert all(seq < CHECKPOINT for seq in seqs)
    human = demo_store("surface", main, "--at", str(CHECKPOINT - 1)).ok().stdout
    assert f"captured through seq {CHECKPOINT - 1}" in human

    past = demo_store("messages", main, "--at", str(MAIN_EVENTS))
    assert past.returncode == 1
    assert f"has no event at seq {MAIN_EVENTS}" in past.stderr
    past = demo_store("surface", main, "--at", str(MAIN_EVENTS))
    assert past.returncode == 1
    assert f"has no event at seq {MAIN_EVENTS}" in past.stderr
