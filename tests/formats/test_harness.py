"""The harness-head mapping, row by row, on small hand-written logs."""

from __future__ import annotations

from typing import Any

import pytest

from agentlog.domain.errors import CorruptSessionLogError, UnsupportedSessionFormatError
from agentlog.infrastructure.formats.jsonl import decode_harness_log
from tests.formats.samples import header_line, lines

USER = {"kind": "user"}


def decode(*rows: bytes | dict[str, Any], **header: Any) -> Any:
    data = header_line(**header) + b"\n" + lines(*rows)
    return decode_harness_log(data, source="head.jsonl")


def row(kind: str, data: Any, **envelope: Any) -> dict[str, Any]:
    return {"type": kind, "data": data, **envelope}


def turn(number: int = 1) -> dict[str, Any]:
    return row("turn/start", {"turn": number})


def turn_end(reason: dict[str, Any], number: int = 1) -> dict[str, Any]:
    return row("turn/end", {"turn": number, "reason": reason})


def chunk(step: int, body: dict[str, Any], **envelope: Any) -> dict[str, Any]:
    return row("assistant/chunk", {"turn": 1, "step": step, "chunk": body}, **envelope)


def text_rows(texts: list[Any], dt: list[Any], **envelope: Any) -> dict[str, Any]:
    data = {"turn": 1, "step": 1, "index": 0, "dt": dt, "texts": texts}
    return row("text-chunks", data, **envelope)


def block(index: int, kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": "block-end", "index": index, "block": {"type": kind, **fields}}


def test_rows_with_seq0_and_time0_expand_at_their_recorded_place() -> None:
    decoded = decode(
        {**turn(), "seq": 0, "time": 100},
        {**row("step/start", {"turn": 1, "step": 1}), "seq": 1, "time": 110},
        {**text_rows(["a", "b", "c"], [5, -2]), "seq0": 2, "time0": 120},
        {**chunk(1, block(0, "text", text="abc")), "seq": 5, "time": 130},
    )
    times = [(event["seq"], event["time"]) for event in decoded.events]
    assert times == [(0, 100), (1, 110), (2, 120), (3, 125), (4, 123), (5, 130)]
    assert not any("no seq" in line or "no time" in line for line in decoded.report)


def test_rows_without_time_take_the_previous_time() -> None:
    decoded = decode(
        {**turn(), "time": 100},
        row("step/start", {"turn": 1, "step": 1}),
        text_rows(["a", "b"], [7]),
        chunk(1, block(0, "text", text="ab")),
    )
    assert [event["time"] for event in decoded.events] == [100, 100, 100, 107, 107]
    assert "4 of 5 events had no time" in decoded.report[-1]


def test_a_seq0_that_does_not_follow_is_a_seq_defect() -> None:
    with pytest.raises(CorruptSessionLogError) as caught:
        decode(
            turn(),
            {**text_rows(["a", "b"], [1]), "seq0": 5},
            turn_end({"kind": "completed"}),
        )
    assert str(caught.value) == (
        "corrupt session log: seq gap in committed region at line 3 (expected 1, got 5)"
    )


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        (text_rows(["a", "b"], [1, 2]), "dt length 2 does not match 2 members"),
        (text_rows([], []), "texts must be a non-empty string array"),
        (text_rows(["a", 1], [1]), "texts must be a non-empty string array"),
        (text_rows(["a", "b"], [1.5]), "dt must be an array of integers"),
        ({**text_rows(["a"], []), "seq": 1}, "envelope must be"),
        ({**text_rows(["a"], []), "time0": "x"}, "time0 must be a safe integer"),
        (row("text-chunks", {"turn": 1}), "data must be exactly"),
        (row("text-chunks", []), "data must be an object"),
        (
            row(
                "tool-call-chunks",
                {"turn": 1, "step": 1, "index": 0, "dt": [], "id": 1, "args": ["x"]},
            ),
            "id (and name when present) must be strings",
        ),
        (
            row(
                "reasoning-chunks",
                {"turn": 1, "step": "1", "index": 0, "dt": [], "texts": ["x"]},
            ),
            "turn/step/index must be integers",
        ),
    ],
)
def test_a_malformed_packed_row_is_a_defect_never_a_guess(bad: Any, why: str) -> None:
    tag = bad["type"]
    with pytest.raises(CorruptSessionLogError) as caught:
        decode(turn(), bad, turn_end({"kind": "completed"}))
    assert str(caught.value).startswith(
        f"corrupt session log: unparsable committed event at line 3 (malformed {tag}"
        " storage row:"
    )
    assert why in str(caught.value)
    # After the last turn/end the same row is a torn tail.
    decoded = decode(turn(), turn_end({"kind": "completed"}), bad)
    assert len(decoded.events) == 2
    assert "dropped a torn tail" in decoded.report[0]


