"""Our JSONL codec: the header line, the read rules, torn tails (persistence scenarios D)."""

from __future__ import annotations

from typing import Any

import pytest

from agentlog.domain.errors import CorruptSessionLogError, UnsupportedSessionFormatError
from agentlog.domain.json import dumps
from agentlog.infrastructure.formats.jsonl import decode_log, detect_format, encode_log
from tests.formats.samples import HEADER, event, header_line, lines, turn1


def decode(data: bytes) -> Any:
    return decode_log(data, source="test.jsonl")


def corrupt_message(data: bytes) -> str:
    with pytest.raises(CorruptSessionLogError) as caught:
        decode(data)
    return str(caught.value)


# --------------------------------------------------------------------- encoding


def test_header_line_has_the_spec_key_order_and_always_a_depth() -> None:
    header = {
        "delegationDepth": None,
        "seedLength": 3,
        "parentSession": "p",
        "cwd": "/w",
        "createdAt": 7,
        "id": "s",
        "version": 0,
    }
    first = encode_log(header, []).split(b"\n")[0]
    assert first == (
        b'{"type":"session","version":0,"id":"s","createdAt":7,"cwd":"/w",'
        b'"parentSession":"p","seedLength":3,"delegationDepth":0}'
    )


def test_optional_header_keys_are_omitted_never_null() -> None:
    header = {"version": 0, "id": "s", "createdAt": 0, "cwd": None}
    assert encode_log(header, []) == (
        b'{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0}\n'
    )


def test_events_are_compact_json_lines_with_their_key_order_kept() -> None:
    events = [{"type": "x", "seq": 0, "time": 1, "data": {"b": 1, "a": "é"}}]
    events[0] = {"data": events[0]["data"], **events[0]}  # data first: order kept
    data = encode_log(HEADER, events)
    assert (
        data.split(b"\n")[1]
        == '{"data":{"b":1,"a":"é"},"type":"x","seq":0,"time":1}'.encode()
    )
    assert data.endswith(b"\n")


def test_encoding_refuses_events_that_are_not_contiguous() -> None:
    events = turn1()
    events[2]["seq"] = 7
    with pytest.raises(ValueError, match="contiguous"):
        encode_log(HEADER, events)


def test_encoding_needs_the_required_header_keys() -> None:
    with pytest.raises(ValueError, match="createdAt"):
        encode_log({"version": 0, "id": "s"}, [])


def test_round_trip_is_byte_identical() -> None:
    data = encode_log({**HEADER, "parentSession": "p", "seedLength": 6}, turn1())
    decoded = decode(data)
    assert decoded.events == turn1()
    assert decoded.report == []
    assert encode_log(decoded.header, decoded.events) == data


def test_extra_header_keys_are_kept_after_the_known_ones() -> None:
    data = header_line(delegationDepth=0, origin="subagent") + b"\n"
    decoded = decode(data)
    assert decoded.header["origin"] == "subagent"
    assert encode_log(decoded.header, decoded.events) == data


def test_pq_012_lineage_and_depth_round_trip() -> None:
    header = {
        **HEADER,
        "parentSession": "parent",
        "seedLength": 3,
        "delegationDepth": 2,
    }
    decoded = decode(encode_log(header, turn1()))
    assert decoded.header == header


def test_pq_059_chunks_with_sources_round_trip_identically() -> None:
    events = [
        *turn1()[:3],
        event(
            3,
            "assistant/chunk",
            {
                "turn": 1,
                "step": 1,
                "chunk": {"type": "text-delta", "index": 0, "text": "hel"},
            },
        ),
        event(
            4,
            "assistant/chunk",
            {
                "turn": 1,
                "step": 1,
                "chunk": {"type": "text-delta", "index": 0, "text": "lo"},
            },
        ),
        {
            **event(
                5,
                "assistant/message",
                {"turn": 1, "step": 1, "content": [{"type": "text", "text": "hello"}]},
            ),
            "sourceEventSeqs": [3, 4],
            "surfaceOp": "append",
        },
    ]
    assert decode(encode_log(HEADER, events)).events == events


