"""The read rules every session log file shares, whoever wrote it, as a stream.

Our JSONL and the original harness's later logs are both a header line plus one record
per line, plain or Zstandard-compressed, and a crash can cut either short. One reader
keeps the two importers agreeing on what is a torn tail (dropped and reported) and what
is corruption (refused, naming the file line): docs/persistence.md#jsonl-format
and docs/repair.md#torn-tails.
Lines are read in chunks and handed on one at a time, and no line may grow past
:func:`max_line_bytes` while it is read, so a file of any size, plain or
compressed, is read in bounded memory (docs/persistence.md#line-length).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO, Final, NoReturn

from agentlog.domain.errors import (
    CorruptSessionLogError,
    LineTooLongError,
    LogImportError,
)
from agentlog.domain.header import (
    HEADER_NOT_JSON,
    check_format_version,
    check_header_shape,
)
from agentlog.domain.json import Envelope, js_number, loads
from agentlog.infrastructure.formats import zstd

if TYPE_CHECKING:
    from collections.abc import Sequence

EMPTY_LOG: Final = "empty or header-less session log"
EMPTY_ZSTD_LOG: Final = "empty or header-less Zstandard session log"
ZSTD_TORN_RECORD: Final = (
    "corrupt Zstandard session log: complete frame contains a torn JSONL record"
)
_CHUNK_BYTES: Final = 1 << 20
MAX_LINE_ENV: Final = "AGENTLOG_MAX_LINE_BYTES"
DEFAULT_MAX_LINE_BYTES: Final = 64 << 20
"""The longest line an import reads (64 MiB) unless ``AGENTLOG_MAX_LINE_BYTES`` says."""


def max_line_bytes(env: dict[str, str] | None = None) -> int:
    """The line limit from ``AGENTLOG_MAX_LINE_BYTES`` (a positive whole number)."""
    text = (os.environ if env is None else env).get(MAX_LINE_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_LINE_BYTES
    if not text.isascii() or not text.isdigit() or int(text) < 1:
        msg = f"{MAX_LINE_ENV} must be a positive whole number of bytes"
        raise LogImportError(msg)
    return int(text)


@dataclass(frozen=True)
class DecodedLog:
    """A decoded log: the header (without ``type``), the events, and what was off.

    ``report`` lists, in plain words, everything the reader dropped or could not map
    exactly (a torn tail, a torn Zstandard frame, unmapped fields); empty when the
    file was read exactly.
    """

    header: dict[str, Any]
    events: list[Envelope]
    report: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    """The file line of each event (packed rows give several events one line)."""


@dataclass(frozen=True)
class Line:
    """One complete line of a log file, without its newline; ``number`` from 1."""

    number: int
    text: bytes


RowDecoder = Callable[[Any, int], list[Any]]
"""Turns one parsed line into the events it stores, given the next expected seq.