def test_tool_call_rows_without_a_name_expand_without_one() -> None:
    data = {"turn": 1, "step": 1, "index": 0, "dt": [0], "id": "c", "args": ["{", "}"]}
    decoded = decode(turn(), row("tool-call-chunks", data))
    assert decoded.events[1]["data"]["chunk"] == {
        "type": "tool-call-delta",
        "index": 0,
        "id": "c",
        "argumentsDelta": "{",
    }


def test_a_block_end_that_differs_from_packed_deltas_is_reported() -> None:
    decoded = decode(
        turn(),
        text_rows(["a", "b"], [0]),
        chunk(1, block(0, "text", text="abX")),
        text_rows(["never", "ends"], [0]),
    )
    assert (
        "block-end differs from the concatenated deltas of its block (packed chunks"
        " expanded verbatim) (seq 3)"
    ) in decoded.report
    assert any("have no block-end" in line for line in decoded.report)


def test_a_tool_call_block_end_is_compared_on_arguments_id_and_name() -> None:
    data = {
        "turn": 1,
        "step": 1,
        "index": 0,
        "dt": [0],
        "id": "c",
        "name": "bash",
        "args": ["{", "}"],
    }
    good = block(0, "tool-call", id="c", name="bash", arguments="{}")
    decoded = decode(turn(), row("tool-call-chunks", data), chunk(1, good))
    assert not any("differs" in line for line in decoded.report)
    bad = block(0, "tool-call", id="c", name="other", arguments="{}")
    decoded = decode(turn(), row("tool-call-chunks", data), chunk(1, bad))
    assert any("differs" in line for line in decoded.report)


def test_trigger_from_the_claimed_queue_then_the_user_message_then_unknown() -> None:
    queued = {
        "content": [],
        "source": {"kind": "plugin", "plugin": "cron"},
        "role": "user",
        "id": "m",
    }
    claimed = decode(
        row(
            "agent/inbox/spliced",
            {"target": "next-turn", "start": 0, "inserted": [queued]},
        ),
        turn(),
        row(
            "agent/inbox/spliced",
            {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []},
        ),
    )
    assert claimed.events[1]["data"]["trigger"] == {
        "kind": "message",
        "source": {"kind": "plugin", "plugin": "cron"},
    }
    from_message = decode(
        turn(), row("user/message", {"content": [], "source": USER}, surfaceOp="append")
    )
    assert from_message.events[0]["data"]["trigger"] == {
        "kind": "message",
        "source": USER,
    }
    assert "from the user/message at seq 1" in from_message.report[0]
    nothing = decode(turn(), turn_end({"kind": "completed"}), turn(2))
    assert nothing.events[0]["data"]["trigger"] == {"kind": "unknown"}
    assert "(seqs 0, 2)" in nothing.report[0]


def test_a_canceled_splice_claims_nothing() -> None:
    queued = {"content": [], "source": USER, "role": "user", "id": "m"}
    decoded = decode(
        row(
            "agent/inbox/spliced",
            {"target": "next-turn", "start": 0, "inserted": [queued]},
        ),
        turn(),
        row(
            "agent/inbox/spliced",
            {
                "target": "next-turn",
                "start": 0,
                "removedCount": 1,
                "inserted": [],
                "outcome": "canceled",
            },
        ),
    )
    assert decoded.events[1]["data"]["trigger"] == {"kind": "unknown"}


