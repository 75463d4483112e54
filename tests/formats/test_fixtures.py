"""The real logs of the original harness decode, and mean what they meant there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentlog.application import Sessions
from agentlog.domain.json import loads
from agentlog.infrastructure.formats.jsonl import (
    decode_harness_log,
    decode_log,
    detect_format,
    encode_log,
    import_log,
)
from tests.formats.samples import (
    CWD,
    HARNESS_HEAD,
    SEED_ERA,
    SUBSTITUTIONS,
    substituted,
)

CHUNK_ROWS = {"text-chunks", "reasoning-chunks", "tool-call-chunks"}


def memory_app() -> Sessions:
    return Sessions(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})


def ids(paths: list[Path]) -> list[str]:
    return [path.name.removesuffix(".jsonl") for path in paths]


def test_the_fixture_directories_are_not_empty() -> None:
    assert len(SEED_ERA) >= 8
    assert len(HARNESS_HEAD) >= 4


@pytest.mark.parametrize("path", SEED_ERA, ids=ids(SEED_ERA))
def test_seed_era_fixtures_are_our_format(path: Path) -> None:
    assert detect_format(path.read_bytes()) == "agentlog"


@pytest.mark.parametrize("path", HARNESS_HEAD, ids=ids(HARNESS_HEAD))
def test_harness_head_fixtures_are_detected(path: Path) -> None:
    assert detect_format(path.read_bytes()) == "harness-head"


@pytest.mark.parametrize("path", SEED_ERA, ids=ids(SEED_ERA))
def test_seed_era_fixtures_re_encode_byte_identically(path: Path) -> None:
    for data in (path.read_bytes(), substituted(path)):
        decoded = decode_log(data, source=str(path))
        assert decoded.report == []
        assert [event["seq"] for event in decoded.events] == list(
            range(len(decoded.events))
        )
        assert encode_log(decoded.header, decoded.events) == data
        compressed = encode_log(decoded.header, decoded.events, compress=True)
        again = decode_log(compressed, source=str(path))
        assert encode_log(again.header, again.events) == data


def test_substituted_seed_era_header() -> None:
    path = SEED_ERA[0]
    decoded = decode_log(substituted(path), source=str(path))
    assert decoded.header["cwd"] == CWD
    assert decoded.header["id"] == "imported-session"


def decode_head(path: Path) -> Any:
    return decode_harness_log(
        path.read_bytes(), source=str(path), substitutions=SUBSTITUTIONS
    )


def raw_rows(path: Path) -> list[dict[str, Any]]:
    return [loads(line) for line in path.read_bytes().splitlines()[1:]]


@pytest.mark.parametrize("path", HARNESS_HEAD, ids=ids(HARNESS_HEAD))
def test_harness_head_fixtures_decode_contiguously(path: Path) -> None:
    decoded = decode_head(path)
    rows = raw_rows(path)
    packed = [row for row in rows if row["type"] in CHUNK_ROWS]
    members = sum(
        len(row["data"].get("texts", row["data"].get("args", []))) for row in packed
    )
    assert len(decoded.events) == len(rows) - len(packed) + members
    assert [event["seq"] for event in decoded.events] == list(
        range(len(decoded.events))
    )
    assert all(event["type"] not in CHUNK_ROWS for event in decoded.events)
    assert decoded.header["cwd"].startswith(CWD)
    assert not any("differs" in line or "could not" in line for line in decoded.report)


@pytest.mark.parametrize("path", HARNESS_HEAD, ids=ids(HARNESS_HEAD))
def test_packed_rows_expand_exactly_into_their_chunks(path: Path) -> None:
    """Each packed row becomes its members, with the gaps ``dt`` between their times."""
    events = decode_head(path).events
    seq = 0
    for row in raw_rows(path):
        if row["type"] not in CHUNK_ROWS:
            seq += 1
            continue
        data = row["data"]
        members = data.get("texts", data.get("args"))
        expanded = events[seq : seq + len(members)]
        for offset, (member, chunk_event) in enumerate(
            zip(members, expanded, strict=True)
        ):
            assert chunk_event["type"] == "assistant/chunk"
            chunk_data = chunk_event["data"]
            assert (chunk_data["turn"], chunk_data["step"]) == (
                data["turn"],
                data["step"],
            )
            chunk = chunk_data["chunk"]
            assert chunk["index"] == data["index"]
            if row["type"] == "tool-call-chunks":
                assert list(chunk) == ["type", "index", "id", "name", "argumentsDelta"]
                assert chunk["type"] == "tool-call-delta"
                assert (chunk["id"], chunk["name"]) == (data["id"], data["name"])
                assert chunk["argumentsDelta"] == member
            else:
                assert list(chunk) == ["type", "index", "text"]
                assert chunk["type"] == row["type"].replace("-chunks", "-delta")
                assert chunk["text"] == member
            if offset:
                gap = chunk_event["time"] - expanded[offset - 1]["time"]
                assert gap == data["dt"][offset - 1]
        seq += len(members)


@pytest.mark.parametrize(
    "path", HARNESS_HEAD + SEED_ERA, ids=ids(HARNESS_HEAD + SEED_ERA)
)
def test_block_ends_equal_their_concatenated_deltas(path: Path) -> None:
    """The proof that expansion is exact: every block's deltas give its block-end."""
    if path in HARNESS_HEAD:
        events = decode_head(path).events
    else:
        events = decode_log(path.read_bytes(), source=str(path)).events
    deltas: dict[tuple[int, int, int], list[str]] = {}
    checked = 0
    for event in events:
        if event["type"] != "assistant/chunk":
            continue
        data = event["data"]
        chunk = data["chunk"]
        key = (data["turn"], data["step"], chunk.get("index", -1))
        if chunk["type"] in ("text-delta", "reasoning-delta"):
            deltas.setdefault(key, []).append(chunk["text"])
        elif chunk["type"] == "tool-call-delta":
            deltas.setdefault(key, []).append(chunk["argumentsDelta"])
        elif chunk["type"] == "block-end" and key in deltas:
            block = chunk["block"]
            field = "arguments" if block["type"] == "tool-call" else "text"
            assert "".join(deltas.pop(key)) == block[field], event["seq"]
            checked += 1
    if path in HARNESS_HEAD:
        assert checked > 0
        assert deltas == {}  # no packed delta is left without its block-end


