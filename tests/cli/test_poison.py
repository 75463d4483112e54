"""The command line on hostile data: lone surrogates, NUL, 20,000-deep payloads.

A session holding them is listed and read losslessly through every ``--json`` read,
and every read of another session in the same store is unchanged by it.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from agentlog.domain.json import dumps, loads
from tests.cli.conftest import Store

pytestmark = pytest.mark.slow  # every test runs the agentlog command in a process

HOSTILE = "lone \ud83d and \udc00, NUL \x00, astral 😀, escape \x1b[31m"
USER = {"kind": "user"}


def log(session_id: str, text: str, extra: Any = None) -> bytes:
    """Our JSONL: a header whose cwd holds ``text``, one turn whose prompt does."""
    header = {"type": "session", "version": 0, "id": session_id, "createdAt": 7}
    header["cwd"] = "/" + text
    reply: dict[str, Any] = {
        "turn": 1,
        "step": 1,
        "content": [{"type": "text", "text": text}],
    }
    if extra is not None:
        reply["extra"] = extra
    events = [
        (
            "turn/start",
            {"turn": 1, "trigger": {"kind": "message", "source": USER}},
            None,
        ),
        (
            "user/message",
            {"content": [{"type": "text", "text": text}], "source": USER},
            "append",
        ),
        ("step/start", {"turn": 1, "step": 1}, None),
        ("assistant/message", reply, "append"),
        ("step/end", {"turn": 1, "step": 1}, None),
        ("turn/end", {"turn": 1, "reason": {"kind": "completed"}}, None),
    ]
    # Lines as our writer writes them: dumps marks text only its exact decoder
    # reads with a leading space, which a log line never carries.
    lines = [dumps(header).removeprefix(b" ")]
    for seq, (kind, data, op) in enumerate(events):
        line: dict[str, Any] = {
            "type": kind,
            "seq": seq,
            "time": 10 + seq,
            "data": data,
        }
        if op is not None:
            line["surfaceOp"] = op
        lines.append(dumps(line).removeprefix(b" "))
    return b"\n".join(lines) + b"\n"


def imported(store: Store, tmp_path: Path, data: bytes) -> str:
    path = tmp_path / f"{uuid.uuid4()}.jsonl"
    path.write_bytes(data)
    return store("import", str(path)).ok().stdout.strip()


def json_reads(store: Store, session_id: str) -> dict[str, Any]:
    """Every ``--json`` read of one session, decoded from the exact bytes printed."""
    commands = {
        "show": ["show", session_id],
        "messages": ["messages", session_id],
        "surface": ["surface", session_id],
        "event": ["event", session_id, "3", "--before", "3", "--after", "2"],
        "trace": ["trace", session_id],
        "trace-event": ["trace-event", session_id, "1"],
    }
    return {
        name: loads(store(*args, "--json").ok().raw_stdout)
        for name, args in commands.items()
    }


def test_hostile_strings_do_not_poison_the_store(store: Store, tmp_path: Path) -> None:
    good = imported(store, tmp_path, log(str(uuid.uuid4()), "plain"))
    before = json_reads(store, good)
    hostile_id = str(uuid.uuid4())
    hostile = imported(store, tmp_path, log(hostile_id, HOSTILE))
    assert hostile == hostile_id

    listing = loads(store("ls", "--json").ok().raw_stdout)["items"]
    by_id = {item["id"]: item for item in listing}
    assert by_id[hostile]["cwd"] == "/" + HOSTILE
    assert by_id[hostile]["firstPrompt"].startswith("lone \ud83d and \udc00")
    assert json_reads(store, good) == before
    for command in ("show", "surface", "messages", "trace"):
        store(command, good).ok()
    store("event", good, "1").ok()
    store("trace-event", good, "1").ok()

    store("trace", hostile).ok()
    for command in ("show", "surface", "messages", "ls"):
        args = (command,) if command == "ls" else (command, hostile)
        assert "\\ud83d" in store(*args).ok().stdout  # printed as an escape
    store("event", hostile, "1").ok()
    reads = json_reads(store, hostile)
    assert reads["surface"]["session"]["cwd"] == "/" + HOSTILE
    assert reads["event"]["target"]["data"]["content"][0]["text"] == HOSTILE
    exported = store("export", hostile).ok().raw_stdout.splitlines()
    written = log(hostile_id, HOSTILE).splitlines()
    assert loads(exported[0])["cwd"] == "/" + HOSTILE
    assert [loads(line) for line in exported[1:]] == [loads(x) for x in written[1:]]


def test_json_outputs_handle_20000_deep_data(store: Store, tmp_path: Path) -> None:
    deep: Any = "bottom"
    for _ in range(20_000):
        deep = [deep]
    session_id = imported(store, tmp_path, log(str(uuid.uuid4()), "deep", deep))
    expected = dumps(deep)
    event = store("event", session_id, "3", "--json").ok()
    assert dumps(loads(event.raw_stdout)["target"]["data"]["extra"]) == expected
    surface = store("surface", session_id, "--json").ok()
    assert dumps(loads(surface.raw_stdout)["events"][1]["data"]["extra"]) == expected
    store("show", session_id, "--json").ok()