def test_big_and_deep_values_round_trip() -> None:
    deep: Any = "leaf"
    for _ in range(600):  # past orjson's limit, within == 's recursion limit
        deep = [deep]
    data = {"big": 2**70, "negative_zero": -0.0, "deep": deep, "text": "a\u2028b\x00"}
    events = [event(0, "plugin/x", data)]
    encoded = encode_log(HEADER, events)
    decoded = decode(encoded)
    assert decoded.events == events
    assert encode_log(decoded.header, decoded.events) == encoded


# ----------------------------------------------------------------- header rules


def test_pq_061_empty_input_raises() -> None:
    assert corrupt_message(b"") == "empty or header-less session log"
    assert corrupt_message(b"\n") == "empty or header-less session log"


@pytest.mark.parametrize("data", [b"not json", b"not json\n"])
def test_pq_061_a_header_that_is_not_json(data: bytes) -> None:
    assert corrupt_message(data) == "corrupt session log: header line is not valid JSON"


NOT_A_HEADER = "corrupt session log: first line is not a session header"


@pytest.mark.parametrize(
    ("first", "why"),
    [
        (b'{"type":"event"}', ""),
        (b"[1,2]", ""),
        (
            b'{"type":"session","version":"0","id":"s","createdAt":1,"delegationDepth":0}',
            ': "version" must be a number',
        ),
        (
            b'{"type":"session","version":true,"id":"s","createdAt":1,"delegationDepth":0}',
            ': "version" must be a number',
        ),
        (
            b'{"type":"session","version":0,"id":1,"createdAt":1,"delegationDepth":0}',
            ': "id" must be a string',
        ),
        (
            b'{"type":"session","version":0,"id":"s","createdAt":"1","delegationDepth":0}',
            ': "createdAt" must be a number',
        ),
        (
            b'{"type":"session","version":0,"id":"s","delegationDepth":0}',
            ': "createdAt" is missing',
        ),
        (
            b'{"type":"session","version":0,"createdAt":1,"delegationDepth":0}',
            ': "id" is missing',
        ),
        *(
            (
                b'{"type":"session","version":0,"id":"s","createdAt":1,'
                b'"delegationDepth":' + depth + b"}",
                ': "delegationDepth" must be a non-negative safe integer',
            )
            for depth in (b'"1"', b"1.5", b"-1", b"null", b"true", b"9007199254740992")
        ),
    ],
)
def test_pq_061_a_bad_header_shape_is_not_a_session_header(
    first: bytes, why: str
) -> None:
    """The spec's message (``/session header/``), then the key to fix (issue 22)."""
    assert corrupt_message(first + b"\n") == NOT_A_HEADER + why
    assert corrupt_message(first) == NOT_A_HEADER + why  # also without its newline


def test_pq_061_a_negative_zero_depth_is_not_a_session_header() -> None:
    first = (
        b'{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":-0}'
    )
    assert corrupt_message(first + b"\n").startswith(NOT_A_HEADER)


def test_header_shape_is_checked_before_the_version() -> None:
    data = b'{"type":"session","version":99,"id":"s","createdAt":"1"}\n'
    assert "not a session header" in corrupt_message(data)


def test_pq_013_codec_refuses_version_99() -> None:
    data = header_line(version=99, delegationDepth=0) + b"\n" + lines(*turn1())
    with pytest.raises(UnsupportedSessionFormatError) as caught:
        decode(data)
    assert str(caught.value) == (
        'unsupported session format version 99 for "s1" (only v0 is supported)'
    )


@pytest.mark.parametrize(("version", "shown"), [(1, "1"), (1.5, "1.5"), (-1, "-1")])
def test_any_other_version_is_refused(version: Any, shown: str) -> None:
    data = header_line(version=version, delegationDepth=0) + b"\n"
    with pytest.raises(UnsupportedSessionFormatError, match=f"version {shown} for"):
        decode(data)


