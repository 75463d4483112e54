"""Zstandard session logs: read frame by frame as a stream, write checksummed frames.

A compressed log is a concatenation of independent frames: one per durable write
in our layout (docs/persistence.md#zstandard), or whatever the ``zstd`` / ``pzstd``
tools wrote (one frame, or many plus skippable frames). The ``zstandard`` package's
decompressor object reads one frame at a time and hands back the bytes after it,
which is how frames are split here; it raises on a damaged frame and simply waits
for more input when the data ends inside one, which is how a torn write is told
from corruption.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, Final

import zstandard

if TYPE_CHECKING:
    from collections.abc import Generator, Iterable, Iterator

MAGIC: Final = b"\x28\xb5\x2f\xfd"
"""The frame magic number 0xFD2FB528, little-endian, as the file's first bytes."""

_SKIPPABLE_TAIL: Final = b"\x2a\x4d\x18"
"""Bytes 1-3 of a skippable frame's magic 0x184D2A5? (``pzstd`` writes them)."""

_FEED_BYTES: Final = 1 << 18
"""Compressed bytes read from a stream at a time."""

_DECODE_BYTES: Final = 1 << 7
"""Compressed bytes decoded in one call. A Zstandard block can expand about
32,768-fold (a run-length block: 4 bytes for 128 KiB), so one call's text is at
most about 4 MiB, whatever the input; smaller slices cost nothing measurable."""


class ZstdFrameError(ValueError):
    """A frame is damaged; ``str(error)`` is the spec's message."""


@dataclass(frozen=True)
class FrameEnd:
    """A complete frame ended: its ``[start, end)`` byte range in the file."""

    start: int
    end: int


@dataclass(frozen=True)
class TornFrame:
    """The data ends inside the frame starting at ``start``, ``size`` bytes in."""

    start: int
    size: int


Piece = bytes | FrameEnd | TornFrame
"""What :func:`decode_frames` yields: text, then the frame's end or its tear."""


def is_zstd(prefix: bytes) -> bool:
    """Whether data starting with ``prefix`` is Zstandard (a suffix is only a hint)."""
    return _is_magic(prefix[:4])


def _is_magic(head: bytes) -> bool:
    skippable = (
        len(head) == 4 and head[0] & 0xF0 == 0x50 and head[1:] == (_SKIPPABLE_TAIL)
    )
    return head == MAGIC or skippable


def compress_frame(data: bytes) -> bytes:
    """One frame holding ``data``, with the content checksum, at the default level."""
    return zstandard.ZstdCompressor(write_checksum=True).compress(data)


def write_frame(sink: BinaryIO, pieces: Iterable[bytes]) -> None:
    """Compress ``pieces`` into one checksummed frame on ``sink`` (nothing if empty).

    The frame is written as the pieces come, so the text is never held whole.
    """
    iterator = iter(pieces)
    first = next(iterator, None)
    if first is None:
        return
    compressor = zstandard.ZstdCompressor(write_checksum=True)
    with compressor.stream_writer(sink, closefd=False) as writer:
        writer.write(first)
        for piece in iterator:
            writer.write(piece)


def read_chunks(stream: BinaryIO, size: int = _FEED_BYTES) -> Iterator[bytes]:
    """The stream's bytes in chunks of at most ``size``."""
    while chunk := stream.read(size):
        yield chunk


def decode_frames(chunks: Iterable[bytes]) -> Iterator[Piece]:
    """The text of every frame in order, each followed by its :class:`FrameEnd`.

    When the data ends inside a frame, the text it yielded so far is followed by a
    :class:`TornFrame` and nothing else. Raises :class:`ZstdFrameError` when a frame
    does not start with a magic number or fails to decode (checksum included).
    """
    pending = _Feed(iter(chunks))
    while True:
        head = pending.take_at_least(4)
        if not head:
            return
        start = pending.offset
        if len(head) < 4:
            yield TornFrame(start, len(head))
            return
        if not _is_magic(head[:4]):
            msg = f"corrupt Zstandard session log: invalid frame magic at byte {start}"
            raise ZstdFrameError(msg)
        decoder = zstandard.ZstdDecompressor().decompressobj()
        data = head
        while True:
            end = yield from _decode_slices(decoder, data, start)
            if end is not None:
                pending.consumed(end, data[end:])
                yield FrameEnd(start, pending.offset)
                break
            pending.consumed(len(data), b"")
            data = pending.next_chunk()
            if not data:
                yield TornFrame(start, pending.offset - start)
                return


def _decode_slices(
    decoder: zstandard.ZstdDecompressionObj, data: bytes, start: int
) -> Generator[bytes, None, int | None]:
    """Feed ``data`` in slices of :data:`_DECODE_BYTES`, yielding the text of each.

    Returns where in ``data`` the frame ended, or None when it goes on. A slice
    decodes to at most a few MiB however the frame was made, so a small
    file that expands to gigabytes is never held whole.
    """
    view = memoryview(data)
    for offset in range(0, len(data), _DECODE_BYTES):
        piece = view[offset : offset + _DECODE_BYTES]
        try:
            text = decoder.decompress(piece)
        except zstandard.ZstdError:
            msg = (
                f"corrupt Zstandard session log: frame at byte {start} failed"
                " validation"
            )
            raise ZstdFrameError(msg) from None
        if text:
            yield text
        if decoder.eof:
            return offset + len(piece) - len(decoder.unused_data)
    return None


class _Feed:
    """Compressed input with the file offset of its first unconsumed byte."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks = chunks
        self.buffer = b""
        self.offset = 0

    def next_chunk(self) -> bytes:
        if self.buffer:
            data, self.buffer = self.buffer, b""
            return data
        return next(self.chunks, b"")

    def take_at_least(self, size: int) -> bytes:
        """Everything buffered, topped up to ``size`` bytes unless the input ends."""
        data = self.next_chunk()
        while len(data) < size:
            more = next(self.chunks, b"")
            if not more:
                break
            data += more
        return data

    def consumed(self, size: int, rest: bytes) -> None:
        """``size`` bytes were decoded; ``rest`` goes back to the front of the input."""
        self.offset += size
        self.buffer = rest