Raises :class:`MalformedRowError` when the line parses but cannot be a record; the
scanner treats that line like an unparsable one.
"""


class MalformedRowError(ValueError):
    """A line is JSON but not a record this reader understands."""


def corrupt(message: str, source: str, seq: int | None = None) -> NoReturn:
    """Raise the corrupt-log error (a function, so callers read as one line)."""
    raise CorruptSessionLogError(message, session_id=source, seq=seq)


class LogLines:
    """The complete lines of a plain or Zstandard log (magic bytes decide), in order.

    A final line without a newline is a torn write and is left out. Iterate once.
    After the iteration, :attr:`report` says what was dropped, and
    :attr:`complete_through` how many lines lie inside complete Zstandard frames
    (where no defect is tolerated). ``on_bytes`` is told how many bytes were read.
    """

    def __init__(
        self,
        stream: BinaryIO,
        *,
        source: str,
        on_bytes: Callable[[int], None] | None = None,
        max_line: int | None = None,
    ) -> None:
        self.stream = stream
        self.source = source
        self.on_bytes = on_bytes
        self.max_line = max_line_bytes() if max_line is None else max_line
        self.report: list[str] = []
        self.complete_through = 0
        self.compressed = False

    def _chunks(self, first: bytes) -> Iterator[bytes]:
        chunk = first
        while chunk:
            if self.on_bytes is not None:
                self.on_bytes(len(chunk))
            yield chunk
            chunk = self.stream.read(_CHUNK_BYTES)

    def __iter__(self) -> Iterator[Line]:
        first = self.stream.read(_CHUNK_BYTES)
        if zstd.is_zstd(first):
            self.compressed = True
            return self._zstd_lines(self._chunks(first))
        return self._plain_lines(self._chunks(first))

    def _plain_lines(self, chunks: Iterator[bytes]) -> Iterator[Line]:
        splitter = LineSplitter(self.source, self.max_line)
        for chunk in chunks:
            yield from splitter.feed(chunk)
        number, partial = splitter.number, splitter.partial
        if number == 0:
            _refuse_headerless(partial, self.source, EMPTY_LOG)
        if partial:
            self.report.append(
                f"ignored a torn final line without a newline ({len(partial)} bytes)"
            )

    @property
    def empty_message(self) -> str:
        """The spec's words for a file without a header, by encoding."""
        return EMPTY_ZSTD_LOG if self.compressed else EMPTY_LOG

    def _zstd_lines(self, chunks: Iterator[bytes]) -> Iterator[Line]:
        splitter = LineSplitter(self.source, self.max_line)
        frames = 0
        partial_at_frame_end = b""
        torn: zstd.TornFrame | None = None
        try:
            for piece in zstd.decode_frames(chunks):
                if isinstance(piece, zstd.FrameEnd):
                    frames += 1
                    self.complete_through = splitter.number
                    partial_at_frame_end = splitter.partial
                elif isinstance(piece, zstd.TornFrame):
                    torn = piece
                else:
                    yield from splitter.feed(piece)
        except zstd.ZstdFrameError as error:
            corrupt(str(error), self.source)
        if not frames:
            corrupt(EMPTY_ZSTD_LOG, self.source)
        if partial_at_frame_end:
            corrupt(ZSTD_TORN_RECORD, self.source)
        if torn is not None:
            recovered = splitter.number - self.complete_through
            self.report.append(
                f"torn final Zstandard frame at byte {torn.start} ({torn.size}"
                f" bytes): recovered {recovered} complete line(s) from it"
            )


class LineSplitter:
    """Complete lines out of pieces of text, none longer than ``limit`` bytes.

    The refusal comes as soon as the unfinished line passes the limit, so at most
    ``limit`` bytes of one line are ever held, however long the line in the file.
    """

    def __init__(self, source: str, limit: int) -> None:
        self.source = source
        self.limit = limit
        self.number = 0
        """How many complete lines were handed on."""
        self._partial = bytearray()

    @property
    def partial(self) -> bytes:
        """The unfinished last line so far (empty after a newline)."""
        return bytes(self._partial)

    def feed(self, piece: bytes) -> Iterator[Line]:
        view = memoryview(piece)
        start = 0
        while (end := piece.find(b"\n", start)) != -1:
            self._check(len(self._partial) + end - start)
            if self._partial:
                self._partial += view[start:end]
                text = bytes(self._partial)
                self._partial = bytearray()
            else:
                text = piece[start:end]
            self.number += 1
            yield Line(self.number, text)
            start = end + 1
        self._check(len(self._partial) + len(piece) - start)
        self._partial += view[start:]

    def _check(self, size: int) -> None:
        if size > self.limit:
            line = self.number + 1
            msg = (
                f"{self.source}: line {line} is longer than {self.limit:,} bytes"
                f" ({MAX_LINE_ENV}); refused"
            )
            raise LineTooLongError(msg, line=line, limit=self.limit)


def _refuse_headerless(fragment: bytes, source: str, empty: str) -> NoReturn:
    """A file without one complete line: name what is wrong with its first line."""
    if fragment.strip():
        parse_header(fragment, source=source)
    corrupt(empty, source)


class _NegativeZero(int):
    """The integer JSON text ``-0``, which JavaScript reads as -0, not 0."""


def _probe_int(text: str) -> int:
    return _NegativeZero(0) if text == "-0" else int(text)


def _depth_is_negative_zero(line: bytes) -> bool:
    try:
        probe = json.loads(line, parse_int=_probe_int)
    except (ValueError, RecursionError):
        return False
    depth = probe.get("delegationDepth") if isinstance(probe, dict) else None
    return isinstance(depth, _NegativeZero)