@pytest.mark.parametrize(
    ("reason", "mapped", "noted"),
    [
        ({"kind": "completed"}, {"kind": "completed"}, None),
        ({"kind": "aborted", "reason": {"kind": "user"}}, {"kind": "aborted"}, None),
        ({"kind": "aborted", "reason": {"kind": "legacy"}}, {"kind": "aborted"}, None),
        (
            {"kind": "aborted", "reason": {"kind": "disposed"}},
            {"kind": "disposed"},
            None,
        ),
        (
            {"kind": "aborted", "reason": {"kind": "hook", "reason": "stop"}},
            {"kind": "aborted", "reason": "stop"},
            "aborted by a hook",
        ),
        (
            {"kind": "aborted", "reason": {"kind": "parent"}},
            {"kind": "aborted"},
            'dropped the cause {"kind":"parent"}',
        ),
        (
            {"kind": "error", "error": {"message": "boom", "code": "X", "status": 500}},
            {"kind": "error", "step": 2, "message": "boom", "code": "X", "status": 500},
            "step 2 is the turn's last step/start",
        ),
        (
            {"kind": "blocked"},
            {"kind": "blocked"},
            '"blocked" has no seed-era counterpart',
        ),
        (
            {"kind": "aborted", "reason": "text"},
            {"kind": "aborted", "reason": "text"},
            None,
        ),
    ],
)
def test_turn_end_reasons(
    reason: dict[str, Any], mapped: dict[str, Any], noted: str | None
) -> None:
    decoded = decode(
        turn(),
        row("step/start", {"turn": 1, "step": 1}),
        row("step/start", {"turn": 1, "step": 2}),
        turn_end(reason),
    )
    assert decoded.events[-1]["data"]["reason"] == mapped
    notes = [line for line in decoded.report if "turn/end" in line]
    if noted is None:
        assert notes == []
    else:
        assert len(notes) == 1
        assert noted in notes[0]


def test_an_error_turn_end_without_a_step() -> None:
    decoded = decode(
        turn(), turn_end({"kind": "error", "error": {"message": "m", "code": "c"}})
    )
    assert decoded.events[-1]["data"]["reason"] == {
        "kind": "error",
        "step": 0,
        "message": "m",
        "code": "c",
    }
    assert any("no step/start; step set to 0" in line for line in decoded.report)


def test_finish_failures_are_flattened() -> None:
    failure = {"message": "gone", "code": "ABORT"}
    decoded = decode(
        turn(),
        chunk(1, {"type": "finish", "reason": {"kind": "aborted", "failure": failure}}),
    )
    assert decoded.events[1]["data"]["chunk"]["reason"] == {
        "kind": "aborted",
        **failure,
    }


def test_wrapped_messages_keep_their_ids() -> None:
    assistant = {
        "turn": 1,
        "step": 1,
        "message": {
            "role": "assistant",
            "content": [],
            "source": {
                "kind": "model",
                "provider": "p",
                "model": "m",
                "replayState": 1,
            },
            "id": "a1",
        },
        "stream": [],
        "interrupted": True,
    }
    decoded = decode(turn(), row("assistant/message", assistant, surfaceOp="append"))
    assert decoded.events[1]["data"] == {
        "turn": 1,
        "step": 1,
        "content": [],
        "provenance": {"provider": "p", "model": "m", "replayState": 1},
        "stream": [],
        "interrupted": True,
        "id": "a1",
    }
    assert decoded.events[1]["surfaceOp"] == "append"


def test_tool_results_that_are_not_one_block_are_reported() -> None:
    message = {
        "role": "user",
        "content": [{"type": "text", "text": "x"}],
        "source": {"kind": "tool", "callId": "c"},
    }
    decoded = decode(
        turn(),
        row(
            "tool/result",
            {"turn": 1, "step": 1, "message": message},
            surfaceOp="append",
        ),
    )
    assert decoded.events[1]["data"] == {
        "turn": 1,
        "step": 1,
        "callId": "c",
        "content": [{"type": "text", "text": "x"}],
        "isError": False,
    }
    assert any("not exactly one tool-result block" in line for line in decoded.report)


def test_tool_result_error_and_meta_follow_the_mapped_keys() -> None:
    block_ = {"type": "tool-result", "toolCallId": "c", "content": [], "isError": True}
    message = {
        "role": "user",
        "content": [block_],
        "source": {"kind": "tool", "callId": "c"},
        "id": "r",
    }
    data = {
        "turn": 1,
        "step": 1,
        "message": message,
        "error": {"name": "E", "code": "e"},
        "meta": {"m": 1},
    }
    decoded = decode(turn(), row("tool/result", data, surfaceOp="append"))
    assert list(decoded.events[1]["data"]) == [
        "turn",
        "step",
        "callId",
        "content",
        "isError",
        "error",
        "meta",
        "id",
    ]
    assert not any(line.startswith("tool/result") for line in decoded.report)


