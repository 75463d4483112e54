"""Zstandard frames of a session log: find them, write them, read them back.

A compressed log is a concatenation of independent frames, one per durable write
(docs/persistence.md#jsonl-format). Finding where each frame ends must not decode it, so
a write cut short is told apart from a damaged file: EOF inside the last frame is a torn
write, while a bad magic number, a reserved bit or a reserved block type is corruption.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import zstandard

MAGIC: Final = b"\x28\xb5\x2f\xfd"
"""The frame magic number 0xFD2FB528, little-endian, as the file's first bytes."""

_RESERVED_DESCRIPTOR_BITS: Final = 0x18
_RESERVED_BLOCK_TYPE: Final = 3
_RLE_BLOCK_TYPE: Final = 1
_CHECKSUM_BYTES: Final = 4
_FEED_BYTES: Final = 1024


class ZstdFrameError(ValueError):
    """The frame structure is invalid; ``str(error)`` is the spec's message."""


@dataclass(frozen=True)
class FrameScan:
    """The ``[start, end)`` byte ranges of complete frames; where a torn one starts."""

    frames: list[tuple[int, int]]
    torn_start: int | None = None


def is_zstd(data: bytes) -> bool:
    """Whether ``data`` starts like a Zstandard frame (the suffix is only a hint)."""
    return data[:4] == MAGIC


def scan_frames(data: bytes, *, limit: int | None = None) -> FrameScan:
    """Locate complete frames without decoding their blocks (RFC 8878 §3.1.1).

    Stops after ``limit`` complete frames when given. Raises :class:`ZstdFrameError`
    for invalid structure; EOF anywhere inside a frame makes it the torn frame.
    """
    frames: list[tuple[int, int]] = []
    offset = 0
    size = len(data)
    while offset < size and (limit is None or len(frames) < limit):
        start = offset
        end = _frame_end(data, start)
        if end is None:
            return FrameScan(frames, torn_start=start)
        frames.append((start, end))
        offset = end
    return FrameScan(frames)


def _frame_end(data: bytes, start: int) -> int | None:
    """Where the frame at ``start`` ends, or None when the data ends inside it."""
    size = len(data)
    if size - start < len(MAGIC):
        return None
    if data[start : start + 4] != MAGIC:
        msg = f"corrupt Zstandard session log: invalid frame magic at byte {start}"
        raise ZstdFrameError(msg)
    offset = start + 4
    if offset >= size:
        return None
    descriptor = data[offset]
    if descriptor & _RESERVED_DESCRIPTOR_BITS:
        msg = (
            f"corrupt Zstandard session log: reserved frame-header bit at byte {offset}"
        )
        raise ZstdFrameError(msg)
    offset += 1
    content_size_flag = descriptor >> 6
    single_segment = bool(descriptor & 0x20)
    has_checksum = bool(descriptor & 0x04)
    dictionary_flag = descriptor & 0x03
    dictionary_bytes = 4 if dictionary_flag == 3 else dictionary_flag
    if content_size_flag == 0:
        content_size_bytes = 1 if single_segment else 0
    else:
        content_size_bytes = 1 << content_size_flag
    offset += (0 if single_segment else 1) + dictionary_bytes + content_size_bytes
    if offset > size:
        return None
    while True:
        if size - offset < 3:
            return None
        block_header = int.from_bytes(data[offset : offset + 3], "little")
        block_type = (block_header >> 1) & 0x03
        if block_type == _RESERVED_BLOCK_TYPE:
            msg = f"corrupt Zstandard session log: reserved block type at byte {offset}"
            raise ZstdFrameError(msg)
        offset += 3
        offset += 1 if block_type == _RLE_BLOCK_TYPE else block_header >> 3
        if offset > size:
            return None
        if block_header & 1:  # the last block
            break
    if has_checksum:
        offset += _CHECKSUM_BYTES
        if offset > size:
            return None
    return offset


def compress_frame(data: bytes) -> bytes:
    """One frame holding ``data``, with the content checksum, at the default level."""
    return zstandard.ZstdCompressor(write_checksum=True).compress(data)


def decompress_frame(frame: bytes) -> bytes:
    """The content of one complete frame; raises ``zstandard.ZstdError`` if invalid.

    Decoding verifies the checksum when the frame has one, and a frame that decodes
    but does not finish is invalid too.
    """
    decoder = zstandard.ZstdDecompressor().decompressobj()
    content = decoder.decompress(frame)
    if not decoder.eof:
        msg = "frame ended early"
        raise zstandard.ZstdError(msg)
    return content


def decompress_prefix(partial: bytes) -> bytes:
    """Whatever a torn frame yields before its end or its first error (never raises).

    The input is fed in small pieces so that an error near the end loses only the
    output of the last piece.
    """
    decoder = zstandard.ZstdDecompressor().decompressobj()
    parts: list[bytes] = []
    for index in range(0, len(partial), _FEED_BYTES):
        try:
            parts.append(decoder.decompress(partial[index : index + _FEED_BYTES]))
        except zstandard.ZstdError:
            break
        if decoder.eof:
            break
    return b"".join(parts)


def decompress_tolerant(data: bytes) -> bytes:
    """The text of every frame that decodes, in order, stopping at the first bad one."""
    try:
        scan = scan_frames(data)
    except ZstdFrameError:
        return decompress_prefix(data)
    parts: list[bytes] = []
    for start, end in scan.frames:
        try:
            parts.append(decompress_frame(data[start:end]))
        except zstandard.ZstdError:
            return b"".join(parts)
    if scan.torn_start is not None:
        parts.append(decompress_prefix(data[scan.torn_start :]))
    return b"".join(parts)