def test_a_complete_header_without_a_newline_is_header_less() -> None:
    assert corrupt_message(header_line(delegationDepth=0)) == (
        "empty or header-less session log"
    )


def test_pq_063_a_header_only_file_has_no_events() -> None:
    decoded = decode(header_line(delegationDepth=0) + b"\n")
    assert decoded.events == []
    assert decoded.header == {
        "version": 0,
        "id": "s1",
        "createdAt": 1,
        "delegationDepth": 0,
    }


# ------------------------------------------------------------ event read rules


def log(*rows: bytes | dict[str, Any]) -> bytes:
    return header_line(delegationDepth=0) + b"\n" + lines(*rows)


def turn_end(seq: int) -> dict[str, Any]:
    return event(seq, "turn/end", {"turn": 1, "reason": {"kind": "completed"}})


def test_pq_062_a_gap_without_a_turn_end_keeps_the_prefix() -> None:
    decoded = decode(log(event(0, "turn/start", {}), event(2, "step/start", {})))
    assert [e["seq"] for e in decoded.events] == [0]
    assert decoded.report == [
        "dropped a torn tail after the last turn/end: 1 line(s) from line 3 on"
        " (seq gap in committed region at line 3 (expected 1, got 2))"
    ]


def test_pq_062_a_gap_before_a_later_turn_end_is_corruption() -> None:
    data = log(event(0, "turn/start", {}), event(2, "step/start", {}), turn_end(3))
    with pytest.raises(CorruptSessionLogError) as caught:
        decode(data)
    assert str(caught.value) == (
        "corrupt session log: seq gap in committed region at line 3 (expected 1, got 2)"
    )
    assert caught.value.session_id == "s1"
    assert caught.value.seq == 1


def test_pq_062_a_bad_line_before_a_turn_end_is_corruption() -> None:
    data = log(event(0, "turn/start", {}), b"{corrupt", turn_end(2))
    assert corrupt_message(data) == (
        "corrupt session log: unparsable committed event at line 3"
    )


def test_pq_062_a_bad_line_after_the_last_turn_end_keeps_the_prefix() -> None:
    decoded = decode(log(*turn1(), b"{corrupt", event(7, "step/start", {})))
    assert decoded.events == turn1()
    assert "unparsable committed event at line 8" in decoded.report[0]
    assert "2 line(s)" in decoded.report[0]


def test_pq_062_events_after_the_last_turn_end_with_a_gap_are_dropped() -> None:
    decoded = decode(log(event(0, "turn/start", {}), turn_end(1), event(9, "x", {})))
    assert [e["seq"] for e in decoded.events] == [0, 1]


def test_a_turn_end_with_the_wrong_seq_is_corruption() -> None:
    data = log(event(0, "turn/start", {}), turn_end(5))
    assert "seq gap in committed region at line 3 (expected 1, got 5)" in (
        corrupt_message(data)
    )


@pytest.mark.parametrize(
    ("row", "got"),
    [
        (b"[1]", "undefined"),
        (b'"text"', "undefined"),
        (b'{"type":"x","time":1,"data":{}}', "undefined"),
        (b'{"type":"x","seq":null,"time":1,"data":{}}', "null"),
        (b'{"type":"x","seq":"0","time":1,"data":{}}', "0"),
        (b'{"type":"x","seq":0.0,"time":1,"data":{}}', "0.0"),
        (b'{"type":"x","seq":true,"time":1,"data":{}}', "true"),
    ],
)
def test_a_line_that_is_not_an_event_is_a_seq_defect(row: bytes, got: str) -> None:
    message = corrupt_message(log(row, turn_end(1)))
    assert message == (
        f"corrupt session log: seq gap in committed region at line 2 (expected 0, got {got})"
    )