def test_system_messages_become_context_messages() -> None:
    message = {
        "role": "system",
        "content": [{"type": "text", "text": "rules"}],
        "source": {"kind": "plugin", "plugin": "p"},
        "id": "s",
    }
    decoded = decode(
        turn(),
        row(
            "system/message",
            {"turn": 1, "step": 1, "message": message},
            surfaceOp="append",
        ),
    )
    assert decoded.events[1]["type"] == "context/message"
    assert decoded.events[1]["data"] == {
        "content": [{"type": "text", "text": "rules"}],
        "source": {"kind": "plugin", "plugin": "p"},
        "id": "s",
    }
    assert any(
        "system/message became context/message" in line for line in decoded.report
    )


def test_later_replace_markers_and_envelope_keys() -> None:
    user = row(
        "user/message",
        {"content": [], "source": USER, "role": "user"},
        surfaceOp="append",
    )
    replace = row(
        "user/message",
        {"content": [], "source": USER},
        surfaceOp={"op": "replace", "startSeq": 1, "endSeq": 1},
        sourceEventSeqs=[1],
        ignorable=True,
    )
    decoded = decode(turn(), user, replace)
    assert decoded.events[1]["data"] == {"content": [], "source": USER}
    assert decoded.events[2]["surfaceOp"] == {"op": "replace", "start": 1, "end": 1}
    assert "ignorable" not in decoded.events[2]
    assert 'dropped envelope key "ignorable" (true) (seq 2)' in decoded.report


def test_unknown_types_are_kept_verbatim_without_surface_markers() -> None:
    decoded = decode(
        turn(), row("plugin/thing", {"a": 1}, surfaceOp="append", sourceEventSeqs=[0])
    )
    assert decoded.events[1] == {
        "type": "plugin/thing",
        "seq": 1,
        "time": 0,
        "data": {"a": 1},
    }
    assert any("plugin/thing x1" in line for line in decoded.report)
    assert any("dropped surfaceOp" in line for line in decoded.report)


def test_compaction_rows_that_do_not_match_stay_verbatim() -> None:
    decoded = decode(
        row("compaction/start", {"compactionId": "c", "turn": None}),
        row("compaction/end", {"compactionId": "c", "turn": 1, "error": "boom"}),
        row("compaction/other", {}),
    )
    assert [event["type"] for event in decoded.events] == [
        "compaction/start",
        "compact/end",
        "compaction/other",
    ]
    assert any(
        "compaction/start does not match compact/start" in line
        for line in decoded.report
    )


def test_references_that_do_not_point_where_expected_are_reported() -> None:
    decoded = decode(
        turn(),
        row("user/message", {"content": [], "source": USER}, surfaceOp="append"),
        row("session/title", {"title": "t", "messageSeqs": [0, 9]}),
        row(
            "assistant/message",
            {"turn": 1, "step": 1, "content": []},
            surfaceOp="append",
            sourceEventSeqs=[1],
        ),
    )
    report = "\n".join(decoded.report)
    assert (
        "session/title: messageSeqs entry 0 names a turn/start, not a user/message"
        in report
    )
    assert "messageSeqs entry 9 is not an earlier seq" in report
    assert (
        "sourceEventSeqs entry 1 names a user/message, not a chunk of the same step"
        in report
    )


def test_request_header_reasons_outside_our_vocabulary_are_reported() -> None:
    decoded = decode(turn(), row("request/header", {"header": {}, "reason": "series"}))
    assert any(
        'reason "series" is not in our vocabulary' in line for line in decoded.report
    )


def test_harness_version_and_header_rules() -> None:
    with pytest.raises(UnsupportedSessionFormatError, match="version 3 for"):
        decode(turn(), version=3)
    decoded = decode(turn())
    assert decoded.header == {"version": 0, "id": "s1", "createdAt": 1}
    with pytest.raises(CorruptSessionLogError, match="not a session header"):
        decode(turn(), delegationDepth=-1)