def parse_header(
    line: bytes,
    *,
    source: str,
    require_version: bool = True,
    require_depth: bool = False,
) -> dict[str, Any]:
    """Check the header line's shape, then its version; return it without ``type``.

    The shape rules are :func:`~agentlog.domain.header.check_header_shape`'s, plus
    the one only the text shows: ``delegationDepth`` must not be ``-0``. Shape
    errors are corruption; a version other than 0 is
    :class:`~agentlog.domain.errors.UnsupportedSessionFormatError`. A header without
    a version (allowed by ``require_version=False``) is taken as version 0.
    """
    if not line.strip():
        corrupt(EMPTY_LOG, source)
    try:
        value = loads(line)
    except (ValueError, RecursionError):
        corrupt(HEADER_NOT_JSON, source)
    header = check_header_shape(
        value,
        source=source,
        require_version=require_version,
        require_depth=require_depth,
    )
    if header.get("delegationDepth") == 0 and _depth_is_negative_zero(line):
        check_header_shape({}, source=source)
    if "version" in header:
        check_format_version(str(header["id"]), header)
    return header


_UNPARSABLE: Final = object()
_MISSING: Final = object()


def _render(value: object) -> str:
    """A value in an error message, as JavaScript's template literal shows it."""
    if value is _MISSING:
        return "undefined"
    if type(value) is float:
        return repr(value)  # "3.0", so a float seq is not mistaken for the int
    return js_number(value)


def _parse(text: bytes) -> object:
    try:
        return loads(text)
    except (ValueError, RecursionError):
        return _UNPARSABLE


def _is_turn_end(value: object) -> bool:
    return isinstance(value, dict) and value.get("type") == "turn/end"


def scan_events(
    lines: Iterator[Line],
    *,
    log: LogLines,
    session_id: str,
    decode_row: RowDecoder,
    report: list[str],
) -> Iterator[tuple[Line, Envelope]]:
    """Decode the event lines (header excluded) under the torn-tail rule.

    See docs/repair.md#torn-tails.

    Yields ``(line, event)``. The first unparsable line, or the first event
    whose ``seq`` is not the next one, is a defect. When a parseable ``turn/end``
    is at or after it (or it lies inside a complete Zstandard frame) it is
    corruption and raises, naming the file line; otherwise the defect and every line
    following form a torn tail, dropped and written to ``report``. Finding that out
    reads the rest of the file, so a refusal may come after events were yielded:
    consumers store nothing until the scan has finished. Event lines are not
    shape-validated here: the application validates what it imports.
    """
    expected = 0
    for line in lines:
        value = _parse(line.text)
        defect = _unparsable(line.number) if value is _UNPARSABLE else None
        rows: list[Any] = []
        if defect is None:
            try:
                rows = decode_row(value, expected)
            except MalformedRowError as error:
                defect = f"{_unparsable(line.number)} ({error})"
        if defect is None:
            defect = _seq_defect(rows, expected, line.number)
        if defect is None:
            for row in rows:
                yield line, row
            expected += len(rows)
            continue
        dropped = 1
        turn_end_follows = _is_turn_end(value)
        for rest in lines:
            dropped += 1
            turn_end_follows = turn_end_follows or _is_turn_end(_parse(rest.text))
        if turn_end_follows:
            corrupt(defect, session_id, expected)
        if line.number <= log.complete_through:
            corrupt(ZSTD_TORN_RECORD, session_id, expected)
        reason = defect.removeprefix("corrupt session log: ")
        report.append(
            f"dropped a torn tail after the last turn/end: {dropped} line(s) from"
            f" line {line.number} on ({reason})"
        )
        return


def _unparsable(line_no: int) -> str:
    return f"corrupt session log: unparsable committed event at line {line_no}"


def _seq_defect(rows: Sequence[Any], expected: int, line_no: int) -> str | None:
    for offset, event in enumerate(rows):
        seq = event.get("seq", _MISSING) if isinstance(event, dict) else _MISSING
        if type(seq) is not int or seq != expected + offset:
            return (
                f"corrupt session log: seq gap in committed region at line {line_no}"
                f" (expected {expected + offset}, got {_render(seq)})"
            )
    return None
