"""Zstandard logs: frames, checksums, torn final frames (persistence scenarios E, docs/persistence.md#zstandard)."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import pytest
import zstandard

from agentlog.domain.errors import CorruptSessionLogError
from agentlog.infrastructure.formats import zstd
from agentlog.infrastructure.formats.jsonl import (
    decode_harness_log,
    decode_log,
    encode_log,
)
from tests.formats.samples import HEADER, event, lines, turn1


def decode(data: bytes) -> Any:
    return decode_log(data, source="test.jsonl.zst")


def corrupt_message(data: bytes) -> str:
    with pytest.raises(CorruptSessionLogError) as caught:
        decode(data)
    return str(caught.value)


def frames(data: bytes) -> list[tuple[int, int]]:
    """The ``[start, end)`` ranges of the complete frames of ``data``."""
    pieces = zstd.decode_frames([data])
    return [(p.start, p.end) for p in pieces if isinstance(p, zstd.FrameEnd)]


def turn2() -> list[dict[str, Any]]:
    return [
        {**e, "seq": e["seq"] + 6, "data": {**e["data"], "turn": 2}} for e in turn1()
    ]


def test_pq_065_two_checksummed_frames_starting_with_the_magic() -> None:
    data = encode_log(HEADER, turn1(), compress=True)
    assert data[:4] == bytes.fromhex("28b52ffd")
    pieces = list(zstd.decode_frames([data]))
    ends = [p for p in pieces if isinstance(p, zstd.FrameEnd)]
    assert len(ends) == 2
    assert not any(isinstance(p, zstd.TornFrame) for p in pieces)
    for end in ends:
        params = zstandard.get_frame_parameters(data[end.start : end.end])
        assert params.has_checksum
    plain = b"".join(p for p in pieces if isinstance(p, bytes))
    assert plain == encode_log(HEADER, turn1())
    assert plain.split(b"\n", 1)[0] + b"\n" == zstandard.decompress(
        data[ends[0].start : ends[0].end]
    )


def test_zstd_round_trip_is_byte_identical() -> None:
    data = encode_log(HEADER, turn1(), compress=True)
    decoded = decode(data)
    assert decoded.events == turn1()
    assert decoded.report == []
    assert encode_log(decoded.header, decoded.events, compress=True) == data


def test_a_header_only_zstd_log_is_one_frame() -> None:
    data = encode_log(HEADER, [], compress=True)
    assert len(frames(data)) == 1
    assert decode(data).events == []


def test_pq_066_an_appended_frame_is_read_with_the_others() -> None:
    data = encode_log(HEADER, turn1(), compress=True)
    appended = data + zstd.compress_frame(lines(*turn2()))
    assert appended.startswith(data)
    assert len(frames(appended)) == 3
    assert decode(appended).events == turn1() + turn2()


def test_magic_bytes_decide_not_the_suffix() -> None:
    data = encode_log(HEADER, turn1(), compress=True)
    assert decode_log(data, source="plain-name.jsonl").events == turn1()
    harness = decode_harness_log(data, source="x.jsonl")
    assert harness.events == turn1()


def test_pq_067_a_corrupted_event_frame_checksum_fails_validation() -> None:
    data = bytearray(encode_log(HEADER, turn1(), compress=True))
    start, end = frames(bytes(data))[1]
    data[end - 1] ^= 0xFF  # the last byte of the checksum trailer
    assert corrupt_message(bytes(data)) == (
        f"corrupt Zstandard session log: frame at byte {start} failed validation"
    )


def test_pq_068_a_torn_final_frame_keeps_its_complete_records() -> None:
    complete = encode_log(HEADER, turn1(), compress=True)
    open_turn = [
        event(6, "turn/start", {"turn": 2}),
        event(7, "step/start", {"turn": 2, "step": 1}),
    ]
    partial_chunk = b'{"type":"assistant/chunk","seq":8,"time":5,"da'
    writer = zstandard.ZstdCompressor(write_checksum=True).compressobj()
    first_block = writer.compress(lines(*open_turn))
    first_block += writer.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
    rest = writer.compress(partial_chunk) + writer.flush()
    torn = complete + first_block + rest[:3]
    decoded = decode(torn)
    assert decoded.events == turn1() + open_turn
    assert decoded.report == [
        f"torn final Zstandard frame at byte {len(complete)} ({len(first_block) + 3}"
        " bytes): recovered 2 complete line(s) from it"
    ]
    # Re-encoding writes the recovered events in place of the torn frame.
    again = encode_log(decoded.header, decoded.events, compress=True)
    assert decode(again).events == decoded.events


def test_pq_069_two_stray_magic_bytes_are_a_torn_frame() -> None:
    data = encode_log(HEADER, turn1(), compress=True)
    decoded = decode(data + b"\x28\xb5")
    assert decoded.events == turn1()
    assert "recovered 0 complete line(s)" in decoded.report[0]
    assert encode_log(decoded.header, decoded.events, compress=True) == data


def test_pq_070_a_final_frame_missing_only_its_checksum_is_recovered() -> None:
    data = encode_log(HEADER, [*turn1(), *turn2()], compress=True)
    decoded = decode(data[:-1])
    assert decoded.events == turn1() + turn2()
    assert encode_log(decoded.header, decoded.events, compress=True) == data


def test_pq_071_a_complete_frame_with_a_torn_record_is_corrupt() -> None:
    head = zstd.compress_frame(
        lines({"type": "session", **HEADER, "delegationDepth": 0})
    )
    data = head + zstd.compress_frame(b'{"type":"turn/start"')
    assert corrupt_message(data) == (
        "corrupt Zstandard session log: complete frame contains a torn JSONL record"
    )


def test_a_tolerable_defect_inside_a_complete_frame_is_corrupt() -> None:
    head = encode_log(HEADER, [], compress=True)
    data = head + zstd.compress_frame(lines(*turn1(), b"{bad"))
    assert corrupt_message(data) == (
        "corrupt Zstandard session log: complete frame contains a torn JSONL record"
    )


def test_a_defect_in_the_torn_frame_is_a_torn_tail() -> None:
    data = encode_log(HEADER, turn1(), compress=True)
    frame = zstd.compress_frame(lines(b"{bad", turn2()[0]))
    decoded = decode(data + frame[:-1])
    assert decoded.events == turn1()
    assert "dropped a torn tail" in decoded.report[1]
    # A turn/end after the defect makes it committed: corruption, as in plain text.
    frame = zstd.compress_frame(lines(b"{bad", *turn2()))
    assert "unparsable committed event at line 8" in corrupt_message(data + frame[:-1])


def test_pq_073_header_frame_rules() -> None:
    header = lines({"type": "session", **HEADER, "delegationDepth": 0})
    no_newline = zstd.compress_frame(header[:-1])
    assert corrupt_message(no_newline) == (
        "corrupt Zstandard session log: complete frame contains a torn JSONL record"
    )
    assert corrupt_message(zstd.MAGIC) == ("empty or header-less Zstandard session log")
    bad = bytearray(zstd.compress_frame(header))
    bad[-1] ^= 0xFF
    assert corrupt_message(bytes(bad)) == (
        "corrupt Zstandard session log: frame at byte 0 failed validation"
    )


def test_a_standard_stream_with_the_header_in_its_first_frame_is_read() -> None:
    """What ``zstd`` writes: one frame holding every line (our layout splits them)."""
    one_frame = zstd.compress_frame(encode_log(HEADER, turn1()))
    assert decode(one_frame).events == turn1()
    split = encode_log(HEADER, turn1())
    cut = len(split) // 2  # a frame boundary inside a line, as pzstd writes them
    two = zstd.compress_frame(split[:cut]) + zstd.compress_frame(split[cut:])
    assert decode(two).events == turn1()


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("zstd"), reason="the zstd tool is not installed")
@pytest.mark.parametrize(
    "tool", [["zstd", "-q", "-c"], ["pzstd", "-q", "-c", "-p", "2"]]
)
def test_files_written_by_the_zstd_tools_are_read(tool: list[str]) -> None:
    if not shutil.which(tool[0]):
        pytest.skip(f"{tool[0]} is not installed")
    plain = encode_log(HEADER, turn1() + turn2())
    written = subprocess.run(tool, input=plain, capture_output=True, check=True)
    assert zstd.is_zstd(written.stdout)
    assert decode(written.stdout).events == turn1() + turn2()


def test_a_zstd_header_is_checked_like_a_plain_one() -> None:
    frame = zstd.compress_frame(b'{"type":"event"}\n')
    assert corrupt_message(frame) == (
        "corrupt session log: first line is not a session header"
    )


# ---------------------------------------------------------------- frame scanner


def _error(data: bytes) -> str:
    with pytest.raises(zstd.ZstdFrameError) as caught:
        list(zstd.decode_frames([data]))
    return str(caught.value)


def test_pq_074_the_reader_refuses_invalid_frames() -> None:
    assert _error(bytes(4)) == (
        "corrupt Zstandard session log: invalid frame magic at byte 0"
    )
    frame = zstd.compress_frame(b"x\n")
    assert _error(frame + b"\x00\x00\x00\x00") == (
        f"corrupt Zstandard session log: invalid frame magic at byte {len(frame)}"
    )
    # A reserved frame-header bit, and a block header of type 3 (reserved): the
    # decoder refuses both; the message names the frame.
    reserved = bytearray(frame)
    reserved[4] |= 0x08
    block_type_3 = zstd.MAGIC + bytes([0x00, 0x00]) + bytes([0x07, 0x00, 0x00])
    for damaged, start in ((bytes(reserved), 0), (frame + block_type_3, len(frame))):
        assert _error(damaged) == (
            f"corrupt Zstandard session log: frame at byte {start} failed validation"
        )


def test_pq_074_truncated_header_block_or_checksum_is_torn_at_zero() -> None:
    frame = zstd.compress_frame(b"hello world\n" * 20)
    for cut in range(1, len(frame)):
        pieces = list(zstd.decode_frames([frame[:cut]]))
        assert pieces[-1] == zstd.TornFrame(0, cut)
        assert not any(isinstance(p, zstd.FrameEnd) for p in pieces)
    assert frames(frame) == [(0, len(frame))]


def test_frames_split_across_chunks_are_found() -> None:
    many = [{**e, "seq": seq} for seq, e in enumerate(turn1() * 50)]
    data = encode_log(HEADER, many, compress=True) + b"\x28\xb5"
    whole = list(zstd.decode_frames([data]))
    one_byte_chunks = list(
        zstd.decode_frames(data[i : i + 1] for i in range(len(data)))
    )

    def summary(pieces: list[zstd.Piece]) -> tuple[bytes, list[zstd.Piece]]:
        text = b"".join(p for p in pieces if isinstance(p, bytes))
        return text, [p for p in pieces if not isinstance(p, bytes)]

    assert summary(whole) == summary(one_byte_chunks)
    assert summary(whole)[1][-1] == zstd.TornFrame(len(data) - 2, 2)


def test_frames_of_other_encoders_are_read() -> None:
    """Content size absent, raw and RLE blocks, a dictionary id of zero bytes."""
    compressor = zstandard.ZstdCompressor(write_checksum=True, write_content_size=False)
    head = compressor.compress(
        lines({"type": "session", **HEADER, "delegationDepth": 0})
    )
    body = compressor.compress(lines(*turn1()) + b"")
    streamed = zstandard.ZstdCompressor(write_checksum=True).compressobj()
    tail_frame = streamed.compress(lines(*turn2())) + streamed.flush()
    decoded = decode(head + body + tail_frame)
    assert decoded.events == turn1() + turn2()