def test_pq_027_an_unterminated_final_fragment_is_ignored() -> None:
    open_turn = [
        event(
            6,
            "turn/start",
            {"turn": 2, "trigger": {"kind": "message", "source": {"kind": "user"}}},
        ),
        event(7, "step/start", {"turn": 2, "step": 1}),
    ]
    data = log(*turn1(), *open_turn) + b'{"type":"assistant/chunk","seq":8,"ti'
    decoded = decode(data)
    assert [e["seq"] for e in decoded.events] == list(range(8))
    assert decoded.report == ["ignored a torn final line without a newline (37 bytes)"]


def test_pq_028_re_encoding_a_torn_log_gives_its_committed_prefix() -> None:
    committed = log(*turn1())
    decoded = decode(committed + b'{"type":"turn/start","seq":9}\n{"ty')
    assert encode_log(decoded.header, decoded.events) == committed


def test_pq_030_a_torn_tail_after_turn1_is_dropped() -> None:
    decoded = decode(log(*turn1(), b"\x00\xff garbage"))
    assert decoded.events == turn1()
    assert len(decoded.report) == 1


def test_blank_and_crlf_lines() -> None:
    assert "unparsable committed event at line 2" in corrupt_message(log(b"", *turn1()))
    crlf = header_line(delegationDepth=0) + b"\r\n"
    assert decode(crlf + lines(*turn1())).events == turn1()


def test_events_are_not_shape_validated_by_the_codec() -> None:
    odd = {"seq": 0, "type": 5, "extra": True}
    assert decode(log(odd)).events == [odd]


def test_invalid_utf8_is_unparsable() -> None:
    assert "unparsable committed event at line 2" in corrupt_message(
        log(b'{"type":"x","seq":0,"data":"\xff"}', turn_end(1))
    )


def test_detect_format_says_agentlog_for_our_files() -> None:
    assert detect_format(encode_log(HEADER, turn1())) == "agentlog"
    assert detect_format(encode_log(HEADER, turn1(), compress=True)) == "agentlog"
    assert detect_format(b"") == "agentlog"
    assert detect_format(b"garbage\n") == "agentlog"


def test_detect_format_says_harness_head_for_its_shapes() -> None:
    head = header_line(delegationDepth=0) + b"\n"
    samples = [
        {"type": "turn/start", "data": {"turn": 1}},
        {"type": "text-chunks", "data": {}},
        {"type": "turn/start", "seq": 0, "time": 0, "data": {"turn": 1}},
        {"type": "tool/result", "seq": 0, "time": 0, "data": {"message": {}}},
        {"type": "x", "seq": 0, "time": 0, "data": {}, "ignorable": True},
        {"type": "x", "seq": 0, "time": 0, "data": {}, "surfaceOp": {"startSeq": 0}},
    ]
    for row in samples:
        assert detect_format(head + dumps(row) + b"\n") == "harness-head", row
    assert detect_format(header_line() + b"\n") == "agentlog"  # seed era: no depth
    assert detect_format(b'{"type":"session","id":"s","createdAt":1}\n') == (
        "harness-head"  # no version
    )
    # origin is ours too (a subagent's header keeps it): our export writes it.
    assert detect_format(header_line(delegationDepth=0, origin="x") + b"\n") == (
        "agentlog"
    )
    assert detect_format(header_line(delegationDepth=0, preset="x") + b"\n") == (
        "harness-head"
    )


def test_detect_format_ignores_extra_keys_our_payloads_allow() -> None:
    """A payload may carry extra keys (``role``, ``message``) and stay ours."""
    extra = {"content": [], "source": {"kind": "user"}, "role": "user", "message": {}}
    user = {**event(0, "user/message", extra), "surfaceOp": "append"}
    data = encode_log(HEADER, [user])
    assert detect_format(data) == "agentlog"
    assert decode_log(data, source="x").events == [user]
