"""``import``, ``export``, ``fork`` and ``repair``: each on a fresh store."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from tests.formats.samples import FIXTURES

if TYPE_CHECKING:
    from pathlib import Path

    from tests.cli.conftest import Store


pytestmark = pytest.mark.slow  # every test runs the agentlog command in a process

SEED_ERA = FIXTURES / "seed-era"
WITH_IDS = {
    "multi-turn--session.jsonl": "228b7b82-84ed-49b7-a567-981c03b28c77",
    "subagent-fork--session.1.jsonl": "ada8966c-9fa3-441b-8721-37ff1e795e6a",
    "todo-plan--session.jsonl": "b0f1f758-dcf0-474e-851d-e62c11ec0a09",
    "tool-call-turn--session.jsonl": "e9421ff4-baae-4807-a7ea-fd8a65f2c897",
}
MULTI_TURN = WITH_IDS["multi-turn--session.jsonl"]
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ONLY_SQLITE = pytest.mark.parametrize("store", ["sqlite"], indirect=True)
"""For the command line's own logic; the other tests run on every backend."""


def import_multi_turn(store: Store) -> str:
    store("import", str(SEED_ERA / "multi-turn--session.jsonl")).ok()
    return MULTI_TURN


def turn_ends(store: Store, session_id: str) -> list[int]:
    events = store("show", session_id, "--json").json()["events"]
    return [event["seq"] for event in events if event["type"] == "turn/end"]


def write_log(path: Path, lines: list[dict[str, object]]) -> Path:
    compact = {"separators": (",", ":"), "ensure_ascii": False}
    path.write_text("".join(json.dumps(line, **compact) + "\n" for line in lines))
    return path


def read_log(data: bytes) -> list[dict[str, object]]:
    return [json.loads(line) for line in data.decode().splitlines()]


def test_import_prints_each_new_id(store: Store) -> None:
    files = [str(SEED_ERA / name) for name in WITH_IDS]
    result = store("import", *files).ok()
    assert result.stdout.split() == list(WITH_IDS.values())
    # What could not be mapped exactly is reported per file, as warnings.
    assert "multi-turn--session.jsonl: warning: placeholder {{system}}" in result.stderr
    listed = {item["id"] for item in store("ls", "--json").json()["items"]}
    assert listed == set(WITH_IDS.values())


def test_import_fills_placeholders_and_reads_harness_logs(store: Store) -> None:
    harness = FIXTURES / "harness-head" / "apps--web--steering--session.jsonl"
    result = store(
        "import", "--set", "cwd=/srv/web", "--set", "sessionId=steering", str(harness)
    ).ok()
    assert result.stdout == "steering\n"
    assert "events had no seq" in result.stderr
    shown = store("show", "steering", "--json").json()
    assert shown["session"]["cwd"] == "/srv/web/workspace"


@ONLY_SQLITE
def test_import_reports_failures_per_file_and_goes_on(
    store: Store, tmp_path: Path
) -> None:
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("not json\n")
    good = SEED_ERA / "todo-plan--session.jsonl"
    placeholder = SEED_ERA / "cancel--session.jsonl"
    result = store("import", str(garbage), str(good), str(placeholder), "nope.jsonl")
    assert result.returncode == 1
    assert result.stdout == WITH_IDS["todo-plan--session.jsonl"] + "\n"
    errors = result.stderr.splitlines()
    assert f"{garbage}: corrupt session log: header line is not valid JSON" in errors
    assert (
        f'{placeholder}: line 1: the session id "{{{{sessionId}}}}" is a placeholder,'
        " not an id; import it under a new id (agentlog import --new-id)" in errors
    )
    assert "nope.jsonl: No such file or directory" in errors
    # The same log again is refused: its id already has a stored log.
    again = store("import", str(good))
    assert again.returncode == 1
    assert again.stderr == (
        f'{good}: session "{WITH_IDS["todo-plan--session.jsonl"]}" already exists;'
        " use --new-id to import it as a new session\n"
    )


@ONLY_SQLITE
def test_import_json_and_strict(store: Store, tmp_path: Path) -> None:
    outside = write_log(
        tmp_path / "outside.jsonl",
        [
            {
                "type": "session",
                "version": 0,
                "id": "loose",
                "createdAt": 1,
                "delegationDepth": 0,
            },
            {"type": "todo/write", "seq": 0, "time": 1, "data": {"todos": []}},
        ],
    )
    strict = store("import", "--strict", "--json", str(outside))
    assert strict.returncode == 1
    (entry,) = json.loads(strict.stdout)
    assert entry["file"] == str(outside)
    assert entry["error"].startswith(
        "line 2: invariant violated: todo/write appended outside"
    )
    assert strict.stderr == ""
    relaxed = store("import", "--json", str(outside)).json()
    assert relaxed == [
        {"file": str(outside), "sessionId": "loose", "events": 1, "report": []}
    ]