@pytest.mark.parametrize("path", HARNESS_HEAD, ids=ids(HARNESS_HEAD))
def test_references_already_use_the_expanded_numbering(path: Path) -> None:
    """``sourceEventSeqs`` of a message name the chunks of its own step, as stored."""
    events = decode_head(path).events
    messages = [event for event in events if event["type"] == "assistant/message"]
    assert messages
    for message in messages:
        sources = message["sourceEventSeqs"]
        assert sources == list(range(sources[0], message["seq"]))
        for seq in sources:
            chunk = events[seq]
            assert chunk["type"] == "assistant/chunk"
            assert chunk["data"]["step"] == message["data"]["step"]
    for event in events:
        if event["type"] == "tool/result":
            (call,) = event["sourceEventSeqs"]
            assert events[call]["type"] == "tool/call"
            assert events[call]["data"]["callId"] == event["data"]["callId"]
        if event["type"] == "session/title":
            for seq in event["data"]["messageSeqs"]:
                assert events[seq]["type"] == "user/message"


def test_harness_messages_map_onto_seed_era_payloads() -> None:
    path = next(p for p in HARNESS_HEAD if "compaction" in p.name)
    events = decode_head(path).events
    by_type: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_type.setdefault(event["type"], []).append(event)
    assert by_type["turn/start"][0]["data"] == {
        "turn": 1,
        "trigger": {"kind": "message", "source": {"kind": "user"}},
    }
    user = by_type["user/message"][0]["data"]
    assert list(user) == ["content", "source", "id"]
    assistant = by_type["assistant/message"][0]["data"]
    assert list(assistant) == ["turn", "step", "content", "provenance", "usage", "id"]
    assert assistant["provenance"] == {
        "provider": "deepseek-official",
        "model": "deepseek-v4-flash",
    }
    result = by_type["tool/result"][0]["data"]
    assert result == {
        "turn": 1,
        "step": 1,
        "callId": "call_compaction_marker",
        "content": [{"type": "text", "text": "alpha\n"}],
        "isError": False,
        "id": "c9e68608-2dff-44bc-a344-b01006272378",
    }
    assert [e["type"] for e in events if e["type"].startswith("compact")] == [
        "compact/start",
        "compact/summary",
        "compact/end",
    ]
    finish = events[18]["data"]["chunk"]
    assert finish["reason"] == {
        "kind": "error",
        "message": "snapshot request exceeded the model context window",
        "code": "CONTEXT_WINDOW_EXCEEDED",
    }
    checkpoint = by_type["user/message"][1]
    assert checkpoint["surfaceOp"] == {"op": "replace", "start": 4, "end": 4}
    assert checkpoint["sourceEventSeqs"] == [19, 20, 4]


def test_harness_report_names_what_is_not_exact() -> None:
    path = next(p for p in HARNESS_HEAD if "subagent" in p.name)
    decoded = decode_head(path)
    report = decoded.report
    assert decoded.header["origin"] == "subagent"  # kept (issue 22), not dropped
    assert not any('"origin"' in line for line in report)
    assert any(line.startswith("turn/start had no trigger") for line in report)
    assert any("session/end-seed x1" in line for line in report)
    assert any("events had no time" in line for line in report)
    assert any("placeholder {{system}}" in line for line in report)


def test_harness_cwd_substitution_must_be_absolute() -> None:
    path = HARNESS_HEAD[0]
    with pytest.raises(ValueError, match="must be an absolute path"):
        decode_harness_log(path.read_bytes(), source="x", substitutions={"cwd": "rel"})
    decoded = decode_harness_log(path.read_bytes(), source="x")
    assert decoded.header["cwd"] == "{{cwd}}/workspace"
    assert any("placeholder {{cwd}}" in line for line in decoded.report)


@pytest.mark.parametrize("path", SEED_ERA, ids=lambda path: path.name)
def test_a_fixture_rewritten_by_python_json_dumps_derives_the_same_messages(
    path: Path,
) -> None:
    """Python's defaults: ASCII escapes, ", " and ": " separators (issue 22)."""
    original = substituted(path)
    rewritten = b"".join(
        json.dumps(json.loads(line)).encode() + b"\n" for line in original.splitlines()
    )
    assert rewritten != original
    ours, theirs = memory_app(), memory_app()
    session_id = import_log(ours, original).session_id
    result = import_log(theirs, rewritten)
    lines_count = len(original.splitlines())
    assert result.report[-1] == (
        f"normalised {lines_count} lines: export will differ in bytes, not in values"
    )
    assert theirs.messages(session_id) == ours.messages(session_id)
    assert theirs.read_events(session_id) == ours.read_events(session_id)
