"""Property tests: any log round-trips; any damage is a clear error, never a crash."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlog.domain.errors import (
    CorruptSessionLogError,
    LogImportError,
    UnsupportedSessionFormatError,
)
from agentlog.domain.json import dumps
from agentlog.infrastructure.formats import zstd
from agentlog.infrastructure.formats.harness import looks_like_harness_row
from agentlog.infrastructure.formats.jsonl import (
    decode_harness_log,
    decode_log,
    detect_format,
    encode_log,
)
from tests.formats.samples import HEADER, header_line, lines, turn1

EXPECTED_ERRORS = (
    CorruptSessionLogError,
    UnsupportedSessionFormatError,
    LogImportError,  # a later-era event the original refuses to load, e.g. turn/end
)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=8), children, max_size=4),
    ),
    max_leaves=20,
)


@st.composite
def event_lists(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(min_value=0, max_value=6))
    events = []
    for seq in range(count):
        event: dict[str, Any] = {
            "type": draw(st.sampled_from(["step/start", "plugin/x", "user/message"])),
            "seq": seq,
            "time": draw(st.integers(min_value=0, max_value=2**53)),
            "data": draw(json_values),
        }
        if draw(st.booleans()):
            event["surfaceOp"] = draw(
                st.one_of(
                    st.just("append"),
                    st.fixed_dictionaries(
                        {
                            "op": st.just("replace"),
                            "start": st.integers(0, 9),
                            "end": st.integers(0, 9),
                        }
                    ),
                )
            )
        events.append(event)
    return events


headers = st.fixed_dictionaries(
    {
        "version": st.just(0),
        "id": st.text(min_size=1),
        "createdAt": st.integers(0, 2**53),
    },
    optional={
        "cwd": st.text(),
        "parentSession": st.text(),
        "seedLength": st.integers(0, 2**53 - 1),
        "delegationDepth": st.integers(0, 2**53 - 1),
    },
)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(header=headers, events=event_lists(), compress=st.booleans())
def test_any_log_round_trips_byte_identically(
    header: dict[str, Any], events: list[dict[str, Any]], compress: bool
) -> None:
    data = encode_log(header, events, compress=compress)
    decoded = decode_log(data, source="p")
    assert decoded.events == events
    assert decoded.report == []
    assert decoded.header == {
        **header,
        "delegationDepth": header.get("delegationDepth", 0),
    }
    assert encode_log(decoded.header, decoded.events, compress=compress) == data
    # Our format, unless the events have a shape only the later writer produces.
    assert detect_format(data) == "agentlog" or any(
        looks_like_harness_row(event) for event in events
    )


bad_lines = st.one_of(
    st.binary(max_size=40).map(lambda raw: raw.replace(b"\n", b"")),
    st.text(max_size=40).map(lambda text: text.replace("\n", "").encode()),
    json_values.map(dumps),
    st.builds(
        lambda seq, kind: dumps({"type": kind, "seq": seq, "time": 0, "data": {}}),
        st.one_of(
            st.integers(-3, 12),
            st.floats(allow_nan=False),
            st.text(max_size=3),
            st.none(),
        ),
        st.sampled_from(["turn/end", "turn/start", "x"]),
    ),
)


def assert_clear_outcome(data: bytes) -> None:
    """Decoding either succeeds with contiguous events or raises a spec'd error."""
    for decode in (decode_log, decode_harness_log):
        try:
            decoded = decode(data, source="p")
        except EXPECTED_ERRORS:
            continue
        assert [event["seq"] for event in decoded.events] == list(
            range(len(decoded.events))
        )


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    bad=st.lists(bad_lines, min_size=1, max_size=3),
    position=st.integers(min_value=0, max_value=6),
    newline=st.booleans(),
)
def test_malformed_lines_are_clear_errors(
    bad: list[bytes], position: int, newline: bool
) -> None:
    rows: list[bytes | dict[str, Any]] = list(turn1())
    rows[position:position] = bad
    data = header_line(delegationDepth=0) + b"\n" + lines(*rows)
    if not newline:
        data = data[:-1]
    assert_clear_outcome(data)
    assert_clear_outcome(
        encode_log(HEADER, [], compress=True) + zstd.compress_frame(data)
    )


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=200))
def test_arbitrary_bytes_are_clear_errors(data: bytes) -> None:
    assert_clear_outcome(data)
    assert_clear_outcome(header_line(delegationDepth=0) + b"\n" + data)
    assert_clear_outcome(zstd.MAGIC + data)
    detect_format(data)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(header=json_values.map(dumps), tail=st.binary(max_size=20))
def test_arbitrary_headers_are_clear_errors(header: bytes, tail: bytes) -> None:
    assert_clear_outcome(header + b"\n" + tail)


@settings(max_examples=150, deadline=None)
@given(
    cut=st.integers(min_value=0, max_value=10_000),
    flip=st.integers(min_value=0, max_value=10_000),
)
def test_damaged_zstd_logs_are_clear_errors(cut: int, flip: int) -> None:
    data = bytearray(encode_log(HEADER, turn1() * 1, compress=True))
    if flip < len(data):
        data[flip] ^= 0x5A
    assert_clear_outcome(bytes(data[: max(cut, 1)]))
    assert_clear_outcome(bytes(data))