def test_export_round_trips(store: Store, tmp_path: Path) -> None:
    session_id = import_multi_turn(store)
    exported = store("export", session_id).ok()
    header, *events = read_log(exported.raw_stdout)
    assert header["type"] == "session"
    assert header["id"] == session_id
    assert [event["seq"] for event in events] == list(range(len(events)))

    target = tmp_path / "copy.jsonl"
    written = store("export", session_id, "-o", str(target)).ok()
    assert target.read_bytes() == exported.raw_stdout
    assert written.stderr == f"wrote {target} ({len(events)} events)\n"
    assert store("export", session_id, "--zstd").ok().raw_stdout.startswith(ZSTD_MAGIC)
    compressed = tmp_path / "copy.jsonl.zstd"
    store("export", session_id, "-o", str(compressed)).ok()
    assert compressed.read_bytes().startswith(ZSTD_MAGIC)

    # Re-imported under another id, the log is the same.
    lines = read_log(exported.raw_stdout)
    lines[0]["id"] = "copy"
    store("import", str(write_log(tmp_path / "renamed.jsonl", lines))).ok()
    again = read_log(store("export", "copy").ok().raw_stdout)
    assert again[1:] == events
    bad = store("export", session_id, "-o", str(tmp_path / "no" / "such" / "dir.jsonl"))
    assert bad.returncode == 1
    assert f"no such folder: {tmp_path / 'no' / 'such'}" in bad.stderr
    assert len(bad.stderr.splitlines()) == 1


def test_fork_at_a_turn_end(store: Store) -> None:
    session_id = import_multi_turn(store)
    ends = turn_ends(store, session_id)
    child = store("fork", session_id).ok()
    child_id = child.stdout.strip()
    assert child.stderr == f"forked {session_id} with {ends[-1] + 1} events\n"
    trace = store("trace", child_id, "--json").json()
    assert [r["header"]["id"] for r in trace["ancestors"]] == [session_id]

    header = store("fork", session_id, "--at", str(ends[0]), "--id", "early", "--json")
    assert header.json()["id"] == "early"
    assert header.json()["parentSession"] == session_id
    assert header.json()["seedLength"] == ends[0] + 1
    events = store("show", "early", "--json").json()["events"]
    assert len(events) == ends[0] + 1

    taken = store("fork", session_id, "--id", "early")
    assert (taken.returncode, taken.stderr) == (1, 'session "early" already exists\n')
    beyond = store("fork", session_id, "--at", "9999")
    assert beyond.returncode == 1
    assert beyond.stderr.startswith(
        f'fork boundary 9999 does not exist in session "{session_id}"'
    )
    listed = {item["id"] for item in store("ls", "--json").json()["items"]}
    assert listed == {session_id, child_id, "early"}


def test_repair_closes_an_open_turn(store: Store, tmp_path: Path) -> None:
    session_id = import_multi_turn(store)
    lines = read_log(store("export", session_id).ok().raw_stdout)
    # Cut the log inside its last turn, after a step opened: a crashed writer.
    last_start = max(i for i, line in enumerate(lines) if line["type"] == "turn/start")
    cut = next(
        i for i in range(last_start, len(lines)) if lines[i]["type"] == "step/start"
    )
    crashed = [{**lines[0], "id": "crashed"}, *lines[1 : cut + 2]]
    store("import", str(write_log(tmp_path / "crashed.jsonl", crashed))).ok()

    closers = store("repair", "crashed", "--json").json()
    assert [event["type"] for event in closers][-2:] == ["step/end", "turn/end"]
    assert closers[-1]["data"]["reason"] == {"kind": "interrupted"}
    assert closers[0]["seq"] == len(crashed) - 1

    again = store("repair", "crashed").ok()
    assert again.stdout == "crashed: nothing to repair (no open turn)\n"
    shown = store("show", "crashed").ok().stdout
    assert "turn/end" in shown
    assert "interrupted" in shown


@ONLY_SQLITE
def test_repair_output_lists_the_closers(store: Store, tmp_path: Path) -> None:
    lines = [
        {
            "type": "session",
            "version": 0,
            "id": "open",
            "createdAt": 5,
            "delegationDepth": 0,
        },
        {
            "type": "turn/start",
            "seq": 0,
            "time": 7,
            "data": {
                "turn": 1,
                "trigger": {"kind": "message", "source": {"kind": "user"}},
            },
        },
    ]
    store("import", str(write_log(tmp_path / "open.jsonl", lines))).ok()
    human = store("repair", "open").ok().stdout
    assert "repaired open: appended" in human
    assert "turn 1 · interrupted" in human
